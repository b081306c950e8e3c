"""Queueing unjudged pairs set-based: the pairs are staged into a temporary table (``COPY``
on PostgreSQL, ``executemany`` on SQLite) and found, queued and prioritised by a few SQL
statements, however many there are (a 10,000-query run pools ~100,000 pairs).

The locking is the one every label-changing service uses (``locks.py``): the collection
row shared, then the staged pairs' queries exclusively in pk order, before the judged
pairs are read, so that no judgment of a staged pair commits between that read and the
queueing; then the affected tasks in pk order before their sources are counted, so that
a concurrent queueing of the same pairs is counted in the priority, not overwritten.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from django.db import connection
from django.utils import timezone

from jobs.progress import Progress

from ..locks import share_collection
from ..models import Collection, Item, Judgment, Query, ReviewTask, TaskSource
from ..pool_strategies import HEAD_BASE, URGENT, Strategy
from .pool_arms import build_arms, judged_counts, raise_floor

RAW = "verity_pool_raw"  # as given: (query pk, item pk or external id, rank, stage)
PAIRS = "verity_pool_pairs"  # one row per (query, item, stage), best rank; unjudged only

#: A task at or above this priority was asked for by name (e.g. the pairs that could change
#: a comparison): it is served before any pooled order, and no pooling strategy or later
#: pooling lowers it. Pooled priorities stay below it.
URGENT_PRIORITY = URGENT

#: ``task_priority`` in SQL: n_sources * 10,000 - min(best_rank or 9,999, 9,999).
PRIORITY_SQL = (
    "{n} * 10000 - CASE WHEN {best} IS NULL OR {best} = 0 OR {best} > 9999 "
    "THEN 9999 ELSE {best} END"
)


@dataclass
class PoolOutcome:
    unjudged: int = 0  # distinct unjudged (query, item) pairs staged
    queued: int = 0  # review tasks created
    placeholders: list[str] = field(default_factory=list)  # item ids created as placeholders


def queue_pairs(
    *,
    collection: Collection,
    rows: Iterable[tuple[int, int, int | None, int]],
    labels: Sequence[str],
) -> PoolOutcome:
    """Queue (query pk, item pk, rank, stage index) rows; ``labels[stage]`` names the
    source. The caller owns the transaction (``queue_unjudged``)."""
    with connection.cursor() as cursor:
        _create_tables(cursor)
        _stage(cursor, ("query_id", "item_id", "rank", "stage"), rows)
        cursor.execute(
            f"INSERT INTO {PAIRS} (query_id, item_id, stage, rank) "
            f"SELECT query_id, item_id, stage, MIN(rank) FROM {RAW} "
            "GROUP BY query_id, item_id, stage"
        )
        # Named pairs are no run's: they join no arm, whatever the collection's strategy.
        outcome = _queue_staged(cursor, collection=collection, labels=labels, strategy=Strategy())
        _drop_tables(cursor)
    return outcome


def pool_items(
    *,
    collection: Collection,
    rows: Iterable[tuple[int, str, int | None, int]],
    labels: Sequence[str],
    check_missing: Callable[[list[str]], None],
    progress: Progress | None = None,
    strategy: Strategy | None = None,
) -> PoolOutcome:
    """Queue (query pk, item external id, rank, stage index) rows, creating the items the
    collection lacks as placeholders; ``check_missing(sorted ids)`` is called first and
    may refuse them by raising. The caller owns the transaction (``import_run``).
    ``progress`` hears of two phases: finding the items, then pooling (in queries per
    stage, all at once: the statements are set-based). ``strategy`` orders the pooled
    pairs (``pool_strategies``; the collection's, unless given)."""
    progress = progress or Progress()
    # Three set-based steps: staging the rows, creating missing items, pairing.
    progress.phase("pooling: finding the pooled items", 3)
    items = Item._meta.db_table
    with connection.cursor() as cursor:
        _create_tables(cursor)
        _stage(cursor, ("query_id", "item", "rank", "stage"), rows)
        progress.advance(1)
        missing_sql = (
            f"FROM {RAW} r WHERE NOT EXISTS (SELECT 1 FROM {items} i "
            "WHERE i.collection_id = %s AND i.external_id = r.item)"
        )
        cursor.execute(f"SELECT DISTINCT r.item {missing_sql}", [collection.pk])
        missing = sorted(row[0] for row in cursor.fetchall())
        check_missing(missing)
        if missing:
            # DISTINCT types the literal as text: PostgreSQL wants its jsonb cast.
            empty = "'{}'::jsonb" if connection.vendor == "postgresql" else "'{}'"
            # A concurrent import may create the same placeholder: keep its row.
            cursor.execute(
                f"INSERT INTO {items} (collection_id, external_id, title, text, url, metadata, "
                f"placeholder, created_at) SELECT DISTINCT %s, r.item, '', '', '', {empty}, "
                f"%s, %s {missing_sql} ON CONFLICT (collection_id, external_id) DO NOTHING",
                [collection.pk, True, timezone.now(), collection.pk],
            )
        progress.advance(1)
        cursor.execute(
            f"INSERT INTO {PAIRS} (query_id, item_id, stage, rank) "
            f"SELECT r.query_id, i.id, r.stage, MIN(r.rank) FROM {RAW} r JOIN {items} i "
            "ON i.collection_id = %s AND i.external_id = r.item "
            "GROUP BY r.query_id, i.id, r.stage",
            [collection.pk],
        )
        progress.advance(1)
        cursor.execute(f"SELECT COUNT(*) FROM (SELECT DISTINCT query_id, stage FROM {RAW}) d")
        n_queries = cursor.fetchone()[0]
        progress.phase("pooling unjudged items", n_queries)
        outcome = _queue_staged(cursor, collection=collection, labels=labels, strategy=strategy)
        progress.advance(n_queries)
        outcome.placeholders = missing
        _drop_tables(cursor)
    return outcome


def _queue_staged(
    cursor, *, collection: Collection, labels: Sequence[str], strategy: Strategy | None = None
) -> PoolOutcome:
    tasks, sources = ReviewTask._meta.db_table, TaskSource._meta.db_table
    postgres = connection.vendor == "postgresql"
    if postgres:
        cursor.execute(f"ANALYZE {PAIRS}")  # temporary tables are never auto-analysed
    share_collection(collection.pk)
    # The slots and strategy follow the stored settings, not the caller's copy.
    n_slots, stored, floor, relevant_grade = Collection.objects.values_list(
        "assessors_per_item", "pool_strategy", "pool_floor", "relevant_grade"
    ).get(pk=collection.pk)
    strategy = strategy or Strategy(stored, floor)
    # Priorities at or above this are kept: urgent ones always, and in an adaptive
    # collection the heads and floors its runs' arms set (pool_arms).
    ceiling = URGENT_PRIORITY if strategy.name == stored == "depth" else HEAD_BASE
    if postgres:
        cursor.execute(
            f"SELECT id FROM {Query._meta.db_table} WHERE id IN "
            f"(SELECT DISTINCT query_id FROM {PAIRS}) ORDER BY id FOR UPDATE"
        )
    prior = judged_counts(cursor, PAIRS, relevant_grade) if strategy.adaptive else {}
    cursor.execute(
        f"DELETE FROM {PAIRS} WHERE EXISTS (SELECT 1 FROM {Judgment._meta.db_table} j "
        f"WHERE j.query_id = {PAIRS}.query_id AND j.item_id = {PAIRS}.item_id)"
    )
    cursor.execute(f"SELECT COUNT(*) FROM (SELECT DISTINCT query_id, item_id FROM {PAIRS}) d")
    outcome = PoolOutcome(unjudged=cursor.fetchone()[0])
    if not outcome.unjudged:
        return outcome
    affected = (
        f"SELECT t.id FROM {tasks} t WHERE EXISTS (SELECT 1 FROM {PAIRS} p "
        "WHERE p.query_id = t.query_id AND p.item_id = t.item_id) AND t.slot = 1"
    )
    if postgres:
        # The tasks that exist already: their sources are counted below, after this lock.
        # Tasks inserted next are this transaction's own (or wait for a concurrent insert).
        cursor.execute(f"{affected} ORDER BY t.id FOR UPDATE")
    now = timezone.now()
    # A new task's sources are this call's stages only: its best rank and priority are
    # known at insert, so that the update below rewrites only tasks that had sources.
    # ``source`` is the first stage (in the run's order) that surfaced the pair.
    first = "CASE p.first " + " ".join(f"WHEN {i} THEN %s" for i in range(len(labels))) + " END"
    priority = PRIORITY_SQL.format(n="p.n", best="p.best")
    cursor.execute(
        f"INSERT INTO {tasks} (collection_id, query_id, item_id, slot, status, source, "
        "best_rank, priority, created_at, updated_at) "
        f"SELECT %s, p.query_id, p.item_id, 1, %s, {first}, p.best, {priority}, %s, %s FROM "
        f"(SELECT query_id, item_id, MIN(stage) AS first, MIN(rank) AS best, COUNT(*) AS n "
        f"FROM {PAIRS} GROUP BY query_id, item_id) p WHERE true ORDER BY p.query_id, p.item_id "
        "ON CONFLICT (query_id, item_id, slot) DO NOTHING",
        [collection.pk, "pending", *labels, now, now],
    )
    outcome.queued = cursor.rowcount
    for stage, label in enumerate(labels):
        cursor.execute(
            f"INSERT INTO {sources} (task_id, label, rank, created_at) "
            f"SELECT t.id, %s, p.rank, %s FROM {PAIRS} p JOIN {tasks} t "
            "ON t.query_id = p.query_id AND t.item_id = p.item_id AND t.slot = 1 "
            "WHERE p.stage = %s "
            "ON CONFLICT (task_id, label) DO UPDATE SET rank = CASE "
            f"WHEN excluded.rank IS NOT NULL AND ({sources}.rank IS NULL "
            f"OR excluded.rank < {sources}.rank) THEN excluded.rank ELSE {sources}.rank END",
            [label, now, stage],
        )
    formula = PRIORITY_SQL.format(n="s.n", best="s.best")
    # A task asked for by name (at or above the ceiling, URGENT_PRIORITY included) keeps
    # its priority; the rest take the depth order.
    priority = f"CASE WHEN {tasks}.priority >= {ceiling} THEN {tasks}.priority ELSE {formula} END"
    # Rewrites only the tasks whose order changed (the new ones are right already).
    cursor.execute(
        f"UPDATE {tasks} SET best_rank = s.best, priority = {priority} FROM "
        f"(SELECT task_id, MIN(rank) AS best, COUNT(*) AS n FROM {sources} "
        f"WHERE task_id IN ({affected}) GROUP BY task_id) s WHERE {tasks}.id = s.task_id "
        f"AND ({tasks}.priority <> {priority} "
        f"OR COALESCE({tasks}.best_rank, -1) <> COALESCE(s.best, -1))",
    )
    if ceiling == HEAD_BASE:
        floor = strategy.floor if strategy.adaptive else 0
        raise_floor(cursor, pairs=PAIRS, floor=floor, urgent=URGENT_PRIORITY, depth_sql=formula)
    if strategy.adaptive:
        build_arms(
            cursor,
            collection_id=collection.pk,
            strategy=strategy,
            labels=labels,
            pairs=PAIRS,
            prior=prior,
        )
    if n_slots > 1:
        fill_slots(cursor, collection.pk, n_slots, affected, now)
    return outcome


def fill_slots(cursor, collection_id: int, n_slots: int, first_slots: str, now) -> None:
    """Several assessors per item (``docs/ASSESSORS.md``): give each pair whose slot-1
    task is among ``first_slots`` (SQL, locked above) slots 2..N with slot 1's source, rank
    and priority; a slot that exists already keeps its status and takes the new priority.
    Pooling and a change of ``assessors_per_item`` (``collections``) both use it."""
    tasks = ReviewTask._meta.db_table
    numbers = " UNION ALL ".join(f"SELECT {n} AS n" for n in range(2, n_slots + 1))
    cursor.execute(
        f"INSERT INTO {tasks} (collection_id, query_id, item_id, slot, status, source, "
        "best_rank, priority, created_at, updated_at) "
        "SELECT %s, f.query_id, f.item_id, s.n, %s, f.source, f.best_rank, f.priority, %s, %s "
        f"FROM {tasks} f CROSS JOIN ({numbers}) s WHERE f.id IN ({first_slots}) "
        "ORDER BY f.query_id, f.item_id, s.n ON CONFLICT (query_id, item_id, slot) DO NOTHING",
        [collection_id, "pending", now, now],
    )
    cursor.execute(
        f"UPDATE {tasks} SET best_rank = f.best_rank, priority = f.priority FROM {tasks} f "
        f"WHERE f.id IN ({first_slots}) AND {tasks}.query_id = f.query_id "
        f"AND {tasks}.item_id = f.item_id AND {tasks}.slot > 1 "
        f"AND ({tasks}.priority <> f.priority "
        f"OR COALESCE({tasks}.best_rank, -1) <> COALESCE(f.best_rank, -1))"
    )


def _create_tables(cursor) -> None:
    _drop_tables(cursor)
    cursor.execute(
        f"CREATE TEMPORARY TABLE {RAW} "
        "(query_id bigint NOT NULL, item_id bigint, item text, rank integer, "
        "stage integer NOT NULL)"
    )
    cursor.execute(
        f"CREATE TEMPORARY TABLE {PAIRS} (query_id bigint NOT NULL, item_id bigint NOT NULL, "
        "stage integer NOT NULL, rank integer)"
    )
    cursor.execute(f"CREATE INDEX {PAIRS}_pair ON {PAIRS} (query_id, item_id)")


def _drop_tables(cursor) -> None:
    cursor.execute(f"DROP TABLE IF EXISTS {RAW}")
    cursor.execute(f"DROP TABLE IF EXISTS {PAIRS}")


def _stage(cursor, columns: Sequence[str], rows: Iterable[tuple]) -> None:
    names = ", ".join(columns)
    if connection.vendor == "postgresql":
        with cursor.cursor.copy(f"COPY {RAW} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        cursor.execute(f"ANALYZE {RAW}")
    else:
        marks = ", ".join(["%s"] * len(columns))
        cursor.executemany(f"INSERT INTO {RAW} ({names}) VALUES ({marks})", rows)
