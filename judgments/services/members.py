"""Who may do what in a collection: members' roles, keeping an admin."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from ..locks import lock_collection
from ..models import Collection, Membership, Role
from .errors import InvariantError


@transaction.atomic
def set_membership(*, collection: Collection, user: Any, role: str | None) -> Membership | None:
    """Give ``user`` exactly ``role`` in the collection, or remove them with ``None``."""
    if role is None:
        Membership.objects.filter(collection=collection, user=user).delete()
        return None
    if role not in Role.values:
        raise InvariantError(f"role {role!r} must be one of {', '.join(Role.values)}")
    membership, _ = Membership.objects.update_or_create(
        collection=collection, user=user, defaults={"role": role}
    )
    return membership


@transaction.atomic
def set_member_role(*, collection: Collection, user: Any, role: str | None) -> Membership | None:
    """``set_membership``, keeping at least one admin member in a collection that has one.

    Demoting or removing the last admin is refused: nobody but a superuser could manage
    the members afterwards.
    """
    collection = lock_collection(collection.pk)  # one member change at a time
    current = Membership.objects.filter(collection=collection, user=user).first()
    if (
        current is not None
        and current.role == Role.ADMIN
        and role != Role.ADMIN
        and not Membership.objects.filter(collection=collection, role=Role.ADMIN)
        .exclude(pk=current.pk)
        .exists()
    ):
        raise InvariantError(
            f"{user.get_username()} is the last admin of '{collection.slug}'; make another "
            "member admin first"
        )
    return set_membership(collection=collection, user=user, role=role)


def set_adjudicator(*, collection: Collection, user: Any, allowed: bool) -> Membership:
    """Grant (or withdraw) a member the adjudicator capability: deciding the pairs whose
    assessors disagree. Admins have it by their role; a non-member is refused."""
    updated = Membership.objects.filter(collection=collection, user=user).update(
        can_adjudicate=allowed
    )
    if updated != 1:
        raise InvariantError(
            f"{user.get_username()} is not a member of '{collection.slug}'; add them first"
        )
    return Membership.objects.get(collection=collection, user=user)


@transaction.atomic
def set_member_access(
    *, collection: Collection, user: Any, role: str, can_adjudicate: bool | None = None
) -> Membership:
    """A member's role (``set_member_role``, keeping an admin) and, unless ``None``, their
    adjudicator capability (``set_adjudicator``), together or not at all."""
    membership = set_member_role(collection=collection, user=user, role=role)
    assert membership is not None
    if can_adjudicate is not None:
        membership = set_adjudicator(collection=collection, user=user, allowed=can_adjudicate)
    return membership
