"""Who may do what, per collection.

A request is first authenticated (anonymous: 401). Under ``/api/collections/<slug>/``
the collection must be one the user may see (``collections_for``: a member, or any for a
superuser), else 404, as if it did not exist. Then the user's role there must reach the
one the view declares for the operation, else 403 naming both:

- reviewer: read everything, label (judgments, query statuses), claim and skip tasks;
- evaluator: also upload runs and unit mappings, freeze snapshots, score, export qrels;
- admin: also manage members and the collection's settings.

Every queryset of a collection-scoped view is filtered by that collection, so another
collection's objects answer 404 and never appear in a list.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from rest_framework import exceptions
from rest_framework.permissions import BasePermission, IsAuthenticated

from judgments.models import Collection, Role, role_allows
from judgments.selectors import may_see_labels, member_collection, role_of

BLIND_REFUSAL = (
    "Collection '{slug}' has several assessors per item and keeps them blind: a reviewer "
    "sees their own assessments and tasks, never the resolved labels or anything derived "
    "from them. This needs the evaluator role."
)


class HasCollectionRole(BasePermission):
    """The view's ``required_role()`` for this request, in the view's collection."""

    def has_permission(self, request: Any, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False  # DRF answers 401: the token scheme is the first authenticator
        collection = view.collection  # 404 when the user may not see it
        needed = Role(view.required_role())
        held = view.role
        if not role_allows(held, needed):
            raise exceptions.PermissionDenied(
                f"This needs the {needed} role in collection '{collection.slug}'; you are "
                f"{held}. Ask an admin of the collection to change your role."
            )
        if view.shows_labels() and not view.sees_labels:
            raise exceptions.PermissionDenied(BLIND_REFUSAL.format(slug=collection.slug))
        return True


class CollectionScoped:
    """Mixin for views under ``collections/<slug>/``: the collection, the caller's role,
    and the role each action needs (``required_roles``: action or method → role;
    reviewer when unlisted)."""

    permission_classes = [IsAuthenticated, HasCollectionRole]
    required_roles: dict[str, str] = {}
    #: The answer shows labels or figures derived from them: ``True`` for every action,
    #: or the actions (or methods) that do. Refused to whom ``may_see_labels`` refuses.
    labels: bool | frozenset[str] = False

    kwargs: dict[str, Any]
    request: Any

    def required_role(self) -> str:
        action = getattr(self, "action", None)
        for key in (action, self.request.method):
            if key in self.required_roles:
                return self.required_roles[key]
        return Role.REVIEWER

    @cached_property
    def collection(self) -> Collection:
        slug = self.kwargs.get("slug")
        user = self.request.user
        # With the caller's role (``held_role``): one statement on every request under
        # /api/collections/<slug>/.
        found = member_collection(user, slug) if getattr(user, "is_authenticated", False) else None
        if found is None:
            raise exceptions.NotFound(
                f"No collection '{slug}' among yours; GET /api/collections/ lists the "
                "collections you are a member of."
            )
        return found

    def shows_labels(self) -> bool:
        if isinstance(self.labels, bool):
            return self.labels
        return bool({getattr(self, "action", None), self.request.method} & self.labels)

    @cached_property
    def sees_labels(self) -> bool:
        """``may_see_labels``: with several assessors per item, evaluators and admins."""
        return may_see_labels(self.request.user, self.collection)

    @cached_property
    def role(self) -> str | None:
        held = getattr(self.collection, "held_role", None)
        return held if held is not None else role_of(self.request.user, self.collection)

    def schema_only(self) -> bool:
        """True while drf-spectacular inspects the view with no real request."""
        return bool(getattr(self, "swagger_fake_view", False))
