"""Password reset only where a mail can leave the server.

Django's reset page says "We've emailed you instructions" whatever happens to the mail.
Without mail settings (no ``EMAIL_HOST`` for SMTP; a console, file or dummy backend
outside DEBUG) nobody would ever get one: the reset pages then say so and name who can
help, and send nothing.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

#: Backends that deliver nothing to anyone: fine while developing (DEBUG), not otherwise.
NOWHERE = (
    "django.core.mail.backends.console.EmailBackend",
    "django.core.mail.backends.filebased.EmailBackend",
    "django.core.mail.backends.dummy.EmailBackend",
)


def mail_can_be_sent() -> bool:
    """Whether a password-reset mail could reach its reader."""
    backend = settings.EMAIL_BACKEND
    if backend == "django.core.mail.backends.smtp.EmailBackend":
        return bool(settings.EMAIL_HOST)
    if backend in NOWHERE:
        return bool(settings.DEBUG)
    return True  # another backend (an API-based one, or the tests' outbox)


def _unavailable(request: HttpRequest) -> HttpResponse:
    return render(request, "registration/password_reset_unavailable.html", status=503)


def password_reset(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    if not mail_can_be_sent():
        return _unavailable(request)
    return auth_views.PasswordResetView.as_view()(request, *args, **kwargs)


def password_reset_done(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    if not mail_can_be_sent():
        return _unavailable(request)
    return auth_views.PasswordResetDoneView.as_view()(request, *args, **kwargs)
