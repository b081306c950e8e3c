"""Who may see and do what: the collections a user may see, and their role in one."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import QuerySet

from ..models import Collection, Membership, Role, role_allows


def collections_for(user: Any) -> QuerySet[Collection]:
    """The collections this user may see: every one for a superuser, else by membership."""
    if not getattr(user, "is_authenticated", False):
        return Collection.objects.none()
    if user.is_superuser:
        return Collection.objects.all()
    return Collection.objects.filter(members__user=user)


def role_of(user: Any, collection: Collection) -> str | None:
    """The user's role in the collection (``admin`` for a superuser), or ``None``."""
    if not getattr(user, "is_authenticated", False):
        return None
    if user.is_superuser:
        return Role.ADMIN
    return (
        Membership.objects.filter(user=user, collection=collection)
        .values_list("role", flat=True)
        .first()
    )


def may(user: Any, collection: Collection, role: str) -> bool:
    """Whether the user holds ``role`` or a stronger one in the collection."""
    return role_allows(role_of(user, collection), role)


def may_adjudicate(user: Any, collection: Collection) -> bool:
    """Deciding disagreements: collection admins, and members granted ``can_adjudicate``."""
    if role_of(user, collection) == Role.ADMIN:
        return True
    return Membership.objects.filter(user=user, collection=collection, can_adjudicate=True).exists()


def may_see_assessments(user: Any, collection: Collection) -> bool:
    """Who may see assessments, or any figure derived from them (agreement, confusion of
    grades, each assessor against the resolved labels, scores under one assessor's labels,
    one assessor's qrels): evaluators and admins, never a plain reviewer, whatever
    capability they hold. With several assessors per item a reviewer knows their own
    grades, so any such figure could tell them another assessor's grade (blind overlap).
    The one rule every page, API answer and export asks; management commands are the
    operator's and need none."""
    return may(user, collection, Role.EVALUATOR)


def may_see_labels(user: Any, collection: Collection) -> bool:
    """Who may see a collection's labels (judgments: resolved labels), or anything derived
    from them (a pair's state, its history, snapshot contents and diffs, qrels, scores).
    With one assessor per item: every member. With several: only those who may see the
    assessments (``may_see_assessments``); a plain reviewer knows their own grade, so the
    resolved label, or whether a pair they assessed is resolved or awaits adjudication,
    would tell them the other assessors' grades. They see their own assessments and the
    tasks they are given; an adjudicator also sees the assessments of the pairs they
    decide, on the adjudication queue. The one rule every page, API answer and export
    asks before showing a label."""
    if not collection.has_overlap:
        return True
    return may_see_assessments(user, collection)


def may_score(user: Any, collection: Any) -> bool:
    """Scoring stores evaluations: an evaluator's action (``Role.EVALUATOR``)."""
    return may(user, collection, Role.EVALUATOR)


def may_create_collections(user: Any) -> bool:
    """Who may create collections (``/c/new/``), by ``VERITY_COLLECTION_CREATORS``:
    ``superusers`` (the default), ``staff`` (staff and superusers) or ``everyone`` (any
    signed-in, active user). The creator becomes the new collection's admin."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    who = settings.VERITY_COLLECTION_CREATORS
    if user.is_superuser or who == "everyone":
        return True
    return who == "staff" and bool(user.is_staff)
