"""Reads for the reviewer's pages: progress per collection, the queue, a task, a query's
judgments, open tasks and evidence, and the history rows behind an undo.

Counts come from grouped aggregates (one query per kind of row), never from several
Count()s over different joins, which multiply rows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

from ..models import (
    Assessment,
    Collection,
    EvidenceCondition,
    FocusSet,
    Item,
    Judgment,
    JudgmentChange,
    Query,
    QueryStatus,
    ReviewTask,
    TaskSource,
    TaskStatus,
)
from ..rows import Columns
from .access import collections_for

# "Open" is spelled as an IN list rather than "not done": PostgreSQL can walk the
# (collection, status, ...) index for an IN list, not for "<>".
OPEN_TASK_STATUSES = (TaskStatus.PENDING, TaskStatus.CLAIMED)


@dataclass(frozen=True)
class ReviewProgress:
    """What is done and what is left in one collection."""

    unreviewed: int = 0
    relevant: int = 0
    no_answer: int = 0
    judged: int = 0
    open_tasks: int = 0
    claimed_now: int = 0

    @property
    def queries(self) -> int:
        return self.unreviewed + self.relevant + self.no_answer

    @property
    def reviewed(self) -> int:
        return self.relevant + self.no_answer


def collections_with_review_progress(user: Any) -> list[tuple[Collection, ReviewProgress]]:
    """The user's collections (``collections_for``), each with its progress: queries by
    review status, judged items, open review tasks and tasks under a live lease now.
    Four queries, however many collections."""

    collections = list(collections_for(user).order_by("name", "slug"))
    ids = [c.pk for c in collections]
    counts: dict[int, dict[str, int]] = {pk: {} for pk in ids}
    for pk, status, n in (
        Query.objects.filter(collection_id__in=ids)
        .order_by()
        .values_list("collection_id", "status")
        .annotate(n=Count("pk"))
    ):
        counts[pk][status] = n
    for pk, n in (
        Judgment.objects.filter(query__collection_id__in=ids)
        .order_by()
        .values_list("query__collection_id")
        .annotate(n=Count("pk"))
    ):
        counts[pk]["judged"] = n
    now = timezone.now()
    for pk, n_open, n_claimed in (
        ReviewTask.objects.filter(collection_id__in=ids, status__in=OPEN_TASK_STATUSES)
        .order_by()
        .values_list("collection_id")
        .annotate(
            n_open=Count("pk"),
            n_claimed=Count("pk", filter=Q(status=TaskStatus.CLAIMED, lease_expires_at__gt=now)),
        )
    ):
        counts[pk]["open_tasks"], counts[pk]["claimed_now"] = n_open, n_claimed
    return [(c, ReviewProgress(**counts[c.pk])) for c in collections]


@dataclass(frozen=True)
class QueryProgress:
    """Where one query's review stands: its judgments, how many are relevant, its open
    review tasks, and the status its judgments point to (``relevant`` with a relevant
    judgment, else ``no_answer``: every judged item is non-relevant)."""

    query: Query
    judged: int
    relevant: int
    open_tasks: int

    @property
    def suggested_status(self) -> str:
        return QueryStatus.RELEVANT if self.relevant else QueryStatus.NO_ANSWER

    @property
    def settled(self) -> bool:
        return self.query.status != QueryStatus.UNREVIEWED


def open_tasks_of(query: Query) -> int:
    """How many review tasks of the query are open (pending or claimed)."""
    return ReviewTask.objects.filter(query=query, status__in=OPEN_TASK_STATUSES).count()


def query_progress(query: Query) -> QueryProgress:
    """The query's progress, read fresh (its status too): two queries."""
    query = Query.objects.select_related("collection").get(pk=query.pk)
    counts = Judgment.objects.filter(query=query).aggregate(
        judged=Count("pk"),
        relevant=Count("pk", filter=Q(grade__gte=query.collection.relevant_grade)),
    )
    return QueryProgress(
        query=query,
        judged=counts["judged"],
        relevant=counts["relevant"],
        open_tasks=open_tasks_of(query),
    )


# The review queue's page counts open tasks up to this many, then says "more than 1,000":
# an exact count reads one index entry per open task (~50 ms at 100,000 on PostgreSQL),
# on every page view and key press; a capped one reads at most QUEUE_COUNT_CAP + 1.
QUEUE_COUNT_CAP = 1_000


