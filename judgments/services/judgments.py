"""Judgments: record, remove and undo one (query, item) judgment, with its history row.

Every change is compare-and-set on the judgment's version and writes its
``JudgmentChange`` in the same transaction; recording a judgment completes the pair's
review task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NoReturn

from django.db import transaction
from django.utils import timezone

from verity_limits import NOTE_MAX

from ..locks import lock_query
from ..models import (
    ChangeSource,
    Collection,
    Item,
    Judgment,
    JudgmentChange,
    Query,
    QueryStatus,
    ReviewTask,
    TaskStatus,
)
from ._common import User
from .errors import InvariantError, JudgmentConflict
from .judgment_writes import insert_judgment, update_judgment
from .pool_arms import observe_judgment
from .queue import DEFAULT_LEASE


def _check_grade(collection: Collection, grade: int, *, where: str = "") -> None:
    if type(grade) is not int or grade not in collection.grades:
        names = ", ".join(f"{g['grade']} {g['name']}" for g in collection.scale)
        raise InvariantError(f"{where}grade {grade!r} is not on the scale ({names})")


def _refuse_dropping_last_relevant(query: Query, item: Item) -> None:
    """A ``relevant`` query keeps at least one relevant judgment: refuse to regrade or
    remove its last one (the caller knows the pair's judgment is relevant now)."""
    if query.status != QueryStatus.RELEVANT:
        return
    others = Judgment.objects.filter(query=query, grade__gte=query.collection.relevant_grade)
    if not others.exclude(item_id=item.pk).exists():
        raise InvariantError(
            f"item '{item.external_id}' is the only relevant item of query "
            f"'{query.external_id}', which is marked 'has relevant items'; "
            "set the query's status to unreviewed first"
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
    on_saved: Callable[[Judgment], None] | None = None,
) -> Judgment:
    """Create or change the one judgment of (query, item), with its history row.

    ``expected_version`` is ``None`` to create, or the version the edit was based on;
    a stale one raises :class:`JudgmentConflict` and changes nothing (compare-and-set).
    The grade must be on the collection's scale; a relevant grade on a ``no_answer``
    query is refused, and so is removing the last relevant judgment of a ``relevant``
    query. Recording the judgment completes the pair's review task. ``on_saved`` is
    called with the stored judgment inside the same transaction (what it writes is
    stored with the judgment or not at all; if it raises, neither is).
    """
    judgment = _record(
        query=lock_query(query.pk),
        item=item,
        grade=grade,
        reviewer=reviewer,
        expected_version=expected_version,
        note=note,
        source=source,
    )
    if on_saved is not None:
        on_saved(judgment)
    return judgment


def _record(
    *,
    query: Query,
    item: Item,
    grade: int,
    reviewer: User | None,
    expected_version: int | None,
    note: str,
    source: str,
    client_key: str | None = None,
) -> Judgment:
    """``record_judgment`` for a caller that holds ``query``'s lock (``lock_query``);
    ``client_key`` goes into the new judgment's row (creates only)."""
    collection = query.collection
    if item.collection_id != collection.pk:
        raise InvariantError(f"item '{item.external_id}' belongs to another collection")
    _check_new_grade(query, grade, note)
    relevant = collection.is_relevant_grade(grade)
    now = timezone.now()
    current = Judgment.objects.filter(query=query, item=item).select_related("reviewer").first()
    if expected_version is None:
        if current is not None:
            raise JudgmentConflict(query.external_id, item.external_id, None, current)
        made = insert_judgment(
            query_id=query.pk,
            item_id=item.pk,
            grade=grade,
            note=note,
            reviewer_id=reviewer.pk if reviewer is not None else None,
            client_key=client_key,
            source=source,
            now=now,
        )
        if made is None:
            _refused_create(query, item, client_key)
        return _created(made, query, item, grade, reviewer, note, client_key, now)
    else:
        if current is None or current.version != expected_version:
            if current is None:
                raise InvariantError(
                    f"item '{item.external_id}' has no judgment for query "
                    f"'{query.external_id}' to edit; create it instead"
                )
            raise JudgmentConflict(query.external_id, item.external_id, expected_version, current)
        if not relevant and collection.is_relevant_grade(current.grade):
            _refuse_dropping_last_relevant(query, item)
        change_id = _compare_and_set(
            current, expected_version, grade, note, reviewer, source=source, now=now
        )
        if change_id is None:
            current = Judgment.objects.select_related("reviewer").get(pk=current.pk)
            raise JudgmentConflict(query.external_id, item.external_id, expected_version, current)
        current.query, current.item = query, item
        current.change_id = change_id  # type: ignore[attr-defined]  # the history row written
        return current


def _check_new_grade(query: Query, grade: int, note: str) -> None:
    """What a new grade must be: on the scale, its note not too long, and not relevant for
    a query confirmed to have no answer."""
    collection = query.collection
    _check_grade(collection, grade)
    if len(note) > NOTE_MAX:
        raise InvariantError(
            f"the note is {len(note):,} characters long; notes have at most {NOTE_MAX:,}"
        )
    if collection.is_relevant_grade(grade) and query.status == QueryStatus.NO_ANSWER:
        raise InvariantError(
            f"query '{query.external_id}' is marked 'confirmed no answer', so it cannot get "
            f"a relevant judgment (grade {grade}); set its status to unreviewed first"
        )


def _created(
    made: tuple[int, int],
    query: Query,
    item: Item,
    grade: int,
    reviewer: User | None,
    note: str,
    client_key: str | None,
    now: Any,
) -> Judgment:
    """The judgment ``insert_judgment`` just wrote (``made``: its pk and its history row's),
    built without reading it back; the collection's pooling arms hear of its grade."""
    pk, change_id = made
    observe_judgment(collection=query.collection, query_id=query.pk, item_id=item.pk, grade=grade)
    judgment = Judgment(
        pk=pk,
        query=query,
        item=item,
        grade=grade,
        reviewer=reviewer,
        note=note,
        version=1,
        client_key=client_key,
        created_at=now,
        updated_at=now,
    )
    judgment.change_id = change_id  # type: ignore[attr-defined]  # the history row written
    return judgment


def _refused_create(query: Query, item: Item, client_key: str | None) -> NoReturn:
    """A create that a unique constraint refused: the pair was judged meanwhile (a
    conflict naming that judgment), or the client key was taken by another one."""
    current = Judgment.objects.select_related("reviewer").filter(query=query, item=item).first()
    if current is None:  # not the pair: the client key, taken meanwhile
        raise InvariantError(
            f"the client key '{client_key}' was used for another judgment at the "
            "same moment; send a new key with each new judgment"
        )
    raise JudgmentConflict(query.external_id, item.external_id, None, current)


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
    _remove(
        query=lock_query(query.pk),
        item=item,
        reviewer=reviewer,
        expected_version=expected_version,
        source=source,
    )


def _remove(
    *, query: Query, item: Item, reviewer: User | None, expected_version: int, source: str
) -> None:
    """``remove_judgment`` for a caller that holds ``query``'s lock."""
    current = Judgment.objects.filter(query=query, item=item).select_related("reviewer").first()
    if current is None:
        raise InvariantError(
            f"item '{item.external_id}' has no judgment for query '{query.external_id}'"
        )
    if current.version != expected_version:
        raise JudgmentConflict(query.external_id, item.external_id, expected_version, current)
    if query.collection.is_relevant_grade(current.grade):
        _refuse_dropping_last_relevant(query, item)
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
        _remove(
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
                claimed_at=now,
                updated_at=now,
            )
            task.refresh_from_db()
        return UndoneChange(change=change, judgment=None, task=task)
    judgment = _record(
        query=query,
        item=item,
        grade=change.old_grade,
        note=change.old_note,
        reviewer=reviewer,
        expected_version=change.version,
        source=ChangeSource.UI,
    )
    return UndoneChange(change=change, judgment=judgment, task=None)


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
        return _record_once(
            query=lock_query(query.pk),
            item=item,
            grade=grade,
            reviewer=reviewer,
            client_key=client_key,
            note=note,
            source=source,
        )


def _record_once(
    *,
    query: Query,
    item: Item,
    grade: int,
    reviewer: User | None,
    client_key: str | None,
    note: str,
    source: str,
) -> tuple[Judgment, bool]:
    """``record_judgment_once`` for a caller that holds ``query``'s lock."""
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
    # The key goes into the INSERT itself: one round trip, not a savepoint and an UPDATE.
    judgment = _record(
        query=query,
        item=item,
        grade=grade,
        reviewer=reviewer,
        expected_version=None,
        note=note,
        source=source,
        client_key=client_key,
    )
    return judgment, True


def lock_task_for(task: ReviewTask, reviewer: User) -> tuple[Query, ReviewTask]:
    """Lock a review task's query, then the task (the lock order of every change), and
    refuse while another reviewer holds the task's live lease; the caller's transaction
    holds the locks."""
    query = lock_query(task.query_id)
    task = (
        ReviewTask.objects.select_for_update(of=("self",))
        .select_related("claimed_by", "item")
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
    return query, task


def _compare_and_set(
    current: Judgment,
    expected_version: int,
    grade: int,
    note: str,
    reviewer: User | None,
    *,
    source: str,
    now: Any,
) -> int | None:
    """``update_judgment`` for ``current`` read at ``expected_version``; on success the
    object holds what was written (no read back) and the history row's pk is returned,
    else ``None`` and nothing changed. A person grading takes the pair over from an
    imported assessor's name."""
    change_id = update_judgment(
        current=current,
        expected_version=expected_version,
        grade=grade,
        note=note,
        reviewer_id=reviewer.pk if reviewer is not None else None,
        source=source,
        now=now,
    )
    if change_id is not None:
        current.grade, current.note, current.reviewer = grade, note, reviewer
        current.reviewer_name = ""
        current.version, current.updated_at = expected_version + 1, now
    return change_id
