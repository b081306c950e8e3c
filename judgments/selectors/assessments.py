"""Reads of several assessors per item: the assessments of a collection or snapshot, the
pairs awaiting adjudication, and the adjudication queue."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from django.db.models import QuerySet

from ..models import (
    AdjudicationStatus,
    AdjudicationTask,
    Assessment,
    Collection,
    Judgment,
    ReviewTask,
    Snapshot,
    SnapshotAssessment,
    SnapshotJudgment,
    SnapshotUnjudged,
    TaskStatus,
)


def live_assessments(collection: Collection) -> Iterator[tuple[str, str, str, int]]:
    """Every assessment as (query id, item id, assessor name, grade)."""
    rows = (
        Assessment.objects.filter(collection=collection)
        .values_list(
            "query__external_id",
            "item__external_id",
            f"assessor__{Assessment._meta.get_field('assessor').related_model.USERNAME_FIELD}",
            "assessor_name",
            "grade",
        )
        .order_by()
        .iterator(chunk_size=20000)
    )
    return ((q, i, user or name, g) for q, i, user, name, g in rows)


def unresolved_pairs(collection: Collection) -> set[tuple[str, str]]:
    """Pairs that have assessments but no resolved label and no open review task: they
    await an adjudicator (or were imported with fewer assessors than the collection asks
    for). A snapshot counts them as unjudged."""
    assessed = set(
        Assessment.objects.filter(collection=collection)
        .values_list("query__external_id", "item__external_id")
        .order_by()
        .distinct()
    )
    judged = Judgment.objects.filter(query__collection=collection).values_list(
        "query__external_id", "item__external_id"
    )
    open_tasks = (
        ReviewTask.objects.filter(collection=collection)
        .exclude(status=TaskStatus.DONE)
        .values_list("query__external_id", "item__external_id")
    )
    return assessed - set(judged) - set(open_tasks)


def one_assessor(
    rows: Iterable[tuple[str, str, str, int]], assessor: str, where: str
) -> list[tuple[str, str, int]]:
    """(query, item, grade) of one assessor's assessments among ``rows``; ``LookupError``
    naming the assessors there are when ``assessor`` has none."""
    names: set[str] = set()
    mine = []
    for qid, item, who, grade in rows:
        names.add(who)
        if who == assessor:
            mine.append((qid, item, grade))
    if not mine:
        have = ", ".join(sorted(names)) or "none"
        raise LookupError(f"{where} has no assessments by '{assessor}'; its assessors: {have}")
    return mine


def frozen_assessments(snapshot: Snapshot) -> Iterator[tuple[str, str, str, int]]:
    return (
        SnapshotAssessment.objects.of(snapshot)
        .values_list("query__external_id", "item__external_id", "assessor", "grade")
        .iterator(chunk_size=20000)
    )


def frozen_unresolved(snapshot: Snapshot) -> set[tuple[str, str]]:
    """``unresolved_pairs`` as frozen: assessed pairs neither judged nor unjudged."""
    assessed = {(q, i) for q, i, _, _ in frozen_assessments(snapshot)}
    judged = SnapshotJudgment.objects.of(snapshot).values_list(
        "query__external_id", "item__external_id"
    )
    unjudged = SnapshotUnjudged.objects.of(snapshot).values_list(
        "query__external_id", "item__external_id"
    )
    return assessed - set(judged) - set(unjudged)


def open_adjudications(collection: Collection) -> QuerySet[AdjudicationTask]:
    return AdjudicationTask.objects.filter(
        collection=collection, status=AdjudicationStatus.OPEN
    ).select_related("query", "item")


def assessments_of_pair(task: AdjudicationTask) -> QuerySet[Assessment]:
    return Assessment.objects.filter(query_id=task.query_id, item_id=task.item_id).select_related(
        "assessor"
    )


def agreement_report(collection: Collection, snapshot: Snapshot | None = None) -> dict[str, Any]:
    """The agreement figures (``judgments/agreement.py``) of the collection's current
    assessments, or of those frozen in ``snapshot``, with the resolved labels beside."""
    from ..agreement import agreement

    if snapshot is None:
        rows: Iterable[tuple[str, str, str, int]] = live_assessments(collection)
        resolved_rows = Judgment.objects.filter(query__collection=collection).values_list(
            "query__external_id", "item__external_id", "grade"
        )
        grades = collection.grades
    else:
        rows = frozen_assessments(snapshot)
        resolved_rows = SnapshotJudgment.objects.of(snapshot).values_list(
            "query__external_id", "item__external_id", "grade"
        )
        grades = [int(g["grade"]) for g in snapshot.scale]
    ratings: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for qid, item, who, grade in rows:
        ratings[(qid, item)][who] = grade
    resolved = {(q, i): g for q, i, g in resolved_rows}
    report = agreement(ratings, grades=grades, resolved=resolved)
    return {
        "collection": collection.slug,
        "snapshot": None if snapshot is None else snapshot.number,
        **report,
    }
