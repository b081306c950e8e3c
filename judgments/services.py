"""State changes for judgments: every change is one function that owns its transaction.

Each function states the invariant it keeps. History rows are written inside the same
transaction as the change they record, so a change and its history land together or
not at all.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Min, Q
from django.utils import timezone

from .formats import Bundle, CollectionRecord, JudgmentRecord, Problem, Where, describe_problems
from .locks import lock_collection, lock_query, share_collection
from .models import (
    ChangeSource,
    Collection,
    EvidenceCondition,
    Item,
    Judgment,
    JudgmentChange,
    LabelingUnit,
    Membership,
    Query,
    QueryStatus,
    QueryStatusChange,
    ReviewTask,
    Role,
    Snapshot,
    SnapshotJudgment,
    SnapshotQuery,
    SnapshotUnjudged,
    TaskSkip,
    TaskSource,
    TaskStatus,
)
from .snapshots import canonical_lines, content_hash

User = AbstractBaseUser


class VerityError(Exception):
    """A refused change. The message says what was wrong and how to fix it."""


class InvariantError(VerityError):
    """The change would break a stated invariant; nothing was changed."""


@dataclass(eq=False)  # eq=False keeps the exception hashable
class JudgmentConflict(VerityError):
    """The judgment changed since the version the edit was based on; nothing was changed."""

    query_id: str
    item_id: str
    expected_version: int | None
    current: Judgment

    def __str__(self) -> str:
        who = self.current.reviewer.get_username() if self.current.reviewer else "an import"
        based = (
            "a new judgment"
            if self.expected_version is None
            else f"version {self.expected_version}"
        )
        return (
            f"judgment of item '{self.item_id}' for query '{self.query_id}' was changed: "
            f"your edit was based on {based}, but it is now version {self.current.version}, "
            f"grade {self.current.grade}, set by {who}. Reload it and apply your change again."
        )


# -- collections --------------------------------------------------------------------------


def validate_scale(scale: Any, relevant_grade: int) -> list[dict[str, Any]]:
    """Return the scale in canonical form, or raise: ordered distinct grades ≥ 0 with names."""
    if not isinstance(scale, list) or not scale:
        raise InvariantError("scale must be a non-empty list of {grade, name} entries")
    canonical: list[dict[str, Any]] = []
    for entry in scale:
        if not isinstance(entry, dict) or "grade" not in entry or "name" not in entry:
            raise InvariantError(f"scale entry {entry!r} needs a 'grade' and a 'name'")
        grade = entry["grade"]
        if type(grade) is not int or grade < 0:
            raise InvariantError(f"scale grade {grade!r} must be an integer ≥ 0")
        name = str(entry["name"]).strip()
        if not name:
            raise InvariantError(f"scale grade {grade} needs a name")
        canonical.append({"grade": grade, "name": name})
    grades = [e["grade"] for e in canonical]
    if grades != sorted(set(grades)):
        raise InvariantError(f"scale grades must be distinct and ascending, got {grades}")
    if relevant_grade not in grades:
        raise InvariantError(
            f"relevant grade {relevant_grade} is not on the scale {grades}; pick one of them"
        )
    if relevant_grade == grades[0]:
        raise InvariantError(
            f"relevant grade {relevant_grade} is the lowest grade, so nothing could be "
            "judged non-relevant; pick a higher one"
        )
    return canonical


def create_collection(
    *,
    slug: str,
    name: str,
    scale: list[dict[str, Any]],
    relevant_grade: int,
    unit: str = LabelingUnit.DOCUMENT,
    description: str = "",
    guidelines: str = "",
    pool_depth: int = 10,
) -> Collection:
    """Create a collection whose scale is valid and whose relevant grade is on it."""
    canonical = validate_scale(scale, relevant_grade)
    if unit not in LabelingUnit.values:
        raise InvariantError(f"unit {unit!r} must be one of {', '.join(LabelingUnit.values)}")
    if type(pool_depth) is not int or pool_depth < 1:
        raise InvariantError(f"pool depth {pool_depth!r} must be a positive integer")
    if Collection.objects.filter(slug=slug).exists():
        raise InvariantError(f"a collection with slug '{slug}' exists already; choose another")
    return Collection.objects.create(
        slug=slug,
        name=name,
        scale=canonical,
        relevant_grade=relevant_grade,
        unit=unit,
        description=description,
        guidelines=guidelines,
        pool_depth=pool_depth,
    )


@transaction.atomic
def set_membership(*, collection: Collection, user: Any, role: str | None) -> Membership | None:
    """Give ``user`` exactly ``role`` in the collection, or remove them with ``None``."""
    if role is None:
        Membership.objects.filter(collection=collection, user=user).delete()
        return None
    if role not in Role.values:
        raise InvariantError(f"role {role!r} must be one of {', '.join(Role.values)}")
    membership, _ = Membership.objects.update_or_create(
        collection=collection, user=user, defaults={"role": role}
    )
    return membership


# -- judgments ----------------------------------------------------------------------------


def _check_grade(collection: Collection, grade: int, *, where: str = "") -> None:
    if type(grade) is not int or grade not in collection.grades:
        names = ", ".join(f"{g['grade']} {g['name']}" for g in collection.scale)
        raise InvariantError(f"{where}grade {grade!r} is not on the scale ({names})")


def _has_other_relevant(query: Query, *, excluding_item_id: int) -> bool:
    return (
        Judgment.objects.filter(query=query, grade__gte=query.collection.relevant_grade)
        .exclude(item_id=excluding_item_id)
        .exists()
    )


@transaction.atomic
def record_judgment(
    *,
    query: Query,
    item: Item,
    grade: int,
    reviewer: User | None,
    expected_version: int | None,
    note: str = "",
    source: str = ChangeSource.UI,
) -> Judgment:
    """Create or change the one judgment of (query, item), with its history row.

    ``expected_version`` is ``None`` to create, or the version the edit was based on;
    a stale one raises :class:`JudgmentConflict` and changes nothing (compare-and-set).
    The grade must be on the collection's scale; a relevant grade on a ``no_answer``
    query is refused, and so is removing the last relevant judgment of a ``relevant``
    query. Recording the judgment completes the pair's review task.
    """
    query = lock_query(query.pk)
    collection = query.collection
    if item.collection_id != collection.pk:
        raise InvariantError(f"item '{item.external_id}' belongs to another collection")
    _check_grade(collection, grade)
    relevant = collection.is_relevant_grade(grade)
    if relevant and query.status == QueryStatus.NO_ANSWER:
        raise InvariantError(
            f"query '{query.external_id}' is marked 'confirmed no answer', so it cannot get "
            f"a relevant judgment (grade {grade}); set its status to unreviewed first"
        )
    now = timezone.now()
    current = Judgment.objects.filter(query=query, item=item).select_related("reviewer").first()
    if expected_version is None:
        if current is not None:
            raise JudgmentConflict(query.external_id, item.external_id, None, current)
        try:
            with transaction.atomic():
                judgment = Judgment.objects.create(
                    query=query, item=item, grade=grade, reviewer=reviewer, note=note, version=1
                )
        except IntegrityError:
            current = Judgment.objects.select_related("reviewer").get(query=query, item=item)
            raise JudgmentConflict(query.external_id, item.external_id, None, current) from None
        old_grade, old_note = None, ""
    else:
        if current is None or current.version != expected_version:
            if current is None:
                raise InvariantError(
                    f"item '{item.external_id}' has no judgment for query "
                    f"'{query.external_id}' to edit; create it instead"
                )
            raise JudgmentConflict(query.external_id, item.external_id, expected_version, current)
        if (
            not relevant
            and collection.is_relevant_grade(current.grade)
            and query.status == QueryStatus.RELEVANT
            and not _has_other_relevant(query, excluding_item_id=item.pk)
        ):
            raise InvariantError(
                f"item '{item.external_id}' is the only relevant item of query "
                f"'{query.external_id}', which is marked 'has relevant items'; "
                "set the query's status to unreviewed or no answer first"
            )
        changed = Judgment.objects.filter(pk=current.pk, version=expected_version).update(
            grade=grade, note=note, reviewer=reviewer, version=F("version") + 1, updated_at=now
        )
        if changed != 1:
            current = Judgment.objects.select_related("reviewer").get(pk=current.pk)
            raise JudgmentConflict(query.external_id, item.external_id, expected_version, current)
        old_grade, old_note = current.grade, current.note
        # The compare-and-set above wrote exactly these values: no need to read them back.
        current.grade, current.note, current.reviewer = grade, note, reviewer
        current.version, current.updated_at = expected_version + 1, now
        judgment = current
    JudgmentChange.objects.create(
        query=query,
        item=item,
        old_grade=old_grade,
        new_grade=grade,
        old_note=old_note,
        new_note=note,
        version=judgment.version,
        changed_by=reviewer,
        source=source,
    )
    ReviewTask.objects.filter(query=query, item=item).exclude(status=TaskStatus.DONE).update(
        status=TaskStatus.DONE, claimed_by=None, lease_expires_at=None, updated_at=now
    )
    return judgment


@transaction.atomic
def remove_judgment(
    *,
    query: Query,
    item: Item,
    reviewer: User | None,
    expected_version: int,
    source: str = ChangeSource.UI,
) -> None:
    """Remove the judgment of (query, item), as an undo of its creation.

    Compare-and-set on ``expected_version`` like an edit; the history row records
    old → none. The pair's review task, if it had one, goes back to the queue; removing
    the last relevant judgment of a ``relevant`` query is refused.
    """
    query = lock_query(query.pk)
    current = Judgment.objects.filter(query=query, item=item).select_related("reviewer").first()
    if current is None:
        raise InvariantError(
            f"item '{item.external_id}' has no judgment for query '{query.external_id}'"
        )
    if current.version != expected_version:
        raise JudgmentConflict(query.external_id, item.external_id, expected_version, current)
    if (
        query.collection.is_relevant_grade(current.grade)
        and query.status == QueryStatus.RELEVANT
        and not _has_other_relevant(query, excluding_item_id=item.pk)
    ):
        raise InvariantError(
            f"item '{item.external_id}' is the only relevant item of query "
            f"'{query.external_id}', which is marked 'has relevant items'; "
            "set the query's status to unreviewed first"
        )
    removed, _ = Judgment.objects.filter(pk=current.pk, version=expected_version).delete()
    if removed != 1:
        current = Judgment.objects.select_related("reviewer").get(pk=current.pk)
        raise JudgmentConflict(query.external_id, item.external_id, expected_version, current)
    JudgmentChange.objects.create(
        query=query,
        item=item,
        old_grade=current.grade,
        new_grade=None,
        old_note=current.note,
        new_note="",
        version=current.version + 1,
        changed_by=reviewer,
        source=source,
    )
    ReviewTask.objects.filter(query=query, item=item, status=TaskStatus.DONE).update(
        status=TaskStatus.PENDING, updated_at=timezone.now()
    )


# -- query status and evidence ------------------------------------------------------------


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


# -- snapshots ------------------------------------------------------------------------------


def _live_canonical_lines(collection: Collection) -> Iterator[bytes]:
    queries = (
        (ext, status, groups)
        for ext, status, groups in Query.objects.filter(collection=collection)
        .values_list("external_id", "status", "evidence__groups")
        .iterator(chunk_size=5000)
    )
    judgments = Judgment.objects.filter(query__collection=collection).values_list(
        "query__external_id", "item__external_id", "grade"
    )
    unjudged = (
        ReviewTask.objects.filter(collection=collection)
        .exclude(status=TaskStatus.DONE)
        .values_list("query__external_id", "item__external_id")
    )
    return canonical_lines(
        slug=collection.slug,
        unit=collection.unit,
        relevant_grade=collection.relevant_grade,
        scale=collection.scale,
        queries=queries,
        judgments=judgments.iterator(chunk_size=20000),
        unjudged=unjudged.iterator(chunk_size=20000),
    )


def _copy_rows(sql: str, params: list[Any]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


@transaction.atomic
def freeze_snapshot(
    *, collection: Collection, by: User | None, note: str = ""
) -> tuple[Snapshot, bool]:
    """Freeze the collection's labels as version n+1; return (snapshot, created).

    The snapshot holds every judgment, every query's status and evidence condition, the
    open review tasks (unjudged markers), and the scale and relevant grade. Its hash is
    computed from the canonical form in ``snapshots.py``. If the content equals the
    latest version's, nothing is created and that version is returned with ``False``.
    Rows are copied set-based (INSERT … SELECT), so a million judgments take seconds.
    """
    collection = lock_collection(collection.pk)
    counts = {b'["query"': 0, b'["judgment"': 0, b'["unjudged"': 0}

    def counted(lines: Iterator[bytes]) -> Iterator[bytes]:
        for line in lines:
            kind = line[: line.index(b",")]
            if kind in counts:
                counts[kind] += 1
            yield line

    digest = content_hash(counted(_live_canonical_lines(collection)))
    latest = Snapshot.objects.filter(collection=collection).order_by("-number").first()
    if latest is not None and latest.content_hash == digest:
        return latest, False
    snapshot = Snapshot.objects.create(
        collection=collection,
        number=(latest.number + 1) if latest else 1,
        content_hash=digest,
        scale=collection.scale,
        relevant_grade=collection.relevant_grade,
        unit=collection.unit,
        note=note,
        n_queries=counts[b'["query"'],
        n_judgments=counts[b'["judgment"'],
        n_unjudged=counts[b'["unjudged"'],
        created_by=by,
    )
    t = {
        m.__name__: m._meta.db_table
        for m in (
            Query,
            Judgment,
            ReviewTask,
            EvidenceCondition,
            SnapshotQuery,
            SnapshotJudgment,
            SnapshotUnjudged,
        )
    }
    copied = (
        _copy_rows(
            f"INSERT INTO {t['SnapshotQuery']} (snapshot_id, query_id, status, evidence) "
            f"SELECT %s, q.id, q.status, e.groups FROM {t['Query']} q "
            f"LEFT JOIN {t['EvidenceCondition']} e ON e.query_id = q.id "
            "WHERE q.collection_id = %s",
            [snapshot.pk, collection.pk],
        ),
        _copy_rows(
            f"INSERT INTO {t['SnapshotJudgment']} (snapshot_id, query_id, item_id, grade) "
            f"SELECT %s, j.query_id, j.item_id, j.grade FROM {t['Judgment']} j "
            f"JOIN {t['Query']} q ON q.id = j.query_id WHERE q.collection_id = %s",
            [snapshot.pk, collection.pk],
        ),
        _copy_rows(
            f"INSERT INTO {t['SnapshotUnjudged']} (snapshot_id, query_id, item_id) "
            f"SELECT %s, r.query_id, r.item_id FROM {t['ReviewTask']} r "
            "WHERE r.collection_id = %s AND r.status <> %s",
            [snapshot.pk, collection.pk, TaskStatus.DONE],
        ),
    )
    expected = (snapshot.n_queries, snapshot.n_judgments, snapshot.n_unjudged)
    if copied != expected:  # the collection lock makes this unreachable; say so if not
        raise VerityError(f"snapshot copy counted {copied}, hashed {expected}; nothing saved")
    return snapshot, True


# -- review tasks ---------------------------------------------------------------------------


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

    One task per pair however many sources surface it (deduplicated across runs); each
    source label is remembered once per task with its best rank, and the task's priority
    favours the number of sources, then the best rank. A judged pair is never queued.
    Returns (unjudged pairs seen, tasks newly created). Atomic; safe to run concurrently
    with another queueing of the same pairs (one task each, every source counted).
    Ids go into IN clauses: callers pass a few hundred queries' pairs at a time.
    """
    wanted: dict[tuple[int, int], int | None] = {}
    for query_id, item_id, rank in pairs:
        key = (query_id, item_id)
        old = wanted.get(key)
        if key not in wanted or (rank is not None and (old is None or rank < old)):
            wanted[key] = rank
    if not wanted:
        return 0, 0
    share_collection(collection.pk)
    query_ids = {q for q, _ in wanted}
    # Lock the queries (in pk order, as every service does) so that no judgment of these
    # pairs commits between reading the judged pairs and queueing the rest.
    list(Query.objects.filter(pk__in=query_ids).order_by("pk").select_for_update().values("pk"))
    judged = set(Judgment.objects.filter(query_id__in=query_ids).values_list("query_id", "item_id"))
    unjudged = {k: r for k, r in wanted.items() if k not in judged}

    def read_tasks() -> dict[tuple[int, int], int]:
        return {
            (q, i): pk
            for pk, q, i in ReviewTask.objects.filter(query_id__in=query_ids).values_list(
                "pk", "query_id", "item_id"
            )
        }

    tasks = read_tasks()
    while True:
        new_tasks = [
            ReviewTask(
                collection=collection,
                query_id=query_id,
                item_id=item_id,
                source=source,
                best_rank=rank,
                priority=task_priority(best_rank=rank, n_sources=1),
            )
            for (query_id, item_id), rank in sorted(unjudged.items())  # one order: no deadlock
            if (query_id, item_id) not in tasks
        ]
        try:
            with transaction.atomic():
                created = ReviewTask.objects.bulk_create(new_tasks, batch_size=2000)
            break
        except IntegrityError:
            # Another transaction queued some of these pairs first; the insert waited for
            # it to commit, so a fresh read finds its tasks. Insert only the rest.
            known = len(tasks)
            tasks = read_tasks()
            if len(tasks) == known:
                raise
    tasks.update({(t.query_id, t.item_id): t.pk for t in created})
    # Lock the tasks (in pk order) before reading their sources, so that a concurrent
    # queueing of the same pairs counts this one's sources in the priority, not only its own.
    affected = list(
        ReviewTask.objects.filter(pk__in=[tasks[k] for k in unjudged])
        .order_by("pk")
        .select_for_update()
        .only("id", "query_id", "item_id", "best_rank", "priority", "status")
    )
    known_sources = {
        s.task_id: s
        for s in TaskSource.objects.filter(task_id__in=[t.pk for t in affected], label=source)
    }
    fresh_sources, better_sources = [], []
    for task in affected:
        rank = unjudged[(task.query_id, task.item_id)]
        known = known_sources.get(task.pk)
        if known is None:
            fresh_sources.append(TaskSource(task=task, label=source, rank=rank))
        elif rank is not None and (known.rank is None or rank < known.rank):
            known.rank = rank
            better_sources.append(known)
    TaskSource.objects.bulk_create(fresh_sources, batch_size=2000)
    TaskSource.objects.bulk_update(better_sources, ["rank"], batch_size=2000)
    stats = {
        row["task_id"]: row
        for row in TaskSource.objects.filter(task_id__in=[t.pk for t in affected])
        .values("task_id")
        .annotate(best=Min("rank"), n=Count("id"))
    }
    changed = []
    for task in affected:
        row = stats[task.pk]
        priority = task_priority(best_rank=row["best"], n_sources=row["n"])
        if (task.best_rank, task.priority) != (row["best"], priority):
            task.best_rank, task.priority = row["best"], priority
            changed.append(task)
    ReviewTask.objects.bulk_update(changed, ["best_rank", "priority"], batch_size=2000)
    return len(unjudged), len(created)


