"""API tokens: created (the key is returned once), rotated and revoked.

The key itself is never stored: ``ApiToken`` keeps its SHA-256 and a short prefix
(``judgments/models/tokens.py`` says why one SHA-256 is enough for a random key).
"""

from __future__ import annotations

import secrets
import string
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit.services import record

from ..models import ApiToken, Collection, Membership, TokenScope, hash_key
from .errors import InvariantError

PREFIX_ALPHABET = string.ascii_lowercase + string.digits
NAME_MAX = 100


@dataclass(frozen=True)
class IssuedToken:
    """A token just made, with its key: the only moment the key exists outside the client."""

    token: ApiToken
    key: str

    def __repr__(self) -> str:  # never print the key by accident (logs, tracebacks)
        return f"IssuedToken(token={self.token!r}, key='{self.token.prefix}…')"


def new_key() -> tuple[str, str]:
    """A fresh ``(key, prefix)``: ``vt_`` + 8 identifying characters + ``_`` + 256 bits."""
    prefix = "vt_" + "".join(secrets.choice(PREFIX_ALPHABET) for _ in range(8))
    return f"{prefix}_{secrets.token_urlsafe(32)}", prefix


def token_lifetime(days: int | None) -> timedelta:
    """``days`` (default ``VERITY_TOKEN_DAYS``), refused beyond ``VERITY_TOKEN_MAX_DAYS``."""
    maximum = settings.VERITY_TOKEN_MAX_DAYS
    if days is None:
        days = settings.VERITY_TOKEN_DAYS
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= maximum:
        raise InvariantError(
            f"a token's lifetime is 1 to {maximum} days (VERITY_TOKEN_MAX_DAYS); got {days!r}"
        )
    return timedelta(days=days)


def _audit(action: str, token: ApiToken, *, by: Any, request: Any, **detail: Any) -> None:
    """One audit row naming the token by its name and prefix (never its key)."""
    record(
        action,
        actor=by,
        collection=token.collection,
        target=f"{token.name} ({token.prefix}…) of {token.user.get_username()}",
        detail={"scope": token.scope, "expires_at": token.expires_at.isoformat(), **detail},
        request=request,
    )


def create_api_token(
    *,
    user: Any,
    name: str = "api",
    scope: str = TokenScope.ADMIN,
    collection: Collection | None = None,
    days: int | None = None,
    by: Any = None,
    request: Any = None,
) -> IssuedToken:
    """Make a token for ``user``; return it with its key, which is not kept anywhere.

    ``scope`` defaults to ``admin``: everything the user's roles allow, which is what every
    token meant before scopes (the tokens page and the command default to ``read``). The
    token never grants more than the user's roles at the time of each request. The audit
    log gets one ``token.create`` row by ``by`` (None: the command line).
    """
    with transaction.atomic():
        issued = _create(user=user, name=name, scope=scope, collection=collection, days=days)
        _audit("token.create", issued.token, by=by, request=request)
    return issued


def _create(
    *, user: Any, name: str, scope: str, collection: Collection | None, days: int | None
) -> IssuedToken:
    name = (name or "").strip()
    if not name or len(name) > NAME_MAX:
        raise InvariantError(f"a token needs a name of 1 to {NAME_MAX} characters")
    if scope not in TokenScope.values:
        raise InvariantError(f"unknown scope {scope!r}: use one of {', '.join(TokenScope.values)}")
    if not user.is_active:
        raise InvariantError(f"user '{user.get_username()}' is deactivated")
    if (
        collection is not None
        and not user.is_superuser
        and not Membership.objects.filter(collection=collection, user=user).exists()
    ):
        raise InvariantError(
            f"'{user.get_username()}' is not a member of collection '{collection.slug}': a "
            "token limited to it would open nothing"
        )
    lifetime = token_lifetime(days)
    key, prefix = new_key()
    now = timezone.now()
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=prefix,
        key_hash=hash_key(key),
        scope=scope,
        collection=collection,
        created_at=now,
        expires_at=now + lifetime,
    )
    return IssuedToken(token=token, key=key)


def rotate_api_token(
    *, token: ApiToken, days: int | None = None, by: Any = None, request: Any = None
) -> IssuedToken:
    """Revoke ``token`` and make its replacement (same name, scope and collection) in one
    transaction, so a script never holds two valid keys by accident. One ``token.rotate``
    audit row names the new prefix (``detail.replaced`` the old one)."""
    with transaction.atomic():
        revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if not revoked:
            raise InvariantError(f"token '{token.name}' ({token.prefix}…) is revoked already")
        issued = _create(
            user=token.user,
            name=token.name,
            scope=token.scope,
            collection=token.collection,
            days=days,
        )
        _audit("token.rotate", issued.token, by=by, request=request, replaced=token.prefix)
    return issued


def revoke_api_token(*, token: ApiToken, by: Any = None, request: Any = None) -> bool:
    """Revoke ``token``: requests with it get 401 "revoked" from now on. The row stays (so
    the answer can say why); returns whether it was live until now. Revoking a token
    revoked already changes nothing and records nothing."""
    with transaction.atomic():
        revoked = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
            revoked_at=timezone.now()
        )
        if revoked:
            _audit("token.revoke", token, by=by, request=request)
    return bool(revoked)


def revoke_api_tokens_of(*, user: Any, by: Any = None) -> int:
    """Revoke every live token of ``user``; returns how many (one audit row each)."""
    with transaction.atomic():
        live = ApiToken.objects.filter(user=user, revoked_at__isnull=True)
        return sum(
            revoke_api_token(token=token, by=by)
            for token in live.select_related("user", "collection")
        )
