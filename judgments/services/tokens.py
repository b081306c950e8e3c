"""API tokens: one per user, created, rotated and revoked."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from .errors import InvariantError


def create_api_token(*, user: Any, rotate: bool = False) -> Any:
    """Give ``user`` an API token (``rest_framework.authtoken``: one per user); return it.

    A user who has one already is refused unless ``rotate``, which revokes the old key in
    the same transaction, so scripts never hold two valid keys by accident.
    """
    from rest_framework.authtoken.models import Token

    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        existing = Token.objects.filter(user=user).first()
        if existing is not None:
            if not rotate:
                raise InvariantError(
                    f"{user.get_username()} has an API token already (created "
                    f"{existing.created:%Y-%m-%d %H:%M} UTC); revoke it first, or rotate it"
                )
            existing.delete()
        return Token.objects.create(user=user)


def revoke_api_token(*, user: Any) -> bool:
    """Delete ``user``'s API token; scripts using it get 401 from now on. Returns whether
    there was one."""
    from rest_framework.authtoken.models import Token

    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)
