"""Adaptive pooling in the database: each run's state per query (``PoolArm``) and the
priorities of its head and floor tasks, kept by the rules of ``judgments.pool_strategies``.

Two moments change them, both inside the transaction that changes the labels:

- pooling (``pooling._queue_staged``, under the queries' locks): ``raise_floor`` puts
  the tasks within a run's depth floor first, and ``build_arms`` gives each (query, run
  stage) pooled with ``mtf`` or ``bandit`` its row, counting the pairs judged already,
  and raises its head;
- a new judgment (``record_judgment``, ``judge_task``, a resolution; under the query's
  lock): ``observe_judgment`` updates the runs that pooled the pair and re-prioritises
  their heads only. Two statements on PostgreSQL, however large the pool: one reads
  the runs of the pair (and each run's next open task), one writes them and their
  heads' priorities. A ``depth`` collection sends none.

A task at or above ``FLOOR_BASE`` (a floor task) or ``URGENT_PRIORITY`` (asked for by
name) is never lowered here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db import connection

from ..models import Collection, Judgment, PoolArm, ReviewTask, TaskSource, TaskStatus
from ..pool_strategies import (
    DEPTH,
    FLOOR_BASE,
    HEAD_BASE,
    URGENT,
    Arm,
    Strategy,
    arm_score,
    next_head,
    observe,
)

A = PoolArm._meta.db_table
T = ReviewTask._meta.db_table
S = TaskSource._meta.db_table
J = Judgment._meta.db_table


def judged_counts(
    cursor: Any, pairs: str, relevant_grade: int
) -> dict[tuple[int, int], tuple[int, int]]:
    """(query pk, stage) -> (judged, relevant) over the staged pairs that have a judgment:
    what a run's arm knows before its first pair is served. Read before pooling drops the
    judged pairs."""
    cursor.execute(
        f"SELECT p.query_id, p.stage, COUNT(*), "
        f"SUM(CASE WHEN j.grade >= %s THEN 1 ELSE 0 END) FROM {pairs} p "
        f"JOIN {J} j ON j.query_id = p.query_id AND j.item_id = p.item_id "
        "GROUP BY p.query_id, p.stage",
        [relevant_grade],
    )
    return {(q, s): (int(n), int(r)) for q, s, n, r in cursor.fetchall()}


def build_arms(
    cursor: Any,
    *,
    collection_id: int,
    strategy: Strategy,
    labels: Sequence[str],
    pairs: str,
    prior: dict[tuple[int, int], tuple[int, int]],
) -> None:
    """One ``PoolArm`` per (query, stage) of the staged ``pairs`` (unjudged, best rank per
    stage), its tasks in rank order; then its head's priority (``raise_floor`` first)."""
    cursor.execute(
        f"SELECT p.query_id, p.stage, p.rank, t.id, t.status FROM {pairs} p JOIN {T} t "
        "ON t.query_id = p.query_id AND t.item_id = p.item_id AND t.slot = 1 "
        "ORDER BY p.query_id, p.stage, p.rank, t.id"
    )
    lists: dict[tuple[int, int], list[int]] = {}
    floors: dict[tuple[int, int], int] = {}
    closed: set[int] = set()
    for query_id, stage, rank, task_id, status in cursor.fetchall():
        lists.setdefault((query_id, stage), []).append(task_id)
        if rank is not None and rank <= strategy.floor:
            floors[(query_id, stage)] = floors.get((query_id, stage), 0) + 1
        if status == TaskStatus.DONE:
            closed.add(task_id)
    arms = []
    for (query_id, stage), tasks in lists.items():
        judged, relevant = prior.get((query_id, stage), (0, 0))
        state = Arm(judged=judged, relevant=relevant)
        position = next_head(tasks, 0, lambda t: t not in closed)
        arms.append(
            PoolArm(
                collection_id=collection_id,
                query_id=query_id,
                label=labels[stage],
                strategy=strategy.name,
                tasks=tasks,
                floor_count=floors.get((query_id, stage), 0),
                position=position,
                head_id=tasks[position] if position < len(tasks) else None,
                judged=judged,
                relevant=relevant,
                front=0,
                score=arm_score(strategy.name, state),
            )
        )
    PoolArm.objects.bulk_create(arms, batch_size=2_000)
    # Each head: its best run's score, over every run it heads (other runs' too).
    cursor.execute(
        f"UPDATE {T} SET priority = {HEAD_BASE} + h.score FROM "
        f"(SELECT head_id, MAX(score) AS score FROM {A} WHERE head_id IN "
        f"(SELECT t.id FROM {T} t JOIN {pairs} p ON t.query_id = p.query_id "
        "AND t.item_id = p.item_id AND t.slot = 1) GROUP BY head_id) h "
        f"WHERE {T}.id = h.head_id AND {T}.priority < {FLOOR_BASE}"
    )


