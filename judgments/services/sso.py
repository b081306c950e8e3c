"""A sign-in through the identity provider: the account, its group roles, the audit row."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from django.contrib.auth import get_user_model
from django.db import transaction

from audit.services import record

from ..models import ROLE_RANK, Collection, Membership


class GroupRoleLike(Protocol):
    group: str
    collection_slug: str
    role: str


@transaction.atomic
def sign_in_from_idp(
    *,
    user: Any,
    username: str,
    email: str | None,
    groups: list[str] | None,
    mapping: Iterable[GroupRoleLike],
    request: Any = None,
) -> Any:
    """The account of someone the identity provider vouched for, brought up to date.

    ``user`` None creates the account ``username`` (no usable password: single sign-on
    only; the login row says ``account_created``). The email follows the provider's.
    With ``groups`` (None: no groups claim is configured, memberships are left alone)
    the group mapping is applied: see ``apply_group_roles``. One ``login`` audit row
    says who signed in and how (with the groups among the mapping's).
    """
    User = get_user_model()
    detail: dict[str, Any] = {"method": "oidc"}
    if user is None:
        user = User(username=username, email=email or "")
        user.set_unusable_password()
        user.save()
        detail["account_created"] = True
    elif email is not None and user.email != email:
        User.objects.filter(pk=user.pk).update(email=email)
        user.email = email
    if groups is not None:
        mapping = list(mapping)
        apply_group_roles(user=user, groups=groups, mapping=mapping, request=request)
        # The groups that gave a role, not all of them: the log is no copy of the directory.
        detail["groups"] = sorted(set(groups) & {entry.group for entry in mapping})
    record("login", actor=user, target=username, detail=detail, request=request)
    return user


@transaction.atomic
def apply_group_roles(
    *, user: Any, groups: list[str], mapping: Iterable[GroupRoleLike], request: Any = None
) -> list[tuple[str, str, str | None]]:
    """Make ``user``'s mapped memberships match their IdP ``groups``.

    For each collection the mapping names: a member of one of its groups holds the highest
    role those groups give, in a membership marked with the group (``granted_by_group``);
    someone in none of them loses a membership so marked (the role is withdrawn, even a
    collection's last admin: the provider said no). A membership an admin made on the
    members page is never changed here. Mapped memberships whose mapping was removed from
    the settings go too. Returns the changes as (collection slug, action, role); each one
    also leaves an audit row (``member.add``, ``member.role``, ``member.remove``).
    """
    held = set(groups)
    wanted: dict[str, tuple[str, str]] = {}  # slug -> (role, group)
    for entry in mapping:
        if entry.group not in held:
            continue
        current = wanted.get(entry.collection_slug)
        if current is None or ROLE_RANK[entry.role] > ROLE_RANK[current[0]]:
            wanted[entry.collection_slug] = (entry.role, entry.group)
    collections = {c.slug: c for c in Collection.objects.filter(slug__in=wanted)}
    memberships = {
        m.collection.slug: m
        for m in Membership.objects.select_for_update()
        .select_related("collection")
        .filter(user=user)
    }
    changes: list[tuple[str, str, str | None]] = []

    def log(action: str, collection: Collection, before: Any, after: Any, group: str) -> None:
        changes.append((collection.slug, action, (after or {}).get("role")))
        record(
            action,
            actor=None,
            collection=collection,
            target=user.get_username(),
            before=before,
            after=after,
            detail={"via": "oidc group mapping", "group": group},
            request=request,
        )

    for slug, (role, group) in wanted.items():
        collection = collections.get(slug)
        if collection is None:
            continue  # a mapping to a collection not (or no longer) here: nothing to grant
        membership = memberships.get(slug)
        if membership is None:
            Membership.objects.create(
                collection=collection, user=user, role=role, granted_by_group=group
            )
            log("member.add", collection, None, {"role": role}, group)
        elif membership.granted_by_group and (
            membership.role != role or membership.granted_by_group != group
        ):
            before = {"role": membership.role}
            Membership.objects.filter(pk=membership.pk).update(role=role, granted_by_group=group)
            if before["role"] != role:
                log("member.role", collection, before, {"role": role}, group)
    for slug, membership in memberships.items():
        if membership.granted_by_group and slug not in wanted:
            membership.delete()
            log(
                "member.remove",
                membership.collection,
                {"role": membership.role},
                None,
                membership.granted_by_group,
            )
    return changes