DEFAULT_LEASE = timedelta(minutes=10)


def claim_next_task(
    *, reviewer: User, collection: Collection, lease: timedelta = DEFAULT_LEASE
) -> ReviewTask | None:
    """Hand one open task to one reviewer, with a lease; ``None`` when the queue is empty.

    A reviewer who already holds a live lease gets that task back (a reload never claims
    a second one). Otherwise the highest-priority task that is pending, or whose lease
    expired, and that this reviewer has not skipped, is claimed by compare-and-set, so
    no task is ever held by two reviewers; on PostgreSQL ``SKIP LOCKED`` keeps
    concurrent reviewers from queueing behind one row.
    """
    now = timezone.now()
    held = (
        ReviewTask.objects.filter(
            collection=collection,
            status=TaskStatus.CLAIMED,
            claimed_by=reviewer,
            lease_expires_at__gt=now,
        )
        .order_by("lease_expires_at")
        .first()
    )
    if held is not None:
        return held
    for _ in range(20):
        with transaction.atomic():
            open_tasks = (
                ReviewTask.objects.filter(collection=collection)
                .filter(
                    Q(status=TaskStatus.PENDING)
                    | Q(status=TaskStatus.CLAIMED, lease_expires_at__lte=now)
                )
                .exclude(skips__reviewer=reviewer)
                .order_by("-priority", "pk")
            )
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
                updated_at=now,
            )
            if won == 1:
                task.status, task.claimed_by = TaskStatus.CLAIMED, reviewer
                task.lease_expires_at, task.updated_at = now + lease, now
                return task
        now = timezone.now()
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


