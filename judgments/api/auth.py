"""How API clients say who they are: a token for scripts, the session for the browser.

``Authorization: Token <key>`` and ``Authorization: Bearer <key>`` are the same key; keys
are made and revoked on /accounts/tokens/ or with ``manage.py api_token``.
"""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpRequest
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header


class TokenOrBearerAuthentication(TokenAuthentication):
    """DRF's token authentication, accepting ``Bearer`` as well as ``Token``."""

    keywords = ("token", "bearer")

    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        auth = get_authorization_header(request).split()
        if not auth or auth[0].lower().decode("latin-1") not in self.keywords:
            return None
        if len(auth) != 2:
            raise exceptions.AuthenticationFailed(
                "Invalid Authorization header: send 'Authorization: Token <key>' (or Bearer), "
                "one key with no spaces."
            )
        try:
            key = auth[1].decode("ascii")
        except UnicodeError:
            raise exceptions.AuthenticationFailed(
                "Invalid token: a key is 40 hexadecimal characters."
            ) from None
        try:
            return self.authenticate_credentials(key)
        except exceptions.AuthenticationFailed:
            raise exceptions.AuthenticationFailed(
                "Invalid or revoked token: create a new one on /accounts/tokens/ or with "
                "'manage.py api_token create USERNAME'."
            ) from None


class TokenOrBearerScheme(OpenApiAuthenticationExtension):
    """Two security schemes, either of which will do."""

    target_class = TokenOrBearerAuthentication
    name = ["tokenAuth", "bearerAuth"]

    def get_security_definition(self, auto_schema: Any) -> list[dict[str, str]]:
        return [
            {
                "type": "apiKey",
                "in": "header",
                "name": "Authorization",
                "description": 'Send "Authorization: Token <key>".',
            },
            {"type": "http", "scheme": "bearer", "description": "The same key, as Bearer."},
        ]

    def get_security_requirement(self, auto_schema: Any) -> list[dict[str, list[Any]]]:
        return [{"tokenAuth": []}, {"bearerAuth": []}]


class LoginLockoutBackend(AxesStandaloneBackend):
    """django-axes' lock-out check for every login that arrives with a request.

    Every login over HTTP passes its request (the login page, the admin). A call of
    ``authenticate()`` without one (the shell, a command, a test's ``Client.login``) has
    no client address to lock out; django-axes would raise there, so this backend steps
    aside and the password check decides alone.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def client_ip(request: HttpRequest) -> str | None:
    """The client's address for login lock-outs (django-axes).

    ``REMOTE_ADDR``, unless ``VERITY_TRUSTED_PROXIES`` = N > 0 reverse proxies stand in
    front: then the Nth address from the right of ``X-Forwarded-For``, the one the
    outermost trusted proxy saw. Addresses further left are the client's to forge.
    """
    hops = getattr(settings, "VERITY_TRUSTED_PROXIES", 0)
    if hops > 0:
        forwarded = [
            a.strip() for a in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if a.strip()
        ]
        if len(forwarded) >= hops:
            return forwarded[-hops]
    return request.META.get("REMOTE_ADDR")
