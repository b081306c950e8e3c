"""A freeze's per-query blocks: rendering them from the live labels, reading back the
ones the latest version holds, and writing new ones with their rows.

A version is the set of blocks it holds, one per query: those whose run of versions
``[first_number, end_number)`` contains it. A freeze renders again only the queries whose
labels changed since the last one (the ``UnfrozenChange`` rows the database triggers of
migrations 0015 and 0023 write), keeps every other block, and hashes the canonical form
spliced from the latest version's (``snapshot_forms``). Everything here runs inside
``freeze_snapshot``'s transaction, under its exclusive collection lock.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db import connection

from ..extensions import ModelLabel
from ..models import (
    Assessment,
    Collection,
    Item,
    Judgment,
    Query,
    ReviewTask,
    Snapshot,
    SnapshotAssessment,
    SnapshotJudgment,
    SnapshotQuery,
    SnapshotUnjudged,
    TaskStatus,
    UnfrozenChange,
)
from ..snapshots import SECTIONS, QueryBlock, frozen_qid, render_block

# The triggers migrations 0015 and 0023 create; a freeze renders every query when one is missing.
TRIGGERS = frozenset(
    [
        f"verity_unfrozen_{table}_{event}"
        for table in ("judgment", "reviewtask", "assessment", "evidencecondition")
        for event in ("insert", "update", "delete")
    ]
    + [f"verity_unfrozen_query_{event}" for event in ("insert", "update", "delete")]
    + ["verity_unfrozen_item_rename", "verity_unfrozen_assessor_rename"]
)

_CHUNK = 500  # ids per IN list: far below SQLite's limit on parameters


def triggers_in_place() -> bool:
    """Every change-tracking trigger exists (and, on PostgreSQL, is enabled)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgenabled <> 'D' "
                "AND tgname LIKE %s",
                ["verity_unfrozen_%"],
            )
        elif connection.vendor == "sqlite":
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE %s",
                ["verity_unfrozen_%"],
            )
        else:
            return False
        return {name for (name,) in cursor.fetchall()} >= TRIGGERS


@dataclass
class Block:
    """A query block in memory: rendered now (``pk`` None) or read back (``pk`` set)."""

    query_pk: int
    status: str
    evidence: Any
    lines: QueryBlock
    n_judgments: int = 0
    n_model_labels: int = 0
    n_unjudged: int = 0
    n_assessments: int = 0
    n_unresolved: int = 0
    pk: int | None = None

    def same_content(self, other: Block) -> bool:
        return self.lines.sections() == other.lines.sections()


def held_blocks(snapshot: Snapshot) -> dict[int, Block]:
    """The rendered blocks version ``snapshot`` holds, by query pk (blocks frozen before
    they carried bytes are left out: the caller renders those queries again)."""
    rows = (
        SnapshotQuery.objects.of(snapshot)
        .filter(query_line__isnull=False)
        .values_list(
            "query_id",
            "n_judgments",
            "n_model_labels",
            "n_unjudged",
            "n_assessments",
            "n_unresolved",
            *SECTIONS,
        )
        .iterator(chunk_size=2000)
    )
    held = {}
    for query_pk, nj, nm, nu, na, nr, *sections in rows:
        stored = [bytes(s) for s in sections]
        lines = QueryBlock(frozen_qid(stored[0]), *stored)
        # A held block is never written again: its status and evidence are in its bytes.
        held[query_pk] = Block(query_pk, "", None, lines, nj, nm, nu, na, nr)
    return held