def raise_floor(cursor: Any, *, pairs: str, floor: int, urgent: int, depth_sql: str) -> None:
    """Within a depth floor: before every head, in the depth rule's order (``depth_sql``,
    over ``s.n`` sources and ``s.best`` rank). For the staged ``pairs`` ranked within
    ``floor``, and for those already in the floor band, whose sources may have grown."""
    cursor.execute(
        f"UPDATE {T} SET priority = {FLOOR_BASE} + {depth_sql} FROM "
        f"(SELECT task_id, MIN(rank) AS best, COUNT(*) AS n FROM {S} WHERE task_id IN "
        f"(SELECT t.id FROM {T} t JOIN {pairs} p ON t.query_id = p.query_id "
        "AND t.item_id = p.item_id AND t.slot = 1 "
        f"AND (p.rank <= %s OR (t.priority >= {FLOOR_BASE} AND t.priority < %s))) "
        f"GROUP BY task_id) s WHERE {T}.id = s.task_id AND {T}.priority < %s "
        f"AND {T}.priority <> {FLOOR_BASE} + {depth_sql}",
        [floor, urgent, urgent],
    )


def observe_judgment(*, collection: Collection, query_id: int, item_id: int, grade: int) -> None:
    """A pair got its first judgment: count it for every run that pooled it in this query
    (``pool_strategies.observe``), move on the heads it was, and give those runs' heads
    their runs' new scores (on every slot). The caller holds the query's lock. Nothing for
    a ``depth`` collection: not one statement."""
    if collection.pool_strategy == DEPTH:
        return
    postgres = connection.vendor == "postgresql"
    first = f"(SELECT id FROM {T} WHERE query_id = %s AND item_id = %s AND slot = 1)"
    if postgres:
        following = (
            f"SELECT e.n - 1 FROM jsonb_array_elements_text(a.tasks) WITH ORDINALITY "
            f"AS e(id, n) JOIN {T} x ON x.id = e.id::bigint "
            "WHERE e.n > a.position + 1 AND x.status <> %s ORDER BY e.n LIMIT 1"
        )
    else:
        following = (
            f"SELECT e.key FROM json_each(a.tasks) e JOIN {T} x ON x.id = e.value "
            "WHERE e.key > a.position AND x.status <> %s ORDER BY e.key LIMIT 1"
        )
    # Its head moves on: it was the pair's task, or a task completed another way.
    moves = (
        f"(a.head_id = {first} OR EXISTS (SELECT 1 FROM {T} h WHERE h.id = a.head_id "
        "AND h.status = %s))"
    )
    with connection.cursor() as cursor:
        # The runs that pooled the pair; for each whose head it was (or whose head was
        # completed another way, e.g. by a qrels import), its next open task.
        cursor.execute(
            "SELECT a.id, a.strategy, a.judged, a.relevant, a.front, a.position, a.tasks, "
            f"{moves}, CASE WHEN {moves} THEN ({following}) END, "
            f"(SELECT MAX(b.front) FROM {A} b WHERE b.query_id = a.query_id) "
            f"FROM {A} a WHERE a.query_id = %s AND a.label IN (SELECT s.label FROM {S} s "
            f"WHERE s.task_id = {first}) ORDER BY a.id",
            # moves; moves again and following; the query; the pair's sources
            [
                *(query_id, item_id, TaskStatus.DONE) * 2,
                TaskStatus.DONE,
                query_id,
                query_id,
                item_id,
            ],
        )
        rows = cursor.fetchall()
        if not rows:
            return
        relevant = collection.is_relevant_grade(grade)
        front = max(row[9] or 0 for row in rows) + 1
        values = []
        for arm_id, name, judged, rel, old_front, position, tasks, moves, nxt, _ in rows:
            tasks = json.loads(tasks) if isinstance(tasks, str) else tasks
            state = observe(Arm(judged, rel, old_front), relevant=relevant, front=front)
            if moves:
                position = len(tasks) if nxt is None else int(nxt)
            head = tasks[position] if position < len(tasks) else None
            values.append(
                (arm_id, state.judged, state.relevant, state.front, position, head,
                 arm_score(name, state))
            )  # fmt: skip
        if postgres:
            _write_postgresql(cursor, values)
        else:
            _write_sqlite(cursor, values)


