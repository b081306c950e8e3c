"""Judging a review task and editing a judgment by its pk: the two writes every reviewer
and editor sends, each one locking read and one write on PostgreSQL.

They read with one hand-written statement what ``judgments.record_judgment`` reads with
several (the collection's shared lock, the query's and the task's row locks, the lease,
the pair's ids, the judgment a client key names) and write with
``judgment_writes``; the checks are ``judgments``'s own.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..models import (
    ChangeSource,
    Collection,
    Item,
    Judgment,
    Query,
    ReviewTask,
    TaskStatus,
)
from ._common import User
from .errors import InvariantError, JudgmentConflict
from .judgment_writes import insert_judgment
from .judgments import (
    _check_new_grade,
    _compare_and_set,
    _created,
    _refuse_dropping_last_relevant,
    _refused_create,
)


def judge_task(
    *,
    task: ReviewTask | int,
    reviewer: User,
    grade: int,
    note: str = "",
    client_key: str | None = None,
    source: str = ChangeSource.API,
    collection: Collection | None = None,
) -> tuple[Judgment, bool]:
    """Record the judgment of a review task's pair; return (judgment, created).

    Refused while another reviewer holds the task's live lease. Recording completes the
    task (``record_judgment``); a pair judged meanwhile raises :class:`JudgmentConflict`,
    unless ``client_key`` names that very judgment (a retry), which is returned as it is.
    ``task`` may be a pk, in ``collection`` (``ReviewTask.DoesNotExist`` if it is not
    one of its tasks).

    The hot path of every reviewer: on PostgreSQL two statements in one transaction, one
    that locks the collection (shared), the query and the task and reads what the checks
    need, and one that writes the judgment, its history row and the task's completion.
    The pair's current judgment is not read first: the INSERT's unique constraint is the
    check (``insert_judgment``), read afresh only when it refuses.
    """
    if collection is None:
        assert isinstance(task, ReviewTask)
        collection = task.collection
    task_id = task.pk if isinstance(task, ReviewTask) else task
    with transaction.atomic():
        row = _lock_task_row(collection, task_id, client_key)
        if row is None:
            raise ReviewTask.DoesNotExist(f"no review task {task_id} in this collection")
        (_, status, holder_id, lease_expires_at, query_id, item_id, query_ext, query_status,
         item_ext, holder_name, key_id, key_query_id, key_item_id) = row  # fmt: skip
        now = timezone.now()
        if (
            status == TaskStatus.CLAIMED
            and holder_id != reviewer.pk
            and lease_expires_at is not None
            and _aware(lease_expires_at) > now
        ):
            raise InvariantError(
                f"this task is claimed by {holder_name or 'another reviewer'} until "
                f"{_aware(lease_expires_at):%H:%M:%S} UTC; "
                "claim another one, or wait for the lease to expire"
            )
        query = Query(
            pk=query_id, collection=collection, external_id=query_ext, status=query_status
        )
        item = Item(pk=item_id, collection=collection, external_id=item_ext)
        if key_id is not None:
            if (key_query_id, key_item_id) != (query_id, item_id):
                raise InvariantError(
                    f"the client key '{client_key}' was already used for another "
                    "judgment; send a new key (e.g. a UUID) with each new judgment"
                )
            stored = Judgment.objects.select_related("reviewer").get(pk=key_id)
            stored.query, stored.item = query, item
            return stored, False
        _check_new_grade(query, grade, note)
        made = insert_judgment(
            query_id=query_id,
            item_id=item_id,
            grade=grade,
            note=note,
            reviewer_id=reviewer.pk,
            client_key=client_key,
            source=source,
            now=now,
        )
        if made is None:
            if client_key is not None:
                stored = Judgment.objects.filter(client_key=client_key).first()
                if stored is not None and (stored.query_id, stored.item_id) == (query_id, item_id):
                    stored.query, stored.item = query, item
                    return stored, False  # a retry that raced its first send
            _refused_create(query, item, client_key)
        return _created(made, query, item, grade, reviewer, note, client_key, now), True


def edit_judgment(
    *,
    collection: Collection,
    judgment_id: int,
    reviewer: User | None,
    expected_version: int,
    grade: int | None = None,
    note: str | None = None,
    source: str = ChangeSource.API,
) -> Judgment:
    """Change the grade and/or note of one judgment of ``collection`` by compare-and-set
    on ``expected_version`` (``record_judgment``'s edit, by the judgment's pk): a stale
    version raises :class:`JudgmentConflict` with the judgment as stored now and changes
    nothing; ``Judgment.DoesNotExist`` when the collection has no such judgment.

    Two statements on PostgreSQL: one locks the collection (shared) and the query and
    reads the judgment, one writes it with its history row
    (``judgment_writes.update_judgment``). The "last relevant judgment" check reads
    afresh, and only when a relevant grade becomes a non-relevant one.
    """
    with transaction.atomic():
        row = _lock_judgment_row(collection, judgment_id)
        if row is None:
            raise Judgment.DoesNotExist(f"no judgment {judgment_id} in this collection")
        (pk, query_id, item_id, old_grade, old_note, version, client_key, created_at,
         reviewer_id, query_ext, query_status, item_ext) = row  # fmt: skip
        query = Query(
            pk=query_id, collection=collection, external_id=query_ext, status=query_status
        )
        item = Item(pk=item_id, collection=collection, external_id=item_ext)
        current = Judgment(
            pk=pk, query=query, item=item, grade=old_grade, note=old_note, version=version,
            client_key=client_key, created_at=_aware(created_at), reviewer_id=reviewer_id,
        )  # fmt: skip
        current._state.adding = False
        if version != expected_version:
            # What the locking read saw may predate a change made while it waited for
            # the query's lock: decide on the row as it is now.
            current = _fresh(pk, query, item)
            if current is None:
                raise InvariantError(
                    f"item '{item_ext}' has no judgment for query '{query_ext}' to edit; "
                    "create it instead"
                )
            if current.version != expected_version:
                raise JudgmentConflict(query_ext, item_ext, expected_version, current)
        grade = current.grade if grade is None else grade
        note = current.note if note is None else note
        _check_new_grade(query, grade, note)
        if not collection.is_relevant_grade(grade) and collection.is_relevant_grade(current.grade):
            _refuse_dropping_last_relevant(query, item)
        now = timezone.now()
        change_id = _compare_and_set(
            current, expected_version, grade, note, reviewer, source=source, now=now
        )
        if change_id is None:
            stored = _fresh(pk, query, item)
            if stored is None:
                raise InvariantError(
                    f"item '{item_ext}' has no judgment for query '{query_ext}' to edit; "
                    "create it instead"
                )
            raise JudgmentConflict(query_ext, item_ext, expected_version, stored)
        current.change_id = change_id  # type: ignore[attr-defined]
        return current


def _fresh(pk: int, query: Query, item: Item) -> Judgment | None:
    stored = Judgment.objects.select_related("reviewer").filter(pk=pk).first()
    if stored is not None:
        stored.query, stored.item = query, item
    return stored


def _lock_judgment_row(collection: Collection, judgment_id: int) -> Any:
    """One statement: lock the collection (shared) and the judgment's query, and read the
    judgment with its query's status and the ids of its pair."""
    locks = "FOR SHARE OF c FOR UPDATE OF q" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT j.id, j.query_id, j.item_id, j.grade, j.note, j.version, j.client_key,
                   j.created_at, j.reviewer_id, q.external_id, q.status, i.external_id
            FROM {Collection._meta.db_table} c
            JOIN {Query._meta.db_table} q ON q.collection_id = c.id
            JOIN {Judgment._meta.db_table} j ON j.query_id = q.id
            JOIN {Item._meta.db_table} i ON i.id = j.item_id
            WHERE j.id = %s AND c.id = %s
            {locks}
            """,
            [judgment_id, collection.pk],
        )
        return cursor.fetchone()


def _aware(value: Any) -> Any:
    """A datetime from a raw row: SQLite hands back text in UTC."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and timezone.is_naive(value):
        value = timezone.make_aware(value, UTC)
    return value