def queue_progress(collection: Collection, *, open_cap: int | None = None) -> tuple[int, int]:
    """(open review tasks, of which under a live lease now) in the collection. Two
    queries, each answered from an index alone: one COUNT with the lease condition would
    have to read every open task's row.

    With ``open_cap``, the open tasks are counted up to ``open_cap + 1`` only
    (``SELECT COUNT(*) FROM (SELECT … LIMIT open_cap + 1)``): a result above ``open_cap``
    means "more than ``open_cap``", never an exact number (``open_count_shown``)."""

    tasks = ReviewTask.objects.filter(collection=collection)
    open_tasks = tasks.filter(status__in=OPEN_TASK_STATUSES)
    if open_cap is not None:
        open_tasks = open_tasks.order_by()[: open_cap + 1]
    n_open = open_tasks.count()
    n_claimed = tasks.filter(status=TaskStatus.CLAIMED, lease_expires_at__gt=timezone.now()).count()
    return n_open, n_claimed


def open_count_shown(n_open: int, *, cap: int | None) -> str:
    """How a count from ``queue_progress(open_cap=cap)`` reads: the number while it is
    exact (at most ``cap``), else "more than 1,000"."""
    if cap is not None and n_open > cap:
        return f"more than {cap:,}"
    return str(n_open)


@dataclass(frozen=True)
class NotYours:
    """Why open tasks are not offered to one reviewer: skipped by them, held by someone
    else now, or other slots of pairs they assessed (several assessors per item)."""

    skipped: int
    held: int
    assessed: int


def why_not_yours(reviewer: Any, collection: Collection) -> NotYours:
    """The end of one reviewer's queue: the open tasks left, by why they are not theirs.
    A task counts once, under the first reason that applies (skipped, held, assessed)."""
    open_tasks = ReviewTask.objects.filter(collection=collection, status__in=OPEN_TASK_STATUSES)
    skipped = open_tasks.filter(skips__reviewer=reviewer)
    held = open_tasks.filter(
        status=TaskStatus.CLAIMED, lease_expires_at__gt=timezone.now()
    ).exclude(claimed_by=reviewer)
    assessed = open_tasks.none()
    if collection.has_overlap:
        mine = Assessment.objects.filter(
            query=OuterRef("query"), item=OuterRef("item"), assessor=reviewer
        )
        assessed = open_tasks.filter(Exists(mine))
    n_skipped = skipped.count()
    n_held = held.exclude(pk__in=skipped.values("pk")).count()
    n_assessed = (
        assessed.exclude(pk__in=skipped.values("pk")).exclude(pk__in=held.values("pk")).count()
    )
    return NotYours(skipped=n_skipped, held=n_held, assessed=n_assessed)


def held_task_for(
    reviewer: Any,
    collection: Collection,
    *,
    query: Query | None = None,
    tag: str | None = None,
    focus: FocusSet | None = None,
) -> ReviewTask | None:
    """The task ``reviewer`` holds under a live lease in the scope (one query, the
    queries with one tag, a focus set's pairs, or the whole collection), the soonest to
    expire first: the one ``claim_next_task`` would hand back. ``None`` when they hold
    none there. A read: it claims, extends and releases nothing (a GET shows what is
    held; a POST claims)."""
    held = ReviewTask.objects.filter(
        collection=collection,
        status=TaskStatus.CLAIMED,
        claimed_by=reviewer,
        lease_expires_at__gt=timezone.now(),
    )
    if query is not None:
        held = held.filter(query=query)
    if tag is not None:
        # Ids, not a subquery: with_tag's SQLite form names the query table, which a
        # subquery renames (as in claim_next_task).
        tagged = Query.objects.filter(collection=collection).with_tag(tag)
        held = held.filter(query_id__in=list(tagged.values_list("pk", flat=True)))
    if focus is not None:
        held = held.filter(focus.holds_task())
    return held.order_by("lease_expires_at", "pk").first()


def task_for_review(collection: Collection, task_id: int, *, sources: bool = True) -> ReviewTask:
    """The task with its query and item, and its sources (best rank first) unless
    ``sources=False``: one statement, the sources read as a JSON array beside the task
    rather than by a second query (``task.sources.all()`` answers from it). The collection
    is ``collection`` (no read). ``ReviewTask.DoesNotExist`` unless it belongs to it.

    Written as SQL once per process (``rows.Columns``): the reviewer's claim and the
    review page read it on every task, and building the queryset cost more CPU than the
    database spent on it."""
    with connection.cursor() as cursor:
        cursor.execute(_task_sql(sources), [collection.pk, task_id])
        row = cursor.fetchone()
    if row is None:
        raise ReviewTask.DoesNotExist(f"no review task {task_id} in this collection")
    task = _T.build(row)
    task.query = _Q.build(row, _T.width)
    task.item = _I.build(row, _T.width + _Q.width)
    task.collection = collection
    if sources:
        rows = row[-1]
        if isinstance(rows, str | bytes):
            rows = json.loads(rows)
        task._prefetched_objects_cache = {
            "sources": [TaskSource(task=task, label=r["label"], rank=r["rank"]) for r in rows or []]
        }
    return task


