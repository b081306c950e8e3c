"""The review queue: unjudged pairs queued as tasks, claimed with a lease, skipped, released."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from ..models import (
    Assessment,
    Collection,
    FocusSet,
    Query,
    ReviewTask,
    TaskSkip,
    TaskStatus,
)
from ..rows import Columns, Template, adapt, compiled, fill
from ._common import User
from .errors import InvariantError
from .pooling import queue_pairs

T = ReviewTask._meta.db_table


def task_priority(*, best_rank: int | None, n_sources: int) -> int:
    """Serve first what many sources surfaced, then what they ranked highest."""
    return n_sources * 10_000 - min(best_rank or 9_999, 9_999)


@transaction.atomic
def queue_unjudged(
    *,
    collection: Collection,
    pairs: Iterable[tuple[int, int, int | None]],
    source: str,
) -> tuple[int, int]:
    """Queue (query pk, item pk, rank) pairs that have no judgment as review tasks.

    One task per pair however many sources surface it (deduplicated across runs), and
    with several assessors per item its slots 2..N beside it (sources on slot 1); each
    source label is remembered once per task with its best rank, and the task's priority
    favours the number of sources, then the best rank. A judged pair is never queued.
    Returns (unjudged pairs seen, tasks newly created). Atomic; safe to run concurrently
    with another queueing of the same pairs (one task each, every source counted).
    Set-based (``pooling.queue_pairs``): any number of pairs costs a few statements.
    """
    outcome = queue_pairs(
        collection=collection,
        rows=((query_id, item_id, rank, 0) for query_id, item_id, rank in pairs),
        labels=[source],
    )
    return outcome.unjudged, outcome.queued


DEFAULT_LEASE = timedelta(minutes=10)


def claim_next_task(
    *,
    reviewer: User,
    collection: Collection,
    lease: timedelta = DEFAULT_LEASE,
    query: Query | None = None,
    tag: str | None = None,
    current_query_id: int | None = None,
    focus: FocusSet | None = None,
) -> ReviewTask | None:
    """Hand one open task to one reviewer, with a lease; ``None`` when the scope is empty.

    The scope is one query (``query``), the queries with one tag (``tag``), the pairs of
    a focus set (``focus``, ``services/focus.py``), or the whole collection. Within it,
    review goes a query at a time: the open tasks of ``current_query_id`` (the query the
    reviewer is working on) come first, in priority order; when it has none left, the
    highest-priority task of a query that no other reviewer holds a live lease in starts
    the next query, and only when every query is held by someone the highest-priority
    task of any query is served.

    A reviewer who already holds a live lease in the scope gets that task back (a reload
    never claims a second one); held tasks outside the scope are released first, so that
    changing scope leaves nothing locked. A task is claimed by compare-and-set, so no task
    is ever held by two reviewers; on PostgreSQL ``SKIP LOCKED`` keeps concurrent
    reviewers from queueing behind one row. Tasks this reviewer skipped are not offered.
    """
    now = timezone.now()
    values = {
        "collection": collection.pk,
        "reviewer": reviewer.pk,
        "query": query.pk if query is not None else None,
        "current": current_query_id,
        "now": adapt(now),
        "until": adapt(now + lease),
    }
    scope = Q()
    if query is not None:
        scope &= Q(query=query)
    if tag is not None:
        # Ids, not a subquery: with_tag's SQLite form names the query table, which a
        # subquery renames.
        tagged = Query.objects.filter(collection=collection).with_tag(tag)
        scope &= Q(query_id__in=list(tagged.values_list("pk", flat=True)))
    if focus is not None:
        scope &= Q(focus.holds_task())
    if scope:
        # Changing scope leaves nothing locked: what is held outside it goes back, unless
        # a task inside it is held (that one is handed back below, the rest kept).
        held = _held(collection.pk, reviewer.pk, now)
        held.exclude(scope).filter(~Exists(held.filter(scope))).update(
            status=TaskStatus.PENDING, claimed_by=None, lease_expires_at=None, updated_at=now
        )
    if tag is None and focus is None:
        # The usual shapes: their statement is compiled once per process (issue 29:
        # compiling the choices' querysets was ~40 % of a claim's CPU).
        shape = (connection.vendor, collection.has_overlap, query is not None)
        shape += (current_query_id is not None,)
        if shape not in _CLAIM_SQL:
            _CLAIM_SQL[shape] = _claim_statement(
                _choices(
                    collection_id=_STAND_INS["collection"],
                    has_overlap=collection.has_overlap,
                    reviewer_id=_STAND_INS["reviewer"],
                    now=_STAND_INS["now"],
                    scope=Q(query_id=_STAND_INS["query"]) if query is not None else Q(),
                    current_query_id=(
                        _STAND_INS["current"] if current_query_id is not None else None
                    ),
                )
            )
        statement = _CLAIM_SQL[shape]
    else:
        statement = _claim_statement(
            _choices(
                collection_id=collection.pk,
                has_overlap=collection.has_overlap,
                reviewer_id=reviewer.pk,
                now=now,
                scope=scope,
                current_query_id=current_query_id,
            )
        )
    if statement is None:
        return None
    sql, template = statement
    with connection.cursor() as cursor:
        cursor.execute(sql, fill(template, values))
        row = cursor.fetchone()
    if row is None:
        return None
    task = _TASK.build(row)
    task.claimed_by = reviewer
    return task


# Stand-ins for what changes from claim to claim in the compiled statements (rows.compiled).
_STAND_INS: dict[str, Any] = {
    "collection": -7_700_000_001,
    "reviewer": -7_700_000_002,
    "query": -7_700_000_003,
    "current": -7_700_000_004,
    "now": datetime(1970, 1, 2, 3, 4, 5, 678_901, tzinfo=UTC),
    "until": datetime(1970, 1, 3, 3, 4, 5, 678_901, tzinfo=UTC),
}
_CLAIM_SQL: dict[tuple[Any, ...], tuple[str, Template] | None] = {}
_TASK = Columns(ReviewTask, T)


def _held(collection_id: int, reviewer_id: int, now: datetime) -> QuerySet[ReviewTask]:
    return ReviewTask.objects.filter(
        collection_id=collection_id,
        status=TaskStatus.CLAIMED,
        claimed_by_id=reviewer_id,
        lease_expires_at__gt=now,
    )


def _choices(
    *,
    collection_id: int,
    has_overlap: bool,
    reviewer_id: int,
    now: datetime,
    scope: Q,
    current_query_id: int | None,
) -> list[tuple[QuerySet[ReviewTask], bool]]:
    """Where ``claim_next_task`` looks, in order: the task this reviewer holds in the
    scope, the current query's open tasks, the open tasks of a query no other reviewer
    holds, any open task. ``True``: claimed anew (locked); ``False``: handed back."""
    held_in_scope = _held(collection_id, reviewer_id, now).filter(scope)
    open_tasks = ReviewTask.objects.filter(scope, collection_id=collection_id).exclude(
        skips__reviewer=reviewer_id
    )
    if has_overlap:
        open_tasks = _blind_slots(open_tasks, reviewer_id)
    open_tasks = open_tasks.filter(
        Q(status=TaskStatus.PENDING) | Q(status=TaskStatus.CLAIMED, lease_expires_at__lte=now)
    ).order_by("-priority", "pk")
    choices = [(held_in_scope.order_by("lease_expires_at", "pk"), False)]
    if current_query_id is not None:
        choices.append((open_tasks.filter(query_id=current_query_id), True))
    held_by_others = ReviewTask.objects.filter(
        collection_id=collection_id, status=TaskStatus.CLAIMED, lease_expires_at__gt=now
    ).exclude(claimed_by=reviewer_id)
    choices.append((open_tasks.exclude(query_id__in=held_by_others.values("query_id")), True))
    choices.append((open_tasks, True))
    return choices


def _blind_slots(tasks: QuerySet[ReviewTask], reviewer_id: int) -> QuerySet[ReviewTask]:
    """Several assessors per item: never offer a pair this reviewer assessed or skipped,
    nor a slot of a pair of which they hold (or held, lease expired) another slot."""
    same_pair = {"query_id": OuterRef("query_id"), "item_id": OuterRef("item_id")}
    skipped = TaskSkip.objects.filter(
        reviewer=reviewer_id,
        task__query_id=OuterRef("query_id"),
        task__item_id=OuterRef("item_id"),
    )
    return (
        tasks.exclude(Exists(Assessment.objects.filter(assessor=reviewer_id, **same_pair)))
        .exclude(Exists(skipped))
        .exclude(
            Exists(
                ReviewTask.objects.filter(
                    status=TaskStatus.CLAIMED, claimed_by=reviewer_id, **same_pair
                ).exclude(pk=OuterRef("pk"))
            )
        )
    )


def _claim_statement(
    choices: list[tuple[QuerySet[ReviewTask], bool]],
) -> tuple[str, Template] | None:
    """Claim the first task of the first choice that has one, in one statement:
    ``UPDATE … WHERE id = COALESCE((choice 1), (choice 2), …) RETURNING``, each choice
    the pk of its first task (``LIMIT 1``), and on PostgreSQL locked with ``FOR UPDATE
    SKIP LOCKED`` so that concurrent reviewers pass each other's rows instead of queueing
    behind them; COALESCE evaluates a choice only when the ones before it found nothing.
    A choice marked ``False`` is a task this reviewer holds already: handed back as it is
    (no new lease). The UPDATE checks the task is still open (compare-and-set), so no
    task is ever held by two reviewers; on SQLite the one statement is atomic anyway.
    SQL and its parameter template (``rows.fill`` with the slots of ``_STAND_INS``)."""
    lock = ""
    if connection.features.has_select_for_update_skip_locked:
        lock = f" FOR UPDATE OF {connection.ops.quote_name(T)} SKIP LOCKED"
    parts, template = [], []
    for tasks, locked in choices:
        choice = compiled(tasks.values("pk")[:1], _STAND_INS)
        if choice is None:  # e.g. a tag no query has: this choice can find nothing
            continue
        parts.append(f"({choice[0]}{lock if locked else ''})")
        template.extend(choice[1])
    if not parts:
        return None
    parts.append("NULL")  # COALESCE wants two arguments at least
    mine = "status = %s AND claimed_by_id = %s AND lease_expires_at > %s"
    sql = f"""
        UPDATE {T} SET
            status = %s,
            lease_expires_at = CASE WHEN {mine} THEN lease_expires_at ELSE %s END,
            claimed_at = CASE WHEN {mine} THEN claimed_at ELSE %s END,
            updated_at = CASE WHEN {mine} THEN updated_at ELSE %s END,
            claimed_by_id = %s
        WHERE id = COALESCE({", ".join(parts)})
          AND (status = %s OR (status = %s AND (lease_expires_at <= %s
                                                OR claimed_by_id = %s)))
        RETURNING {", ".join(connection.ops.quote_name(f.column) for f in _TASK.fields)}
        """
    claimed, me, at = (None, TaskStatus.CLAIMED), ("reviewer", None), ("now", None)
    head = [claimed,
            claimed, me, at, ("until", None),
            claimed, me, at, at,
            claimed, me, at, at,
            me]  # fmt: skip
    tail = [(None, TaskStatus.PENDING), claimed, at, me]
    return sql, [*head, *template, *tail]


@transaction.atomic
def skip_task(*, task: ReviewTask, reviewer: User) -> None:
    """Give a claimed task back to the queue for others; this reviewer is not offered it
    again. Only the reviewer holding the lease may skip it."""
    released = ReviewTask.objects.filter(
        pk=task.pk, status=TaskStatus.CLAIMED, claimed_by=reviewer
    ).update(status=TaskStatus.PENDING, claimed_by=None, lease_expires_at=None)
    if released != 1:
        raise InvariantError("this task is not held by you (its lease may have expired)")
    TaskSkip.objects.get_or_create(task=task, reviewer=reviewer)


def release_expired_leases(*, collection: Collection | None = None) -> int:
    """Return tasks whose lease ran out to ``pending``. Claiming already treats them as
    open; this tidies the status for progress counts."""
    tasks = ReviewTask.objects.filter(
        status=TaskStatus.CLAIMED, lease_expires_at__lte=timezone.now()
    )
    if collection is not None:
        tasks = tasks.filter(collection=collection)
    return tasks.update(status=TaskStatus.PENDING, claimed_by=None, lease_expires_at=None)
