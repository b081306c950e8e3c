"""The statements that write one judgment, its history row and its pair's task state.

The judge path runs on every key press of every reviewer, so each write here is as few
round trips as the database allows: on PostgreSQL one statement (the judgment's INSERT
or compare-and-set UPDATE, the ``JudgmentChange`` row made from what it returned, and
the pair's review tasks marked done, as data-modifying CTEs); on SQLite, which has no
such CTEs, three. Callers hold the query's lock (``locks.lock_query``) inside their
transaction; what is checked before a write (scale, status, leases) is theirs to check.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection
from django.db.models import F

from ..models import Judgment, JudgmentChange, ReviewTask, TaskStatus

J = Judgment._meta.db_table
C = JudgmentChange._meta.db_table
T = ReviewTask._meta.db_table


def _db_time(now: datetime) -> object:
    return connection.ops.adapt_datetimefield_value(now)


def insert_judgment(
    *,
    query_id: int,
    item_id: int,
    grade: int,
    note: str,
    reviewer_id: int | None,
    client_key: str | None,
    source: str,
    now: datetime,
) -> tuple[int, int] | None:
    """Create the pair's judgment at version 1 with its history row (old: none), and
    complete the pair's review tasks; return (judgment pk, history row pk). ``None``,
    with nothing written, when a unique constraint refuses it: the pair has a judgment,
    or ``client_key`` is taken (the caller reads which, afresh)."""
    at = _db_time(now)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"""
                WITH j AS (
                    INSERT INTO {J} (query_id, item_id, grade, reviewer_id, reviewer_name, note,
                                     version, client_key, created_at, updated_at)
                    VALUES (%s, %s, %s, %s, '', %s, 1, %s, %s, %s)
                    ON CONFLICT DO NOTHING
                    RETURNING id, query_id, item_id
                ), c AS (
                    INSERT INTO {C} (query_id, item_id, old_grade, new_grade, old_note,
                                     new_note, version, changed_by_id, changed_at, source)
                    SELECT query_id, item_id, NULL, %s, '', %s, 1, %s, %s, %s FROM j
                    RETURNING id
                ), t AS (
                    UPDATE {T} SET status = %s, claimed_by_id = NULL,
                                   lease_expires_at = NULL, updated_at = %s
                    WHERE query_id = %s AND item_id = %s AND status <> %s
                      AND EXISTS (SELECT 1 FROM j)
                )
                SELECT j.id, c.id FROM j, c
                """,
                [query_id, item_id, grade, reviewer_id, note, client_key, at, at,
                 grade, note, reviewer_id, at, source,
                 TaskStatus.DONE, at, query_id, item_id, TaskStatus.DONE],
            )  # fmt: skip
            row = cursor.fetchone()
            return (row[0], row[1]) if row else None
        cursor.execute(
            f"""
            INSERT INTO {J} (query_id, item_id, grade, reviewer_id, reviewer_name, note,
                             version, client_key, created_at, updated_at)
            VALUES (%s, %s, %s, %s, '', %s, 1, %s, %s, %s)
            ON CONFLICT DO NOTHING
            RETURNING id
            """,
            [query_id, item_id, grade, reviewer_id, note, client_key, at, at],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    change = JudgmentChange.objects.create(
        query_id=query_id,
        item_id=item_id,
        old_grade=None,
        new_grade=grade,
        old_note="",
        new_note=note,
        version=1,
        changed_by_id=reviewer_id,
        source=source,
    )
    _complete_tasks(query_id=query_id, item_id=item_id, now=now)
    return row[0], change.pk


def update_judgment(
    *,
    current: Judgment,
    expected_version: int,
    grade: int,
    note: str,
    reviewer_id: int | None,
    source: str,
    now: datetime,
) -> int | None:
    """Compare-and-set: change ``current`` (read at ``expected_version``) to ``grade`` and
    ``note`` and bump its version, with its history row (old → new), and complete the
    pair's review tasks; return the history row's pk. ``None``, with nothing written,
    when the stored version is no longer ``expected_version``."""
    at = _db_time(now)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                WITH j AS (
                    UPDATE {J} SET grade = %s, note = %s, reviewer_id = %s, reviewer_name = '',
                                   version = version + 1, updated_at = %s
                    WHERE id = %s AND version = %s
                    RETURNING query_id, item_id, version
                ), c AS (
                    INSERT INTO {C} (query_id, item_id, old_grade, new_grade, old_note,
                                     new_note, version, changed_by_id, changed_at, source)
                    SELECT query_id, item_id, %s, %s, %s, %s, version, %s, %s, %s FROM j
                    RETURNING id
                ), t AS (
                    UPDATE {T} SET status = %s, claimed_by_id = NULL,
                                   lease_expires_at = NULL, updated_at = %s
                    WHERE query_id = %s AND item_id = %s AND status <> %s
                      AND EXISTS (SELECT 1 FROM j)
                )
                SELECT c.id FROM c
                """,
                [grade, note, reviewer_id, at, current.pk, expected_version,
                 current.grade, grade, current.note, note, reviewer_id, at, source,
                 TaskStatus.DONE, at, current.query_id, current.item_id, TaskStatus.DONE],
            )  # fmt: skip
            row = cursor.fetchone()
        return row[0] if row else None
    changed = Judgment.objects.filter(pk=current.pk, version=expected_version).update(
        grade=grade,
        note=note,
        reviewer_id=reviewer_id,
        reviewer_name="",  # a person grading the pair takes it over from an imported name
        version=F("version") + 1,
        updated_at=now,
    )
    if changed != 1:
        return None
    change = JudgmentChange.objects.create(
        query_id=current.query_id,
        item_id=current.item_id,
        old_grade=current.grade,
        new_grade=grade,
        old_note=current.note,
        new_note=note,
        version=expected_version + 1,
        changed_by_id=reviewer_id,
        source=source,
    )
    _complete_tasks(query_id=current.query_id, item_id=current.item_id, now=now)
    return change.pk


def _complete_tasks(*, query_id: int, item_id: int, now: datetime) -> None:
    ReviewTask.objects.filter(query_id=query_id, item_id=item_id).exclude(
        status=TaskStatus.DONE
    ).update(status=TaskStatus.DONE, claimed_by=None, lease_expires_at=None, updated_at=now)