def stop_adaptive_pooling(*, collection_id: int, depth_sql: str) -> None:
    """The collection goes back to ``depth``: its runs' rows go, and the heads and floor
    tasks they raised take the depth rule's priority again (urgent ones are kept). The
    caller holds the collection's exclusive lock; ``depth_sql`` is the depth rule over
    ``s.n`` sources and ``s.best`` rank (``pooling.PRIORITY_SQL``)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {T} SET priority = {depth_sql} FROM "
            f"(SELECT f.query_id, f.item_id, MIN(x.rank) AS best, COUNT(*) AS n FROM {T} f "
            f"JOIN {S} x ON x.task_id = f.id WHERE f.collection_id = %s AND f.slot = 1 "
            f"AND f.priority >= {HEAD_BASE} AND f.priority < %s GROUP BY f.query_id, f.item_id) s "
            f"WHERE {T}.query_id = s.query_id AND {T}.item_id = s.item_id "
            f"AND {T}.priority >= {HEAD_BASE} AND {T}.priority < %s",
            [collection_id, URGENT, URGENT],
        )
    PoolArm.objects.filter(collection_id=collection_id).delete()


def _write_postgresql(cursor: Any, values: list[tuple]) -> None:
    """One statement: the runs' rows, then their heads' priorities on every slot. A data-
    modifying CTE's main statement reads the table as it was, so the heads' best scores
    come from the new values (``v``) and from the other runs heading the same tasks."""
    rows = ", ".join(["(%s::bigint, %s, %s, %s, %s, %s::bigint, %s::bigint)"] * len(values))
    cursor.execute(
        f"""
        WITH v(id, judged, relevant, front, position, head_id, score) AS (VALUES {rows}),
        u AS (
            UPDATE {A} SET judged = v.judged, relevant = v.relevant, front = v.front,
                           position = v.position, head_id = v.head_id, score = v.score
            FROM v WHERE {A}.id = v.id
        ), h AS (
            SELECT head_id, MAX(score) AS score FROM (
                SELECT head_id, score FROM v WHERE head_id IS NOT NULL
                UNION ALL
                SELECT a.head_id, a.score FROM {A} a
                WHERE a.head_id IN (SELECT head_id FROM v) AND a.id NOT IN (SELECT id FROM v)
            ) x GROUP BY head_id
        )
        UPDATE {T} SET priority = {HEAD_BASE} + h.score
        FROM {T} f JOIN h ON f.id = h.head_id
        WHERE {T}.query_id = f.query_id AND {T}.item_id = f.item_id
          AND {T}.priority < {FLOOR_BASE} AND {T}.priority <> {HEAD_BASE} + h.score
        """,
        [v for row in values for v in row],
    )


def _write_sqlite(cursor: Any, values: list[tuple]) -> None:
    cursor.executemany(
        f"UPDATE {A} SET judged = %s, relevant = %s, front = %s, position = %s, head_id = %s, "
        "score = %s WHERE id = %s",
        [(*row[1:], row[0]) for row in values],
    )
    heads = [row[5] for row in values if row[5] is not None]
    if heads:
        marks = ", ".join(["%s"] * len(heads))
        cursor.execute(
            f"UPDATE {T} SET priority = h.p FROM (SELECT f.query_id, f.item_id, "
            f"{HEAD_BASE} + MAX(a.score) AS p FROM {A} a JOIN {T} f ON f.id = a.head_id "
            f"WHERE a.head_id IN ({marks}) GROUP BY f.id, f.query_id, f.item_id) h "
            f"WHERE {T}.query_id = h.query_id AND {T}.item_id = h.item_id "
            f"AND {T}.priority < {FLOOR_BASE}",
            heads,
        )
