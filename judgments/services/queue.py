"""The review queue: unjudged pairs queued as tasks, claimed with a lease, skipped, released."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from ..models import (
    Assessment,
    Collection,
    Query,
    ReviewTask,
    TaskSkip,
    TaskStatus,
)
from ._common import User
from .errors import InvariantError
from .pooling import queue_pairs


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
) -> ReviewTask | None:
    """Hand one open task to one reviewer, with a lease; ``None`` when the scope is empty.

    The scope is one query (``query``), the queries with one tag (``tag``), or the whole
    collection. Within it, review goes a query at a time: the open tasks of
    ``current_query_id`` (the query the reviewer is working on) come first, in priority
    order; when it has none left, the highest-priority task of a query that no other
    reviewer holds a live lease in starts the next query, and only when every query is
    held by someone the highest-priority task of any query is served.

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
    held = list(
        ReviewTask.objects.filter(
            collection=collection,
            status=TaskStatus.CLAIMED,
            claimed_by=reviewer,
            lease_expires_at__gt=now,
        ).order_by("lease_expires_at")
    )
    if held:
        in_scope = (
            held
            if not scope
            else list(ReviewTask.objects.filter(scope, pk__in=[t.pk for t in held]))
        )
        if in_scope:
            return min(in_scope, key=lambda t: t.lease_expires_at)
        ReviewTask.objects.filter(pk__in=[t.pk for t in held], claimed_by=reviewer).update(
            status=TaskStatus.PENDING, claimed_by=None, lease_expires_at=None, updated_at=now
        )
    scoped = ReviewTask.objects.filter(scope, collection=collection)
    open_tasks = scoped.exclude(skips__reviewer=reviewer)
    if collection.has_overlap:
        open_tasks = _blind_slots(open_tasks, reviewer)
    if current_query_id is not None:
        task = _claim_first(open_tasks.filter(query_id=current_query_id), reviewer, lease)
        if task is not None:
            return task
    held_by_others = ReviewTask.objects.filter(
        collection=collection, status=TaskStatus.CLAIMED, lease_expires_at__gt=now
    ).exclude(claimed_by=reviewer)
    task = _claim_first(
        open_tasks.exclude(query_id__in=held_by_others.values("query_id")), reviewer, lease
    )
    if task is not None:
        return task
    return _claim_first(open_tasks, reviewer, lease)


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
    tasks: QuerySet[ReviewTask], reviewer: User, lease: timedelta
) -> ReviewTask | None:
    """Claim the highest-priority open task among ``tasks`` by compare-and-set."""
    for _ in range(20):
        now = timezone.now()
        with transaction.atomic():
            open_tasks = tasks.filter(
                Q(status=TaskStatus.PENDING)
                | Q(status=TaskStatus.CLAIMED, lease_expires_at__lte=now)
            ).order_by("-priority", "pk")
            if connection.features.has_select_for_update_skip_locked:
                open_tasks = open_tasks.select_for_update(skip_locked=True, of=("self",))
            task = open_tasks.first()
            if task is None:
                return None
            won = ReviewTask.objects.filter(
                pk=task.pk, status=task.status, lease_expires_at=task.lease_expires_at
            ).update(
                status=TaskStatus.CLAIMED,
                claimed_by=reviewer,
                lease_expires_at=now + lease,
                claimed_at=now,
                updated_at=now,
            )
            if won == 1:
                task.status, task.claimed_by = TaskStatus.CLAIMED, reviewer
                task.lease_expires_at, task.updated_at = now + lease, now
                return task
    return None


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