# -- imports --------------------------------------------------------------------------------
# All-or-nothing imports of bundles, topics, items and qrels. ``formats.py`` reads the files
# and reports what a file gets wrong on its own; ``import_collection_data`` checks the rest
# against the collection, and writes only when nothing at all is wrong.

IMPORT_BATCH_SIZE = 1000
PROGRESS_EVERY = 10 * IMPORT_BATCH_SIZE
_LOOKUP_CHUNK = 500  # ids per ``__in`` lookup, well under every backend's parameter limit


class ImportRefused(VerityError):
    """The input has problems (each with file and line); nothing was imported."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(describe_problems(self.problems))


@dataclass
class ImportReport:
    """What an import did, for the summary a command or API prints."""

    collection: Collection
    collection_created: bool = False
    items_created: int = 0
    placeholders_created: int = 0
    placeholders_filled: int = 0
    items_skipped: int = 0
    queries_created: int = 0
    queries_skipped: int = 0
    evidence_set: int = 0
    judgments_created: int = 0
    judgments_skipped: int = 0
    statuses_set: dict[str, int] = field(default_factory=dict)
    unreviewed_with_relevant: int = 0
    unjudged_pairs: int = 0
    tasks_created: int = 0
    tasks_completed: int = 0


def _chunks(values: Iterable[Any], size: int = _LOOKUP_CHUNK) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for value in values:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _import_target(
    record: CollectionRecord | None, slug: str | None, *, create: bool
) -> tuple[Collection, bool]:
    """The collection to import into, locked, created from ``record`` when new."""
    where = record.where if record is not None else Where("command line")
    slug = slug or (record.slug if record is not None else None)
    if not slug:
        raise InvariantError("name the collection to import into, or import a bundle")
    try:
        validate_slug(slug)
    except ValidationError:
        raise ImportRefused(
            [Problem(where, f"slug {slug!r} may hold only letters, digits, '-' and '_'")]
        ) from None
    existing = Collection.objects.filter(slug=slug).first()
    if existing is None:
        if record is None:
            raise InvariantError(
                f"collection '{slug}' does not exist; create it with --create --scale ... "
                "--relevant-grade ..., or import a bundle that describes it"
            )
        try:
            collection = create_collection(
                slug=slug,
                name=record.name,
                scale=record.scale,
                relevant_grade=record.relevant_grade,
                unit=record.unit,
                description=record.description,
                guidelines=record.guidelines,
                pool_depth=record.pool_depth,
            )
        except InvariantError as e:
            raise ImportRefused([Problem(where, str(e))]) from None
        return collection, True
    if create:
        raise ImportRefused(
            [Problem(where, f"collection '{slug}' exists already; drop --create to import into it")]
        )
    # Exclusive: label writers hold the collection shared, so none runs while we import.
    collection = lock_collection(existing.pk)
    if record is not None:
        differences = _collection_differences(collection, record)
        if differences:
            raise ImportRefused(
                [
                    Problem(
                        where,
                        f"collection '{slug}' exists with {'; '.join(differences)}. An import "
                        "never changes a collection: import under a new slug "
                        "(--collection NEW-SLUG), or make this line match",
                    )
                ]
            )
    return collection, False


def _collection_differences(collection: Collection, record: CollectionRecord) -> list[str]:
    try:
        scale = validate_scale(record.scale, record.relevant_grade)
    except InvariantError as e:
        return [f"a valid scale, while this one is not ({e})"]
    stored = {
        "name": collection.name,
        "description": collection.description,
        "unit": collection.unit,
        "scale": collection.scale,
        "relevant_grade": collection.relevant_grade,
        "guidelines": collection.guidelines,
        "pool_depth": collection.pool_depth,
    }
    given = {
        "name": record.name,
        "description": record.description,
        "unit": record.unit,
        "scale": scale,
        "relevant_grade": record.relevant_grade,
        "guidelines": record.guidelines,
        "pool_depth": record.pool_depth,
    }

    def short(value: Any) -> str:
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "…"

    return [
        f"{key} {short(stored[key])} (this file: {short(given[key])})"
        for key in stored
        if stored[key] != given[key]
    ]


class _ImportPlan:
    """One import: every check first (collecting problems), then the writes.

    Runs inside the caller's transaction with the collection locked, so what the checks
    read from the database is what the writes build on.
    """

    def __init__(
        self,
        collection: Collection,
        data: Bundle,
        *,
        create_missing_items: bool,
        set_status: bool,
        by: User | None,
    ) -> None:
        self.c = collection
        self.data = data
        self.create_missing_items = create_missing_items
        self.set_status = set_status
        self.by = by
        self.now = timezone.now()
        self.problems: list[Problem] = []
        self.report = ImportReport(collection=collection)
        # external id → stored row, for the ids this import names
        self.items: dict[str, Item] = {}
        self.queries: dict[str, Query] = {}
        self.evidence: dict[int, list[list[str]]] = {}  # query pk → stored groups
        self.stored: dict[tuple[int, int], tuple[int, int, str | None]] = {}
        self.users: dict[str, Any] = {}
        # what the import will write
        self.new_items: list[Item] = []
        self.filled_items: list[Item] = []
        self.placeholders: dict[str, None] = {}  # ordered set of item ids
        self.new_queries: list[Query] = []
        self.new_evidence: dict[str, list[list[str]]] = {}
        self.new_judgments: list[JudgmentRecord] = []
        self.claims: dict[str, tuple[str, Where | None]] = {}  # query id → (status, where)
        self.new_item_ids: set[str] = set()
        self.new_query_ids: set[str] = set()
        self.unknown: dict[tuple[str, str], list[Where]] = defaultdict(list)

    # -- checks ---------------------------------------------------------------------------

    def check(self) -> None:
        self._load()
        self._check_items()
        self._check_queries()
        self._check_judgments()
        self._check_unjudged()
        self._check_evidence()
        self._check_statuses()
        self._report_unknown()

    def _problem(self, where: Where, message: str) -> None:
        self.problems.append(Problem(where, message))

    def _load(self) -> None:
        d = self.data
        query_ids = {r.id for r in d.queries} | {s.query for s in d.statuses}
        query_ids |= {r.query for r in d.judgments} | {r.query for r in d.unjudged}
        item_ids = {r.id for r in d.items} | {r.item for r in d.judgments}
        item_ids |= {r.item for r in d.unjudged}
        item_ids |= {i for r in d.queries for g in r.evidence or [] for i in g}
        for chunk in _chunks(sorted(item_ids)):
            for item in Item.objects.filter(collection=self.c, external_id__in=chunk):
                self.items[item.external_id] = item
        for chunk in _chunks(sorted(query_ids)):
            for query in Query.objects.filter(collection=self.c, external_id__in=chunk):
                self.queries[query.external_id] = query
        query_pks = [q.pk for q in self.queries.values()]
        username = get_user_model().USERNAME_FIELD
        for chunk in _chunks(query_pks):
            for query_pk, groups in EvidenceCondition.objects.filter(
                query_id__in=chunk
            ).values_list("query_id", "groups"):
                self.evidence[query_pk] = groups
            for query_pk, item_pk, grade, version, who in Judgment.objects.filter(
                query_id__in=chunk
            ).values_list("query_id", "item_id", "grade", "version", f"reviewer__{username}"):
                self.stored[(query_pk, item_pk)] = (grade, version, who)
        names = sorted({r.reviewer for r in d.judgments if r.reviewer})
        for chunk in _chunks(names):
            for user in get_user_model().objects.filter(**{f"{username}__in": chunk}):
                self.users[user.get_username()] = user

    def _check_items(self) -> None:
        for r in self.data.items:
            stored = self.items.get(r.id)
            if stored is None:
                self.new_items.append(
                    Item(
                        collection=self.c,
                        external_id=r.id,
                        title=r.title,
                        text=r.text,
                        url=r.url,
                        metadata=r.metadata,
                        placeholder=r.placeholder,
                    )
                )
                continue
            mine = (r.title, r.text, r.url, r.metadata, r.placeholder)
            theirs = (stored.title, stored.text, stored.url, stored.metadata, stored.placeholder)
            if mine == theirs or r.placeholder:
                self.report.items_skipped += 1
            elif stored.placeholder:
                stored.title, stored.text, stored.url = r.title, r.text, r.url
                stored.metadata, stored.placeholder = r.metadata, False
                self.filled_items.append(stored)
            else:
                fields = ("title", "text", "url", "metadata")
                differ = [f for f, a, b in zip(fields, mine, theirs, strict=False) if a != b]
                self._problem(
                    r.where,
                    f"item '{r.id}' exists in collection '{self.c.slug}' with a different "
                    f"{', '.join(differ)}. An import never overwrites an item: give the new "
                    "version a new id, or remove this line to keep the stored one",
                )
        self.new_item_ids = {i.external_id for i in self.new_items}

    def _check_queries(self) -> None:
        for r in self.data.queries:
            groups = normalize_evidence(r.evidence) if r.evidence is not None else None
            stored = self.queries.get(r.id)
            if stored is None:
                self.new_queries.append(
                    Query(collection=self.c, external_id=r.id, text=r.text, tags=r.tags)
                )
                if groups is not None:
                    self.new_evidence[r.id] = groups
            elif (stored.text, stored.tags) != (r.text, r.tags):
                differ = "text" if stored.text != r.text else "tags"
                self._problem(
                    r.where,
                    f"query '{r.id}' exists in collection '{self.c.slug}' with different "
                    f"{differ}. An import never overwrites a query: give the new one a new "
                    "id, or remove this line to keep the stored one",
                )
            else:
                self.report.queries_skipped += 1
                held = self.evidence.get(stored.pk)
                if groups is None or groups == held:
                    pass
                elif held is None:
                    self.new_evidence[r.id] = groups
                else:
                    self._problem(
                        r.where,
                        f"query '{r.id}' has the evidence condition {held} stored; this line "
                        f"says {groups}. Change it in the review screen, or drop 'evidence' "
                        "from this line",
                    )
            self._claim(r.id, r.status, r.where)
        self.new_query_ids = {q.external_id for q in self.new_queries}

    def _known(self, kind: str, external_id: str, where: Where) -> bool:
        """Is the query or item stored or imported? Remember it as unknown if not.

        With ``create_missing_items`` an unknown item becomes a placeholder instead.
        """
        if kind == "query":
            if external_id in self.queries or external_id in self.new_query_ids:
                return True
        else:
            if external_id in self.items or external_id in self.new_item_ids:
                return True
            if self.create_missing_items:
                self.placeholders[external_id] = None
                return True
        self.unknown[(kind, external_id)].append(where)
        return False

    def _check_judgments(self) -> None:
        c = self.c
        scale = ", ".join(f"{g['grade']} {g['name']}" for g in c.scale)
        for r in self.data.judgments:
            ok = self._known("query", r.query, r.where)
            ok = self._known("item", r.item, r.where) and ok
            if r.grade not in c.grades:
                ok = False
                self._problem(
                    r.where,
                    f"grade {r.grade} is not on the scale of collection '{c.slug}' ({scale}); "
                    "use one of those grades (in qrels, -1 marks pooled but unjudged)",
                )
            if r.reviewer is not None and r.reviewer not in self.users:
                ok = False
                self.unknown[("reviewer", r.reviewer)].append(r.where)
            if not ok:
                continue
            query, item = self.queries.get(r.query), self.items.get(r.item)
            held = self.stored.get((query.pk, item.pk)) if query and item else None
            if held is None:
                self.new_judgments.append(r)
            elif held[0] == r.grade:
                self.report.judgments_skipped += 1
            else:
                grade, version, who = held
                self._problem(
                    r.where,
                    f"query '{r.query}' item '{r.item}' is already judged grade {grade} "
                    f"(version {version}, by {who or 'an import'}); this line says grade "
                    f"{r.grade}. An import never overwrites a judgment: change it in the "
                    "review screen (which keeps its history), or remove this line to keep "
                    "the stored grade",
                )

    def _check_unjudged(self) -> None:
        for r in self.data.unjudged:
            self._known("query", r.query, r.where)
            self._known("item", r.item, r.where)

    def _check_evidence(self) -> None:
        known = set(self.items) | self.new_item_ids | set(self.placeholders)
        wheres = {r.id: r.where for r in self.data.queries}
        for query_id, groups in self.new_evidence.items():
            missing = sorted({i for g in groups for i in g} - known)
            if missing:
                self._problem(
                    wheres[query_id],
                    f"the evidence condition names unknown item(s) "
                    f"{', '.join(map(repr, missing))}; add an item record for each, or fix "
                    "the ids",
                )

    def _claim(self, query_id: str, status: str, where: Where) -> None:
        """A status the input gives a query: set if the query is unreviewed, else equal."""
        if status not in QueryStatus.values:
            self._problem(
                where,
                f"status {status!r} is not one of {', '.join(QueryStatus.values)}; use one of them",
            )
            return
        if status == QueryStatus.UNREVIEWED:
            return  # no claim: an import never takes a reviewed status back
        earlier = self.claims.get(query_id)
        if earlier is not None and earlier[0] != status:
            self._problem(
                where,
                f"query '{query_id}' is given status '{status}' here and '{earlier[0]}' at "
                f"{earlier[1]}; keep one",
            )
            return
        stored = self.queries.get(query_id)
        stored_status = stored.status if stored else QueryStatus.UNREVIEWED
        if stored_status == status:
            return
        if stored_status != QueryStatus.UNREVIEWED:
            self._problem(
                where,
                f"query '{query_id}' is stored with status '{stored_status}'; this line says "
                f"'{status}'. An import never changes a reviewed status: change it in the "
                "review screen, or remove the status from this line",
            )
            return
        self.claims[query_id] = (status, where)

    def _check_statuses(self) -> None:
        c = self.c
        for r in self.data.statuses:
            if self._known("query", r.query, r.where):
                self._claim(r.query, r.status, r.where)
        relevant: Counter[str] = Counter()
        by_pk = {q.pk: q.external_id for q in self.queries.values()}
        for (query_pk, _), (grade, _, _) in self.stored.items():
            if c.is_relevant_grade(grade):
                relevant[by_pk[query_pk]] += 1
        for r in self.new_judgments:
            if c.is_relevant_grade(r.grade):
                relevant[r.query] += 1
                stored = self.queries.get(r.query)
                if stored is not None and stored.status == QueryStatus.NO_ANSWER:
                    self._problem(
                        r.where,
                        f"query '{r.query}' is marked 'confirmed no answer', so it cannot get "
                        f"a relevant judgment (grade {r.grade}); set its status to unreviewed "
                        "in the review screen first, or grade this item below "
                        f"{c.relevant_grade}",
                    )
        touched = {r.query for r in self.data.judgments} | {r.id for r in self.data.queries}
        for query_id in sorted(touched):
            stored = self.queries.get(query_id)
            stored_status = stored.status if stored else QueryStatus.UNREVIEWED
            if (
                stored_status == QueryStatus.UNREVIEWED
                and query_id not in self.claims
                and relevant[query_id]
            ):
                if self.set_status:
                    self.claims[query_id] = (QueryStatus.RELEVANT, None)
                else:
                    self.report.unreviewed_with_relevant += 1
        for query_id, (status, where) in self.claims.items():
            n = relevant[query_id]
            if status == QueryStatus.RELEVANT and not n and where is not None:
                self._problem(
                    where,
                    f"status 'relevant' needs a relevant judgment, but query '{query_id}' has "
                    f"none (grade ≥ {c.relevant_grade}) in the collection or this import; add "
                    "one, or leave the status unreviewed",
                )
            elif status == QueryStatus.NO_ANSWER and n and where is not None:
                self._problem(
                    where,
                    f"status 'no_answer' (confirmed no answer), but query '{query_id}' has {n} "
                    f"relevant judgment(s) (grade ≥ {c.relevant_grade}); regrade them, or "
                    "leave the status unreviewed",
                )

    def _report_unknown(self) -> None:
        slug = self.c.slug
        fixes = {
            "query": "add it with --queries FILE (TREC topics or JSONL query records)",
            "item": "add an item record for it (in the bundle or an --items file), or pass "
            "--create-missing-items to create it as a placeholder (id only, no text)",
        }
        first_of_kind: dict[str, Where] = {}
        for (kind, name), wheres in self.unknown.items():
            more = f" (on {len(wheres)} lines; this is the first)" if len(wheres) > 1 else ""
            first = first_of_kind.setdefault(kind, wheres[0])
            if first is not wheres[0]:  # the fix was given once, in full
                message = f"unknown {kind} '{name}'{more}; see {first} for the fix"
            elif kind == "reviewer":
                message = (
                    f"unknown reviewer '{name}': no user has that username{more}; create the "
                    'user first, or set "reviewer" to null'
                )
            else:
                message = (
                    f"unknown {kind} '{name}': it is neither in collection '{slug}' nor in "
                    f"this import{more}; {fixes[kind]}"
                )
            self._problem(wheres[0], message)

    # -- writes ---------------------------------------------------------------------------

    def _bulk_create(
        self,
        model: Any,
        rows: list[Any],
        what: str,
        progress: Callable[[str], None] | None,
    ) -> None:
        for start in range(0, len(rows), IMPORT_BATCH_SIZE):
            model.objects.bulk_create(rows[start : start + IMPORT_BATCH_SIZE])
            done = min(start + IMPORT_BATCH_SIZE, len(rows))
            if progress is not None and (done % PROGRESS_EVERY == 0 or done == len(rows)):
                progress(f"{what}: {done}/{len(rows)}")

    def write(self, progress: Callable[[str], None] | None) -> ImportReport:
        c, by, now, report = self.c, self.by, self.now, self.report
        items = self.new_items + [
            Item(collection=c, external_id=i, placeholder=True) for i in self.placeholders
        ]
        self._bulk_create(Item, items, "items", progress)
        Item.objects.bulk_update(
            self.filled_items,
            ["title", "text", "url", "metadata", "placeholder"],
            batch_size=IMPORT_BATCH_SIZE,
        )
        self.items.update((i.external_id, i) for i in items)
        report.items_created = len(self.new_items)
        report.placeholders_created = len(self.placeholders)
        report.placeholders_filled = len(self.filled_items)

        changes: list[QueryStatusChange] = []
        for query in self.new_queries:
            status, _ = self.claims.get(query.external_id, (QueryStatus.UNREVIEWED, None))
            if status != QueryStatus.UNREVIEWED:
                query.status, query.status_changed_by, query.status_changed_at = status, by, now
        self._bulk_create(Query, self.new_queries, "queries", progress)
        self.queries.update((q.external_id, q) for q in self.new_queries)
        report.queries_created = len(self.new_queries)
        for query_id, (status, _) in sorted(self.claims.items()):
            query = self.queries[query_id]
            if query_id not in self.new_query_ids:
                Query.objects.filter(pk=query.pk).update(
                    status=status, status_changed_by=by, status_changed_at=now
                )
            changes.append(
                QueryStatusChange(
                    query=query,
                    old_status=QueryStatus.UNREVIEWED,
                    new_status=status,
                    changed_by=by,
                    source=ChangeSource.IMPORT,
                )
            )
            report.statuses_set[status] = report.statuses_set.get(status, 0) + 1
        self._bulk_create(QueryStatusChange, changes, "status changes", progress)

        evidence = [
            EvidenceCondition(query=self.queries[q], groups=groups, updated_by=by)
            for q, groups in self.new_evidence.items()
        ]
        self._bulk_create(EvidenceCondition, evidence, "evidence conditions", progress)
        report.evidence_set = len(evidence)

        judgments, history = [], []
        for r in self.new_judgments:
            query, item = self.queries[r.query], self.items[r.item]
            reviewer = self.users.get(r.reviewer) if r.reviewer else None
            judgments.append(
                Judgment(
                    query=query, item=item, grade=r.grade, reviewer=reviewer, note=r.note, version=1
                )
            )
            history.append(
                JudgmentChange(
                    query=query,
                    item=item,
                    old_grade=None,
                    new_grade=r.grade,
                    new_note=r.note,
                    version=1,
                    changed_by=reviewer or by,
                    source=ChangeSource.IMPORT,
                )
            )
        self._bulk_create(Judgment, judgments, "judgments", progress)
        self._bulk_create(JudgmentChange, history, "judgment history", progress)
        report.judgments_created = len(judgments)

        # A judged pair's review task is done, as when a reviewer records it.
        judged = {(j.query_id, j.item_id) for j in judgments}
        done = []
        for chunk in _chunks(sorted({q for q, _ in judged})):
            done += [
                pk
                for pk, q, i in ReviewTask.objects.filter(query_id__in=chunk)
                .exclude(status=TaskStatus.DONE)
                .values_list("pk", "query_id", "item_id")
                if (q, i) in judged
            ]
        for chunk in _chunks(done):
            ReviewTask.objects.filter(pk__in=chunk).update(
                status=TaskStatus.DONE, claimed_by=None, lease_expires_at=None, updated_at=now
            )
        report.tasks_completed = len(done)

        by_source: dict[str, list[tuple[int, int, int | None]]] = defaultdict(list)
        for r in self.data.unjudged:
            pair = (self.queries[r.query].pk, self.items[r.item].pk, r.rank)
            by_source[r.source].append(pair)
        for source, pairs in sorted(by_source.items()):
            seen, created = queue_unjudged(collection=c, pairs=pairs, source=source)
            report.unjudged_pairs += seen
            report.tasks_created += created
        return report


@transaction.atomic
def import_collection_data(
    *,
    data: Bundle,
    collection_slug: str | None = None,
    create: bool = False,
    create_missing_items: bool = False,
    set_status: bool = False,
    by: User | None = None,
    progress: Callable[[str], None] | None = None,
) -> ImportReport:
    """Import items, queries, judgments, statuses and unjudged pairs: all or nothing.

    The target is ``collection_slug`` (or the bundle's slug): created from
    ``data.collection`` when new, else it must exist and, when ``data.collection`` is
    given, match it field by field; ``create=True`` insists that it is new. Every check
    runs before any write, and any problem raises :class:`ImportRefused` listing them with
    file and line, leaving the database as it was. Stored data is never overwritten: an
    identical item, query or judgment is skipped and counted, a different one is refused;
    placeholder items are filled in. Queries must be known (stored or imported); unknown
    items are refused unless ``create_missing_items`` makes them placeholders. Statuses
    keep the ``set_query_status`` invariants, and only an unreviewed query gets one;
    ``set_status`` marks each unreviewed query of the import that has a relevant
    judgment ``relevant``. History: a ``JudgmentChange`` (source import, version 1, by
    the record's reviewer, else ``by``) per judgment and a ``QueryStatusChange`` per
    status set. Imported judgments complete their pairs' review tasks; unjudged records
    (qrels grade -1) are queued through ``queue_unjudged``.
    """
    collection, created = _import_target(data.collection, collection_slug, create=create)
    plan = _ImportPlan(
        collection,
        data,
        create_missing_items=create_missing_items,
        set_status=set_status,
        by=by,
    )
    plan.check()
    if plan.problems:
        raise ImportRefused(plan.problems)
    try:
        report = plan.write(progress)
    except IntegrityError as e:  # a concurrent writer that does not lock the collection
        raise VerityError(
            f"the collection changed while importing ({e}); nothing was imported, run the "
            "import again"
        ) from None
    report.collection_created = created
    return report


# -- review UI ------------------------------------------------------------------------------


@dataclass(frozen=True)
class UndoneChange:
    """What ``undo_judgment_change`` did: the change it undid, the judgment as restored
    (``None`` when the undo removed it), and the review task handed back to the reviewer
    when the removal reopened one."""

    change: JudgmentChange
    judgment: Judgment | None
    task: ReviewTask | None


@transaction.atomic
def undo_judgment_change(
    *, change: JudgmentChange, reviewer: User, lease: timedelta = DEFAULT_LEASE
) -> UndoneChange:
    """Undo one of the reviewer's own judgment changes, when nothing has changed it since.

    Only the pair's latest change can be undone, and only while the judgment is still at
    the version that change made (a removal and re-creation resets versions, so both are
    checked); otherwise :class:`JudgmentConflict` (or :class:`InvariantError` when the
    judgment is gone) and nothing changes. A creation is undone with ``remove_judgment``,
    an edit with ``record_judgment`` restoring the old grade and note: the same
    compare-and-set and invariants, and a history row of its own. When the removal puts
    the pair's review task back in the queue, it is claimed for this reviewer (with a
    lease) so that they can judge it again at once.
    """
    if change.changed_by_id != reviewer.pk:
        raise InvariantError("you can only undo your own changes")
    if change.new_grade is None:
        raise InvariantError(
            f"that change already removed the judgment of item '{change.item.external_id}'; "
            "judge the item again instead"
        )
    query = lock_query(change.query_id)
    item = change.item
    latest = (
        JudgmentChange.objects.filter(query=query, item=item).order_by("-pk").values("pk").first()
    )
    current = Judgment.objects.filter(query=query, item=item).select_related("reviewer").first()
    if latest is None or latest["pk"] != change.pk:
        if current is None:
            raise InvariantError(
                f"the judgment of item '{item.external_id}' for query '{query.external_id}' "
                "was removed since; there is nothing to undo"
            )
        raise JudgmentConflict(query.external_id, item.external_id, change.version, current)
    if change.old_grade is None:
        remove_judgment(
            query=query,
            item=item,
            reviewer=reviewer,
            expected_version=change.version,
            source=ChangeSource.UI,
        )
        now = timezone.now()
        task = ReviewTask.objects.filter(query=query, item=item, status=TaskStatus.PENDING).first()
        if task is not None:
            ReviewTask.objects.filter(pk=task.pk, status=TaskStatus.PENDING).update(
                status=TaskStatus.CLAIMED,
                claimed_by=reviewer,
                lease_expires_at=now + lease,
                updated_at=now,
            )
            task.refresh_from_db()
        return UndoneChange(change=change, judgment=None, task=task)
    judgment = record_judgment(
        query=query,
        item=item,
        grade=change.old_grade,
        note=change.old_note,
        reviewer=reviewer,
        expected_version=change.version,
        source=ChangeSource.UI,
    )
    return UndoneChange(change=change, judgment=judgment, task=None)


# -- api ------------------------------------------------------------------------------------


def record_judgment_once(
    *,
    query: Query,
    item: Item,
    grade: int,
    reviewer: User | None,
    client_key: str | None,
    note: str = "",
    source: str = ChangeSource.API,
) -> tuple[Judgment, bool]:
    """Create the judgment of (query, item), at most once per client key; return
    (judgment, created).

    A retried create that carries the key of a stored judgment of the same pair returns
    that judgment as it is now (``created`` False) instead of a conflict or a duplicate;
    a key stored for any other judgment is refused. Without a key it is
    ``record_judgment(expected_version=None)``. The query lock serialises retries of one
    pair, so two concurrent sends of one key create one judgment.
    """
    with transaction.atomic():
        query = lock_query(query.pk)
        if client_key is not None:
            stored = Judgment.objects.filter(client_key=client_key).first()
            if stored is not None:
                if (stored.query_id, stored.item_id) != (query.pk, item.pk):
                    # Say nothing about the other judgment: it may be in a collection
                    # that this client cannot see.
                    raise InvariantError(
                        f"the client key '{client_key}' was already used for another "
                        "judgment; send a new key (e.g. a UUID) with each new judgment"
                    )
                return stored, False
        judgment = record_judgment(
            query=query,
            item=item,
            grade=grade,
            reviewer=reviewer,
            expected_version=None,
            note=note,
            source=source,
        )
        if client_key is not None:
            try:
                with transaction.atomic():
                    Judgment.objects.filter(pk=judgment.pk).update(client_key=client_key)
            except IntegrityError:
                raise InvariantError(
                    f"the client key '{client_key}' was used for another judgment at the "
                    "same moment; send a new key with each new judgment"
                ) from None
            judgment.client_key = client_key
        return judgment, True


def judge_task(
    *,
    task: ReviewTask,
    reviewer: User,
    grade: int,
    note: str = "",
    client_key: str | None = None,
    source: str = ChangeSource.API,
) -> tuple[Judgment, bool]:
    """Record the judgment of a review task's pair; return (judgment, created).

    Refused while another reviewer holds the task's live lease. Recording completes the
    task (``record_judgment``); a pair judged meanwhile raises :class:`JudgmentConflict`,
    unless ``client_key`` names that very judgment (a retry), which is returned as it is.
    """
    with transaction.atomic():
        lock_query(task.query_id)  # the lock order of every label change: query, then task
        task = (
            ReviewTask.objects.select_for_update(of=("self",))
            .select_related("claimed_by", "query", "item")
            .get(pk=task.pk)
        )
        if (
            task.status == TaskStatus.CLAIMED
            and task.claimed_by_id != reviewer.pk
            and task.lease_expires_at is not None
            and task.lease_expires_at > timezone.now()
        ):
            holder = task.claimed_by.get_username() if task.claimed_by else "another reviewer"
            raise InvariantError(
                f"this task is claimed by {holder} until {task.lease_expires_at:%H:%M:%S} UTC; "
                "claim another one, or wait for the lease to expire"
            )
        return record_judgment_once(
            query=task.query,
            item=task.item,
            grade=grade,
            reviewer=reviewer,
            client_key=client_key,
            note=note,
            source=source,
        )


COLLECTION_SETTINGS = ("name", "description", "guidelines", "pool_depth")


@transaction.atomic
def update_collection_settings(*, collection: Collection, **changes: Any) -> Collection:
    """Change a collection's descriptive settings: name, description, guidelines, pool depth.

    The scale, relevant grade and unit are not settings: they fix what every stored
    judgment and snapshot means, so they are set once, when the collection is created.
    """
    unknown = sorted(set(changes) - set(COLLECTION_SETTINGS))
    if unknown:
        raise InvariantError(
            f"{', '.join(unknown)} cannot be changed; the settings are "
            f"{', '.join(COLLECTION_SETTINGS)} (scale, relevant grade and unit are fixed)"
        )
    if "name" in changes and not str(changes["name"]).strip():
        raise InvariantError("name must not be empty")
    depth = changes.get("pool_depth", collection.pool_depth)
    if type(depth) is not int or depth < 1:
        raise InvariantError(f"pool depth {depth!r} must be a positive integer")
    collection = lock_collection(collection.pk)
    if changes:
        for name, value in changes.items():
            setattr(collection, name, value)
        collection.save(update_fields=list(changes))
    return collection


@transaction.atomic
def set_member_role(*, collection: Collection, user: Any, role: str | None) -> Membership | None:
    """``set_membership``, keeping at least one admin member in a collection that has one.

    Demoting or removing the last admin is refused: nobody but a superuser could manage
    the members afterwards.
    """
    collection = lock_collection(collection.pk)  # one member change at a time
    current = Membership.objects.filter(collection=collection, user=user).first()
    if (
        current is not None
        and current.role == Role.ADMIN
        and role != Role.ADMIN
        and not Membership.objects.filter(collection=collection, role=Role.ADMIN)
        .exclude(pk=current.pk)
        .exists()
    ):
        raise InvariantError(
            f"{user.get_username()} is the last admin of '{collection.slug}'; make another "
            "member admin first"
        )
    return set_membership(collection=collection, user=user, role=role)


def create_api_token(*, user: Any, rotate: bool = False) -> Any:
    """Give ``user`` an API token (``rest_framework.authtoken``: one per user); return it.

    A user who has one already is refused unless ``rotate``, which revokes the old key in
    the same transaction, so scripts never hold two valid keys by accident.
    """
    from rest_framework.authtoken.models import Token

    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        existing = Token.objects.filter(user=user).first()
        if existing is not None:
            if not rotate:
                raise InvariantError(
                    f"{user.get_username()} has an API token already (created "
                    f"{existing.created:%Y-%m-%d %H:%M} UTC); revoke it first, or rotate it"
                )
            existing.delete()
        return Token.objects.create(user=user)


def revoke_api_token(*, user: Any) -> bool:
    """Delete ``user``'s API token; scripts using it get 401 from now on. Returns whether
    there was one."""
    from rest_framework.authtoken.models import Token

    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)
