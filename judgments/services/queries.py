"""A query's review status and its evidence condition, kept consistent with its judgments."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from ..locks import lock_query
from ..models import (
    ChangeSource,
    EvidenceCondition,
    Item,
    Judgment,
    Query,
    QueryStatus,
    QueryStatusChange,
)
from ._common import User
from .errors import InvariantError


@transaction.atomic
def set_query_status(
    *,
    query: Query,
    status: str,
    by: User | None,
    source: str = ChangeSource.UI,
) -> Query:
    """Set a query's review status, keeping it consistent with its judgments.

    ``relevant`` needs at least one judgment at or above the relevant grade;
    ``no_answer`` allows none. A refused change leaves the status as it was.
    """
    if status not in QueryStatus.values:
        raise InvariantError(f"status {status!r} must be one of {', '.join(QueryStatus.values)}")
    query = lock_query(query.pk)
    relevant_count = Judgment.objects.filter(
        query=query, grade__gte=query.collection.relevant_grade
    ).count()
    if status == QueryStatus.RELEVANT and relevant_count == 0:
        raise InvariantError(
            f"query '{query.external_id}' has no relevant judgment, so it cannot be marked "
            "'has relevant items'; judge a relevant item first, or mark it 'no answer'"
        )
    if status == QueryStatus.NO_ANSWER and relevant_count:
        raise InvariantError(
            f"query '{query.external_id}' has {relevant_count} relevant judgment(s), so it "
            "cannot be marked 'confirmed no answer'; regrade them first"
        )
    if query.status == status:
        return query
    QueryStatusChange.objects.create(
        query=query, old_status=query.status, new_status=status, changed_by=by, source=source
    )
    query.status = status
    query.status_changed_by = by
    query.status_changed_at = timezone.now()
    query.save(update_fields=["status", "status_changed_by", "status_changed_at"])
    return query


def normalize_evidence(groups: Any) -> list[list[str]]:
    """Canonical DNF: each AND-group sorted and deduplicated, groups sorted and distinct."""
    if not isinstance(groups, list) or not groups:
        raise InvariantError("an evidence condition is a non-empty list of AND-groups of item ids")
    out: set[tuple[str, ...]] = set()
    for group in groups:
        if not isinstance(group, list) or not group:
            raise InvariantError(f"evidence group {group!r} must be a non-empty list of item ids")
        if not all(isinstance(i, str) and i for i in group):
            raise InvariantError(f"evidence group {group!r} must hold item ids as strings")
        out.add(tuple(sorted(set(group))))
    return [list(g) for g in sorted(out)]


@transaction.atomic
def set_evidence_condition(
    *, query: Query, groups: list[list[str]] | None, by: User | None
) -> EvidenceCondition | None:
    """Set (or with ``None`` remove) a query's evidence condition over known item ids."""
    query = lock_query(query.pk)
    if groups is None:
        EvidenceCondition.objects.filter(query=query).delete()
        return None
    canonical = normalize_evidence(groups)
    wanted = {i for g in canonical for i in g}
    known = set(
        Item.objects.filter(collection=query.collection, external_id__in=wanted).values_list(
            "external_id", flat=True
        )
    )
    missing = sorted(wanted - known)
    if missing:
        raise InvariantError(
            f"evidence condition of query '{query.external_id}' names unknown item(s) "
            f"{', '.join(missing)}; import them first"
        )
    condition, _ = EvidenceCondition.objects.update_or_create(
        query=query, defaults={"groups": canonical, "updated_by": by}
    )
    return condition
