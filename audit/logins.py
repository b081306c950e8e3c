"""Local password logins into the audit log: ``login`` and ``login.failed``.

Django's own auth signals are the one place every password login passes through (the
login page, the admin's login, any ``authenticate()`` of a request), so this listens to
them instead of wrapping each view. Only logins over HTTP are recorded: the test
client's ``force_login`` and a shell's ``authenticate()`` build no real request (no
method) and check no password a person typed.

A failed try is one row whatever refused it (a wrong password, an unknown username, a
django-axes lock-out): ``authenticate()`` sends ``user_login_failed`` once per call. Its
target is the username tried; the password is never read (Django has already replaced
it with stars in ``credentials``). Single sign-on records its own logins (the OIDC
callback), so a login through another backend is left to it here.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.db import transaction

from .services import record

#: The backends that check a local password: a login through any other is not theirs.
PASSWORD_BACKENDS = frozenset({"django.contrib.auth.backends.ModelBackend"})
USERNAME_MAX = 150


def _over_http(request: Any) -> bool:
    return request is not None and getattr(request, "method", None) is not None


def _backend(request: Any, user: Any) -> str | None:
    """The backend that let the user in: ``login()`` has just written it to the session."""
    session = getattr(request, "session", None)
    found = session.get(BACKEND_SESSION_KEY) if session is not None else None
    return found or getattr(user, "backend", None)


def record_login(sender: Any, request: Any = None, user: Any = None, **kwargs: Any) -> None:
    if not _over_http(request) or _backend(request, user) not in PASSWORD_BACKENDS:
        return
    with transaction.atomic():
        record("login", actor=user, target=user.get_username(), request=request)


def record_login_failed(
    sender: Any, credentials: dict[str, Any] | None = None, request: Any = None, **kwargs: Any
) -> None:
    credentials = credentials or {}
    if not _over_http(request) or "username" not in credentials:
        return  # not a password try (single sign-on's callback passes no username)
    tried = str(credentials.get("username") or "")[:USERNAME_MAX]
    with transaction.atomic():
        record("login.failed", actor=None, target=tried, request=request)


def connect() -> None:
    user_logged_in.connect(record_login, dispatch_uid="audit.login")
    user_login_failed.connect(record_login_failed, dispatch_uid="audit.login_failed")