def changed_queries(collection: Collection) -> list[tuple[int, int]]:
    """The ``UnfrozenChange`` rows (pk, query pk) of the collection's queries, those
    deleted since its latest version included (they name a block it holds).

    One index probe per listed row (a query's collection, else its held block's): as
    ``EXISTS … OR EXISTS …`` PostgreSQL hashed every query of the collection, and its
    estimate (from the pages the last freeze's deleted rows left) asked for JIT, ~0.25 s
    at 100,000 queries. JIT is off for the rest of the freeze's transaction."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL jit = off")
        cursor.execute(
            f"SELECT c.id, c.query_id FROM {UnfrozenChange._meta.db_table} c WHERE COALESCE("
            f"(SELECT q.collection_id FROM {Query._meta.db_table} q WHERE q.id = c.query_id), "
            f"(SELECT b.collection_id FROM {SnapshotQuery._meta.db_table} b "
            "WHERE b.query_id = c.query_id AND b.end_number IS NULL)) = %s",
            [collection.pk],
        )
        return cursor.fetchall()


def held_queries(collection: Collection, query_pks: Iterable[int]) -> set[int]:
    """Those of ``query_pks`` whose block the latest version holds."""
    held: set[int] = set()
    for chunk in _chunks(sorted(query_pks)):
        held.update(
            SnapshotQuery.objects.filter(
                collection=collection, end_number__isnull=True, query_id__in=chunk
            ).values_list("query_id", flat=True)
        )
    return held


def end_blocks(collection: Collection, number: int, query_pks: Iterable[int]) -> int:
    """Version ``number`` no longer holds the blocks of ``query_pks`` the version before
    it held: their run ends (the one change a block ever takes); return how many."""
    ended = 0
    for chunk in _chunks(sorted(query_pks)):
        marks = ", ".join(["%s"] * len(chunk))
        ended += _execute(
            f"UPDATE {SnapshotQuery._meta.db_table} SET end_number = %s WHERE collection_id = %s "
            f"AND end_number IS NULL AND query_id IN ({marks})",
            [number, collection.pk, *chunk],
        )
    return ended


def _chunks(ids: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


def _select(sql: str, collection: Collection, some: list[int]) -> Iterator[tuple[Any, ...]]:
    """Rows of ``sql`` (rows ``x`` joined to their query ``q``, with a ``{where}`` slot)
    for the whole collection (``some`` empty) or for the queries ``some``."""
    with connection.cursor() as cursor:
        if not some:
            cursor.execute(sql.format(where="q.collection_id = %s"), [collection.pk])
            yield from cursor.fetchall()
            return
        for chunk in _chunks(some):
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(sql.format(where=f"x.query_id IN ({marks})"), chunk)
            yield from cursor.fetchall()


def render_blocks(
    collection: Collection, query_pks: Iterable[int] | None, model: list[ModelLabel]
) -> dict[int, Block]:
    """Render the blocks of ``query_pks`` (every query of the collection when None) from
    the live labels (``tests/judgments/test_snapshot_sharing.py`` holds the result to the
    whole form rendered the plain way, from the live tables)."""
    queries = Query.objects.filter(collection=collection)
    some: list[int] = []
    if query_pks is not None:
        some = sorted(set(query_pks))
        if not some:
            return {}
        if len(some) <= _CHUNK:
            queries = queries.filter(pk__in=some)
    info = {
        pk: (qid, status, groups)
        for pk, qid, status, groups in queries.values_list(
            "pk", "external_id", "status", "evidence__groups"
        ).iterator(chunk_size=5000)
    }
    if query_pks is not None:
        info = {pk: info[pk] for pk in some if pk in info}
        if not info:
            return {}
        some = list(info)
    t = {m.__name__: m._meta.db_table for m in (Query, Item, Judgment, ReviewTask, Assessment)}
    scoped = (
        f"JOIN {t['Query']} q ON q.id = x.query_id JOIN {t['Item']} i ON i.id = x.item_id "
        "WHERE {where}"
    )

    judged: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for query_pk, item, grade in _select(
        f"SELECT x.query_id, i.external_id, x.grade FROM {t['Judgment']} x {scoped}",
        collection,
        some,
    ):
        judged[query_pk].append((item, grade))
    wanted = set(info)
    by_model: dict[int, list[ModelLabel]] = defaultdict(list)
    for m in model:
        if m.query_pk in wanted:
            by_model[m.query_pk].append(m)
    labelled = {(m.query_pk, m.item) for m in model}
    open_items: dict[int, set[str]] = defaultdict(set)
    for query_pk, item in _select(
        f"SELECT x.query_id, i.external_id FROM {t['ReviewTask']} x {scoped} "
        f"AND x.status <> '{TaskStatus.DONE.value}'",
        collection,
        some,
    ):
        open_items[query_pk].add(item)
    assessed: dict[int, list[tuple[str, str, int]]] = defaultdict(list)
    if collection.has_overlap:
        user = Assessment._meta.get_field("assessor").related_model
        for query_pk, item, who, grade in _select(
            f"SELECT x.query_id, i.external_id, COALESCE(u.{user.USERNAME_FIELD}, "
            f"x.assessor_name), x.grade FROM {t['Assessment']} x "
            f"LEFT JOIN {user._meta.db_table} u ON u.id = x.assessor_id {scoped}",
            collection,
            some,
        ):
            assessed[query_pk].append((item, who, grade))

    blocks = {}
    for query_pk, (qid, status, evidence) in info.items():
        judgments = judged.get(query_pk, [])
        models = by_model.get(query_pk, [])
        opened = open_items.get(query_pk, set())
        unjudged = [i for i in opened if (query_pk, i) not in labelled] if model else opened
        assessments = assessed.get(query_pk, [])
        unresolved: set[str] = set()
        if collection.has_overlap:  # as selectors.assessments.unresolved_pairs
            unresolved = {i for i, _, _ in assessments} - {i for i, _ in judgments} - opened
        blocks[query_pk] = Block(
            query_pk=query_pk,
            status=status,
            evidence=evidence,
            lines=render_block(
                qid,
                status,
                evidence,
                judgments=judgments,
                model_judgments=[(m.item, m.judge, m.grade) for m in models],
                assessments=assessments,
                unjudged=unjudged,
                unresolved=unresolved,
            ),
            n_judgments=len(judgments),
            n_model_labels=len(models),
            n_unjudged=len(unjudged),
            n_assessments=len(assessments),
            n_unresolved=len(unresolved),
        )
    return blocks


def _execute(sql: str, params: list[Any]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


_BLOCK_COLUMNS = (
    ("frozen_in_id", "int8"),
    ("collection_id", "int8"),
    ("first_number", "int4"),
    ("query_id", "int8"),
    ("status", "varchar"),
    ("evidence", "jsonb"),
    ("n_judgments", "int4"),
    ("n_model_labels", "int4"),
    ("n_unjudged", "int4"),
    ("n_assessments", "int4"),
    ("n_unresolved", "int4"),
    *((name, "bytea") for name in SECTIONS),
)


def _block_row(snapshot: Snapshot, b: Block) -> tuple[Any, ...]:
    return (
        snapshot.pk,
        snapshot.collection_id,
        snapshot.number,
        b.query_pk,
        b.status,
        b.evidence,
        b.n_judgments,
        b.n_model_labels,
        b.n_unjudged,
        b.n_assessments,
        b.n_unresolved,
        *b.lines.sections(),
    )


def _store_blocks(snapshot: Snapshot, blocks: list[Block]) -> None:
    """Insert the blocks: with binary COPY on PostgreSQL (an INSERT would carry their
    tens of megabytes of lines as escaped SQL text), ``bulk_create`` elsewhere."""
    if connection.vendor != "postgresql":
        names = [name for name, _ in _BLOCK_COLUMNS]
        SnapshotQuery.objects.bulk_create(
            (
                SnapshotQuery(**dict(zip(names, _block_row(snapshot, b), strict=True)))
                for b in blocks
            ),
            batch_size=500,
        )
        return
    from psycopg.types.json import Jsonb

    columns = ", ".join(name for name, _ in _BLOCK_COLUMNS)
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(
            f"COPY {SnapshotQuery._meta.db_table} ({columns}) FROM STDIN (FORMAT BINARY)"
        ) as copy,
    ):
        copy.set_types([kind for _, kind in _BLOCK_COLUMNS])
        for b in blocks:
            row = _block_row(snapshot, b)
            copy.write_row((*row[:5], None if row[5] is None else Jsonb(row[5]), *row[6:]))


def write_blocks(
    snapshot: Snapshot, collection: Collection, blocks: list[Block], model: list[ModelLabel]
) -> tuple[int, int, int]:
    """Store ``blocks`` as frozen in ``snapshot`` (held from it on) and copy their rows
    from the live tables, set-based; return the rows written as (judgments, unjudged,
    assessments)."""
    snapshot_id = snapshot.pk
    _store_blocks(snapshot, blocks)
    if not blocks:
        return 0, 0, 0
    t = {
        m.__name__: m._meta.db_table
        for m in (
            Judgment,
            ReviewTask,
            Assessment,
            SnapshotQuery,
            SnapshotJudgment,
            SnapshotUnjudged,
            SnapshotAssessment,
        )
    }
    new_blocks = f"JOIN {t['SnapshotQuery']} b ON b.query_id = x.query_id AND b.frozen_in_id = %s"
    judgments = _execute(
        f"INSERT INTO {t['SnapshotJudgment']} (block_id, query_id, item_id, grade) "
        f"SELECT b.id, x.query_id, x.item_id, x.grade FROM {t['Judgment']} x {new_blocks}",
        [snapshot_id],
    )
    if model:
        fresh = {b.query_pk for b in blocks}
        block_of = dict(
            SnapshotQuery.objects.filter(frozen_in_id=snapshot_id).values_list("query_id", "pk")
        )
        judgments += len(
            SnapshotJudgment.objects.bulk_create(
                (
                    SnapshotJudgment(
                        block_id=block_of[m.query_pk],
                        query_id=m.query_pk,
                        item_id=m.item_pk,
                        grade=m.grade,
                        source=m.judge,
                    )
                    for m in model
                    if m.query_pk in fresh
                ),
                batch_size=5000,
            )
        )
    # A pair a model labelled is not unjudged in this snapshot.
    not_model_labelled = (
        f" AND NOT EXISTS (SELECT 1 FROM {t['SnapshotJudgment']} sj WHERE sj.block_id = b.id "
        "AND sj.item_id = x.item_id AND sj.source <> '')"
        if model
        else ""
    )
    unjudged = _execute(
        f"INSERT INTO {t['SnapshotUnjudged']} (block_id, query_id, item_id) "
        f"SELECT DISTINCT b.id, x.query_id, x.item_id FROM {t['ReviewTask']} x {new_blocks} "
        f"WHERE x.status <> %s{not_model_labelled}",
        [snapshot_id, TaskStatus.DONE],
    )
    assessments = 0
    if collection.has_overlap:
        user = Assessment._meta.get_field("assessor").related_model
        assessments = _execute(
            f"INSERT INTO {t['SnapshotAssessment']} "
            "(block_id, query_id, item_id, assessor, grade) "
            f"SELECT b.id, x.query_id, x.item_id, COALESCE(u.{user.USERNAME_FIELD}, "
            f"x.assessor_name), x.grade FROM {t['Assessment']} x {new_blocks} "
            f"LEFT JOIN {user._meta.db_table} u ON u.id = x.assessor_id",
            [snapshot_id],
        )
    return judgments, unjudged, assessments
