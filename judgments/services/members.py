"""Who may do what in a collection: members' roles, keeping an admin.

Every change of a membership is recorded in the audit log, inside its transaction, once:
``member.add``, ``member.role``, ``member.adjudicate`` or ``member.remove``, with the
member's ``{"role", "can_adjudicate"}`` before and after. Pages, the API, the Django
admin and commands all come through here, so each change has exactly one row whichever
door it came in by. ``actor`` is who made the change (``None``: the system, a command);
``request`` gives the client address.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from audit.services import record

from ..locks import lock_collection
from ..models import Collection, Membership, Role
from .errors import InvariantError


def _state(membership: Membership | None) -> dict[str, Any] | None:
    if membership is None:
        return None
    return {"role": membership.role, "can_adjudicate": membership.can_adjudicate}


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise InvariantError(f"role {role!r} must be one of {', '.join(Role.values)}")


@transaction.atomic
def set_membership(
    *,
    collection: Collection,
    user: Any,
    role: str | None,
    can_adjudicate: bool | None = None,
    actor: Any = None,
    request: Any = None,
) -> Membership | None:
    """Give ``user`` exactly ``role`` in the collection (and, unless ``None``, the
    adjudicator capability), or remove them with ``None``; no admin is kept here (see
    ``set_member_role``). A change that changes nothing records nothing."""
    current = Membership.objects.filter(collection=collection, user=user).first()
    before = _state(current)
    target = user.get_username()
    if role is None:
        if current is not None:
            current.delete()
            record(
                "member.remove",
                actor=actor,
                collection=collection,
                target=target,
                before=before,
                after=None,
                request=request,
            )
        return None
    _check_role(role)
    if current is None:
        current = Membership.objects.create(
            collection=collection, user=user, role=role, can_adjudicate=bool(can_adjudicate)
        )
        record(
            "member.add",
            actor=actor,
            collection=collection,
            target=target,
            before=None,
            after=_state(current),
            request=request,
        )
        return current
    if current.role != role:
        current.role = role
        current.save(update_fields=["role"])
        record(
            "member.role",
            actor=actor,
            collection=collection,
            target=target,
            before={"role": before["role"]} if before else None,
            after={"role": role},
            request=request,
        )
    if can_adjudicate is not None and current.can_adjudicate != can_adjudicate:
        current.can_adjudicate = can_adjudicate
        current.save(update_fields=["can_adjudicate"])
        record(
            "member.adjudicate",
            actor=actor,
            collection=collection,
            target=target,
            before={"can_adjudicate": not can_adjudicate},
            after={"can_adjudicate": can_adjudicate},
            request=request,
        )
    return current


@transaction.atomic
def set_member_role(
    *,
    collection: Collection,
    user: Any,
    role: str | None,
    can_adjudicate: bool | None = None,
    actor: Any = None,
    request: Any = None,
) -> Membership | None:
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
        doing = "removed" if role is None else f"made {role}"
        raise InvariantError(
            f"{user.get_username()} is the last admin of '{collection.slug}' and cannot be "
            f"{doing}; make another member admin first"
        )
    return set_membership(
        collection=collection,
        user=user,
        role=role,
        can_adjudicate=can_adjudicate,
        actor=actor,
        request=request,
    )


@transaction.atomic
def set_adjudicator(
    *, collection: Collection, user: Any, allowed: bool, actor: Any = None, request: Any = None
) -> Membership:
    """Grant (or withdraw) a member the adjudicator capability: deciding the pairs whose
    assessors disagree. Admins have it by their role; a non-member is refused."""
    current = Membership.objects.filter(collection=collection, user=user).first()
    if current is None:
        raise InvariantError(
            f"{user.get_username()} is not a member of '{collection.slug}'; add them first"
        )
    membership = set_membership(
        collection=collection,
        user=user,
        role=current.role,
        can_adjudicate=allowed,
        actor=actor,
        request=request,
    )
    assert membership is not None
    return membership


@transaction.atomic
def set_member_access(
    *,
    collection: Collection,
    user: Any,
    role: str,
    can_adjudicate: bool | None = None,
    actor: Any = None,
    request: Any = None,
) -> Membership:
    """A member's role (``set_member_role``, keeping an admin) and, unless ``None``, their
    adjudicator capability, together or not at all: one audit row per thing changed (a
    new member is one ``member.add``, with both)."""
    _check_role(role)
    membership = set_member_role(
        collection=collection,
        user=user,
        role=role,
        can_adjudicate=can_adjudicate,
        actor=actor,
        request=request,
    )
    assert membership is not None
    return membership
