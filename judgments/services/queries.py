"""A query's review status and its evidence condition, kept consistent with its judgments."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from ..locks import lock_query, share_collection
from ..models import (
    ChangeSource,
    Collection,
    EvidenceCondition,
    Item,
    Judgment,
    Query,
    QueryStatus,
    QueryStatusChange,
    ReviewTask,
    StatusPlan,
    TaskStatus,
    plan_status_change,
    status_refusal,
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
        raise InvariantError(status_refusal(query_id="", status=status, relevant_count=0))
    query = lock_query(query.pk)
    relevant_count = Judgment.objects.filter(
        query=query, grade__gte=query.collection.relevant_grade
    ).count()
    refusal = status_refusal(
        query_id=query.external_id, status=status, relevant_count=relevant_count
    )
    if refusal:
        raise InvariantError(refusal)
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


@transaction.atomic
def set_query_statuses(
    *,
    collection: Collection,
    query_ids: Iterable[str],
    status: str,
    by: User | None,
    source: str = ChangeSource.UI,
) -> StatusPlan:
    """Set one review status on many queries of a collection (the bulk action).

    Each query keeps the ``set_query_status`` rule (``status_refusal``): the ones it
    refuses are left as they are and returned in ``refused``, with why; the others change
    together, in one transaction, each with its ``QueryStatusChange``. The queries are
    locked in pk order (the order of every service), so the counts the rule reads cannot
    change before the statuses do. Unknown ids are refused too.
    """
    if status not in QueryStatus.values:
        raise InvariantError(status_refusal(query_id="", status=status, relevant_count=0))
    wanted = sorted(set(query_ids))
    share_collection(collection.pk)
    queries = list(
        Query.objects.filter(collection=collection, external_id__in=wanted)
        .order_by("pk")
        .select_for_update(of=("self",))
    )
    judged: dict[int, int] = {}
    relevant: dict[int, int] = {}
    for query_id, grade, n in (
        Judgment.objects.filter(query__in=queries)
        .order_by()
        .values_list("query_id", "grade")
        .annotate(n=Count("pk"))
    ):
        judged[query_id] = judged.get(query_id, 0) + n
        if grade >= collection.relevant_grade:
            relevant[query_id] = relevant.get(query_id, 0) + n
    open_tasks = dict(
        ReviewTask.objects.filter(
            query__in=queries, status__in=(TaskStatus.PENDING, TaskStatus.CLAIMED)
        )
        .order_by()
        .values_list("query_id")
        .annotate(n=Count("pk"))
    )
    by_id = {q.external_id: q for q in queries}
    plan = plan_status_change(
        (
            (
                q.external_id,
                q.status,
                relevant.get(q.pk, 0),
                judged.get(q.pk, 0),
                open_tasks.get(q.pk, 0),
            )
            for q in sorted(queries, key=lambda q: q.external_id)
        ),
        status,
    )
    plan.refused.extend(
        (qid, f"query '{qid}' is not in collection '{collection.slug}'")
        for qid in wanted
        if qid not in by_id
    )
    now = timezone.now()
    changed = [by_id[qid] for qid in plan.change]
    QueryStatusChange.objects.bulk_create(
        QueryStatusChange(
            query=q, old_status=q.status, new_status=status, changed_by=by, source=source
        )
        for q in changed
    )
    Query.objects.filter(pk__in=[q.pk for q in changed]).update(
        status=status, status_changed_by=by, status_changed_at=now
    )
    return plan


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