def _lock_task_row(collection: Collection, task_id: int, client_key: str | None) -> Any:
    """One statement: lock the collection (shared), then the task's query and the task
    (the lock order of every change), and read the task's lease, its pair's ids and the
    query's status, and the judgment that ``client_key`` names, if any."""
    from django.contrib.auth import get_user_model

    locks = ""
    if connection.vendor == "postgresql":
        locks = "FOR SHARE OF c FOR UPDATE OF q, t"
    user_table = get_user_model()._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT t.id, t.status, t.claimed_by_id, t.lease_expires_at, t.query_id,
                   t.item_id, q.external_id, q.status, i.external_id, u.username,
                   k.id, k.query_id, k.item_id
            FROM {Collection._meta.db_table} c
            JOIN {Query._meta.db_table} q ON q.collection_id = c.id
            JOIN {ReviewTask._meta.db_table} t ON t.query_id = q.id
            JOIN {Item._meta.db_table} i ON i.id = t.item_id
            LEFT JOIN {user_table} u ON u.id = t.claimed_by_id
            LEFT JOIN {Judgment._meta.db_table} k ON k.client_key = %s
            WHERE t.id = %s AND t.collection_id = %s AND c.id = %s
            {locks}
            """,
            [client_key, task_id, collection.pk, collection.pk],
        )
        return cursor.fetchone()
