"""How API clients say who they are: a token for scripts, the session for the browser.

``Authorization: Token <key>`` and ``Authorization: Bearer <key>`` are the same key; keys
are made and revoked on /accounts/tokens/, with ``manage.py api_token`` or (revoked)
with ``DELETE /api/tokens/<id>/``. Only the key's SHA-256 is stored
(``judgments/models/tokens.py``): a request costs one indexed lookup, joined to the user
and the collection the token is limited to, and at most once a minute a write of when
and from where it was last used.

A token says who (its user) and how far (its scope, its collection); the user's roles
in each collection are checked on top, as for a session (``permissions.py``). Refusals
name the reason: 401 for an unknown, revoked or expired key or a deactivated user, 403
for a request beyond the token's scope or outside its collection.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from axes.backends import AxesStandaloneBackend
from django.http import HttpRequest
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.permissions import SAFE_METHODS

from audit.services import client_address
from judgments.models import ApiToken, TokenScope, hash_key, scope_allows

LAST_USED_EVERY = timedelta(minutes=1)
HOW_TO_GET_ONE = (
    "create a new one on /accounts/tokens/ or with "
    "'manage.py api_token create USERNAME --name NAME --scope SCOPE'"
)


class TokenOrBearerAuthentication(BaseAuthentication):
    """A hashed, scoped, expiring API token, sent as ``Token <key>`` or ``Bearer <key>``."""

    keywords = ("token", "bearer")

    def authenticate_header(self, request: Any) -> str:
        return "Token"

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
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
                f"Invalid token: a key is ASCII ('vt_…'); {HOW_TO_GET_ONE}."
            ) from None
        # Imported here: DRF resolves its authentication classes when any APIView loads,
        # as the error handlers do at every start-up (bench/startup_bench.py).
        from judgments.selectors import api_token_by_hash

        token = api_token_by_hash(hash_key(key))
        if token is None:
            raise exceptions.AuthenticationFailed(
                f"Invalid token: no such key (mistyped, or revoked and deleted); {HOW_TO_GET_ONE}."
            )
        label = f"Token '{token.name}' ({token.prefix}…)"
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed(
                f"{label} was revoked on {token.revoked_at:%Y-%m-%d %H:%M} UTC; {HOW_TO_GET_ONE}."
            )
        now = timezone.now()
        if token.expires_at <= now:
            raise exceptions.AuthenticationFailed(
                f"{label} expired on {token.expires_at:%Y-%m-%d %H:%M} UTC; {HOW_TO_GET_ONE}."
            )
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(
                f"{label} belongs to a deactivated user; ask an administrator."
            )
        view = (getattr(request, "parser_context", None) or {}).get("view")
        if view is not None:
            check_scope(token, request, view, label)
            check_collection(token, request, view, label)
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
            ip = client_ip(request)
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now, last_used_ip=ip)
            token.last_used_at, token.last_used_ip = now, ip
        return token.user, token


def scope_needed(request: Any, view: Any) -> str:
    """The scope a request needs: the view's ``token_scopes`` (action or method → scope),
    else ``read`` for GET, HEAD and OPTIONS and ``admin`` for any other method."""
    declared = getattr(view, "token_scopes", {})
    for key in (getattr(view, "action", None), request.method):
        if key is not None and key in declared:
            return declared[key]
    return TokenScope.READ if request.method in SAFE_METHODS else TokenScope.ADMIN


def check_scope(token: ApiToken, request: Any, view: Any, label: str) -> None:
    needed = scope_needed(request, view)
    if not scope_allows(token.scope, needed):
        raise exceptions.PermissionDenied(
            f"{label} has the '{token.scope}' scope; {request.method} {request.path} needs "
            f"'{needed}'. Use a token with that scope (your roles still apply)."
        )


def check_collection(token: ApiToken, request: Any, view: Any, label: str) -> None:
    """A token limited to a collection works under /api/collections/<its slug>/ only, and
    on the few views that narrow their answers to it (``token_collection_aware``)."""
    if token.collection_id is None:
        return
    slug = getattr(view, "kwargs", {}).get("slug")
    limited_to = token.collection.slug
    if slug is None and getattr(view, "token_collection_aware", False):
        return
    if slug != limited_to:
        where = f"collection '{slug}'" if slug is not None else request.path
        raise exceptions.PermissionDenied(
            f"{label} is limited to collection '{limited_to}'; it cannot be used for {where}."
        )


def token_collection_id(request: Any) -> int | None:
    """The collection the request's token is limited to, if any (a session: none)."""
    return getattr(getattr(request, "auth", None), "collection_id", None)


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
    """The client's address for login lock-outs (django-axes): ``audit.services.
    client_address``, which honours ``VERITY_TRUSTED_PROXIES``."""
    return client_address(request)
