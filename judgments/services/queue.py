"""The review queue: unjudged pairs queued as tasks, claimed with a lease, skipped, released."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..models import (
    Assessment,
    Collection,
    FocusSet,
    Query,
    ReviewTask,
    TaskSkip,
    TaskStatus,
)
from ._common import User
from .errors import InvariantError
from .pooling import queue_pairs

T = ReviewTask._meta.db_table


def _db_time(now: datetime) -> object:
    return connection.ops.adapt_datetimefield_value(now)


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
    held = ReviewTask.objects.filter(
        collection=collection,
        status=TaskStatus.CLAIMED,
        claimed_by=reviewer,
        lease_expires_at__gt=now,
    )
    if scope:
        # Changing scope leaves nothing locked: what is held outside it goes back, unless
        # a task inside it is held (that one is handed back below, the rest kept).
        held.exclude(scope).filter(~Exists(held.filter(scope))).update(
            status=TaskStatus.PENDING, claimed_by=None, lease_expires_at=None, updated_at=now
        )
    held_in_scope = held.filter(scope).order_by("lease_expires_at", "pk")
    open_tasks = ReviewTask.objects.filter(scope, collection=collection).exclude(
        skips__reviewer=reviewer
    )
    if collection.has_overlap:
        open_tasks = _blind_slots(open_tasks, reviewer)
    open_tasks = open_tasks.filter(
        Q(status=TaskStatus.PENDING) | Q(status=TaskStatus.CLAIMED, lease_expires_at__lte=now)
    ).order_by("-priority", "pk")
    choices = [(held_in_scope, False)]
    if current_query_id is not None:
        choices.append((open_tasks.filter(query_id=current_query_id), True))
    held_by_others = ReviewTask.objects.filter(
        collection=collection, status=TaskStatus.CLAIMED, lease_expires_at__gt=now
    ).exclude(claimed_by=reviewer)
    choices.append((open_tasks.exclude(query_id__in=held_by_others.values("query_id")), True))
    choices.append((open_tasks, True))
    return _claim_first(choices, reviewer=reviewer, now=now, lease=lease)


def _blind_slots(tasks: QuerySet[ReviewTask], reviewer: User) -> QuerySet[ReviewTask]:
    """Several assessors per item: never offer a pair this reviewer assessed or skipped,
    nor a slot of a pair of which they hold (or held, lease expired) another slot."""
    same_pair = {"query_id": OuterRef("query_id"), "item_id": OuterRef("item_id")}
    skipped = TaskSkip.objects.filter(
        reviewer=reviewer, task__query_id=OuterRef("query_id"), task__item_id=OuterRef("item_id")
    )
    return (
        tasks.exclude(Exists(Assessment.objects.filter(assessor=reviewer, **same_pair)))
        .exclude(Exists(skipped))
        .exclude(
            Exists(
                ReviewTask.objects.filter(
                    status=TaskStatus.CLAIMED, claimed_by=reviewer, **same_pair
                ).exclude(pk=OuterRef("pk"))
            )
        )
    )


def _claim_first(
    choices: list[tuple[QuerySet[ReviewTask], bool]],
    *,
    reviewer: User,
    now: datetime,
    lease: timedelta,
) -> ReviewTask | None:
    """Claim the first task of the first choice that has one, in one statement:
    ``UPDATE … WHERE id = COALESCE((choice 1), (choice 2), …) RETURNING``, each choice
    the pk of its first task (``LIMIT 1``), and on PostgreSQL locked with ``FOR UPDATE
    SKIP LOCKED`` so that concurrent reviewers pass each other's rows instead of queueing
    behind them; COALESCE evaluates a choice only when the ones before it found nothing.
    A choice marked ``False`` is a task this reviewer holds already: handed back as it is
    (no new lease). The UPDATE checks the task is still open (compare-and-set), so no
    task is ever held by two reviewers; on SQLite the one statement is atomic anyway."""
    lock = ""
    if connection.features.has_select_for_update_skip_locked:
        lock = f" FOR UPDATE OF {connection.ops.quote_name(T)} SKIP LOCKED"
    parts, params = [], []
    for tasks, locked in choices:
        compiler = tasks.values("pk")[:1].query.get_compiler(connection=connection)
        try:
            sql, sub_params = compiler.as_sql()
        except EmptyResultSet:  # e.g. a tag no query has: this choice can find nothing
            continue
        parts.append(f"({sql}{lock if locked else ''})")
        params.extend(sub_params)
    if not parts:
        return None
    parts.append("NULL")  # COALESCE wants two arguments at least
    at, until = _db_time(now), _db_time(now + lease)
    mine = "status = %s AND claimed_by_id = %s AND lease_expires_at > %s"
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {T} SET
                status = %s,
                lease_expires_at = CASE WHEN {mine} THEN lease_expires_at ELSE %s END,
                claimed_at = CASE WHEN {mine} THEN claimed_at ELSE %s END,
                updated_at = CASE WHEN {mine} THEN updated_at ELSE %s END,
                claimed_by_id = %s
            WHERE id = COALESCE({", ".join(parts)})
              AND (status = %s OR (status = %s AND (lease_expires_at <= %s
                                                    OR claimed_by_id = %s)))
            RETURNING {", ".join(c for _, c in _COLUMNS)}
            """,
            [TaskStatus.CLAIMED,
             TaskStatus.CLAIMED, reviewer.pk, at, until,
             TaskStatus.CLAIMED, reviewer.pk, at, at,
             TaskStatus.CLAIMED, reviewer.pk, at, at,
             reviewer.pk,
             *params,
             TaskStatus.PENDING, TaskStatus.CLAIMED, at, reviewer.pk],
        )  # fmt: skip
        row = cursor.fetchone()
    if row is None:
        return None
    values = [
        _aware(v) if name in _TIMES else v for (name, _), v in zip(_COLUMNS, row, strict=True)
    ]
    task = ReviewTask.from_db(connection.alias, [name for name, _ in _COLUMNS], values)
    task.claimed_by = reviewer
    return task


_COLUMNS = [(f.attname, f.column) for f in ReviewTask._meta.concrete_fields]
_TIMES = {
    f.attname for f in ReviewTask._meta.concrete_fields if f.get_internal_type() == "DateTimeField"
}


def _aware(value: Any) -> Any:
    """A datetime from a raw row: SQLite hands back text in UTC."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    return value


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