# A task's sources in TaskSource's order (rank, then label; each database's NULL order,
# as the ORM's ordering gives), as one JSON array.
_TS = TaskSource._meta.db_table
_RT = ReviewTask._meta.db_table
_SOURCES_SQL = {
    "postgresql": (
        "SELECT COALESCE(json_agg(json_build_object('label', s.label, 'rank', s.rank) "
        f"ORDER BY s.rank, s.label), '[]'::json) FROM {_TS} s "
        f'WHERE s.task_id = "{_RT}"."id"'
    ),
    "sqlite": (
        "SELECT json_group_array(json_object('label', s.label, 'rank', s.rank)) "
        f"FROM (SELECT label, rank FROM {_TS} "
        f'WHERE task_id = "{_RT}"."id" ORDER BY rank, label) s'
    ),
}
_T = Columns(ReviewTask, _RT)
_Q = Columns(Query, Query._meta.db_table)
_I = Columns(Item, Item._meta.db_table)


def _task_sql(sources: bool) -> str:
    qn = connection.ops.quote_name
    rt, q, i = qn(_RT), qn(_Q.alias), qn(_I.alias)
    extra = f", ({_SOURCES_SQL[connection.vendor]})" if sources else ""
    return (
        f"SELECT {_T.sql()}, {_Q.sql()}, {_I.sql()}{extra} FROM {rt} "
        f"INNER JOIN {q} ON {q}.{qn('id')} = {rt}.{qn('query_id')} "
        f"INNER JOIN {i} ON {i}.{qn('id')} = {rt}.{qn('item_id')} "
        f"WHERE {rt}.{qn('collection_id')} = %s AND {rt}.{qn('id')} = %s"
    )


def judgments_for_query(query: Query) -> QuerySet[Judgment]:
    """The query's current judgments with item and reviewer, by item id, each with
    ``last_source``: how its latest change was made (``ChangeSource``: by a person in the
    browser or the API, an import, the resolution policy, an adjudicator…)."""
    latest = JudgmentChange.objects.filter(query=OuterRef("query"), item=OuterRef("item"))
    return (
        Judgment.objects.filter(query=query)
        .select_related("item", "reviewer")
        .annotate(last_source=Subquery(latest.order_by("-pk").values("source")[:1]))
        .order_by("item__external_id")
    )


def own_assessments(query: Query, assessor: Any) -> QuerySet[Assessment]:
    """``assessor``'s own assessments of the query's items, by item id."""
    return (
        Assessment.objects.filter(query=query, assessor=assessor)
        .select_related("item")
        .order_by("item__external_id")
    )


def open_tasks_for_query(query: Query) -> QuerySet[ReviewTask]:
    """The query's unjudged markers (open review tasks) with item and sources, in queue
    order."""
    return (
        ReviewTask.objects.filter(query=query, status__in=OPEN_TASK_STATUSES)
        .select_related("item", "claimed_by")
        .prefetch_related("sources")
        .order_by("-priority", "pk")
    )


def evidence_of(query: Query) -> Any:
    """The query's evidence condition, or ``None``."""

    return EvidenceCondition.objects.filter(query=query).select_related("updated_by").first()


def judgment_changes(ids: list[int]) -> dict[int, Any]:
    """History rows by id, with query and item (for describing an undo)."""

    return {
        c.pk: c for c in JudgmentChange.objects.filter(pk__in=ids).select_related("query", "item")
    }


def change_that_made(judgment: Judgment, by: Any) -> Any:
    """The history row of ``by``'s change that produced this version of the judgment
    (the newest, since a removal and re-creation starts the versions again)."""

    return (
        JudgmentChange.objects.filter(
            query_id=judgment.query_id,
            item_id=judgment.item_id,
            version=judgment.version,
            changed_by=by,
        )
        .order_by("-pk")
        .first()
    )


def focus_set_in(collection: Collection, name: str) -> FocusSet:
    """The focus set ``name`` of ``collection``; ``FocusSet.DoesNotExist`` otherwise."""
    return FocusSet.objects.get(collection=collection, name=name)


def focus_progress(focus: FocusSet) -> tuple[int, int]:
    """(pairs of ``focus`` with a judgment now, pairs of ``focus``)."""
    pairs = focus.pairs.all()
    judged = pairs.filter(
        Exists(Judgment.objects.filter(query_id=OuterRef("query_id"), item_id=OuterRef("item_id")))
    )
    return judged.count(), pairs.count()
