"""The one way a single sign-on is refused: a reason code, a sentence, an HTTP status."""

from __future__ import annotations


class SignInRefused(Exception):
    """A sign-in through the identity provider that Verity refuses.

    ``reason`` is a short code (kept in the audit log), ``message`` the sentence the page
    shows: what went wrong and what to do. Not a ``PermissionDenied``: raised from the
    authentication backend, it passes through ``django.contrib.auth.authenticate`` to
    the callback view, which renders it, instead of being swallowed as "no user".
    """

    def __init__(self, reason: str, message: str, *, status: int = 403, username: str = ""):
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.status = status
        self.username = username
