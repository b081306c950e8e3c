"""Runs: store a run file immutably, stage by stage, and queue the unjudged items it
pools for review."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, connection, transaction

from jobs.progress import Progress
from judgments.models import Collection, Item, Query, ReviewTask
from judgments.pool_strategies import DEPTH, Strategy
from judgments.services import InvariantError, analyze_after_commit, pool_items
from judgments.wording import counted
from verity_limits import SLUG_MAX

from ..models import DedupPolicy, OrderRule, RankedList, Run, RunStage
from ._common import BATCH, ReadWhole, User
from .run_ids import UnknownIds, check_unknown_items, check_unknown_queries

if TYPE_CHECKING:
    from .run_lists import ListBatch, StageRankings

PROGRESS_LINES = 1_000_000  # COPY reports its progress every million ids
_JSON = json.JSONEncoder(separators=(",", ":")).encode  # the C encoder, built once
_COPY_TEXT = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


class _ListWriter:
    """Stores one stage's ranked lists, each as one JSON text built in Arrow for a batch
    of lists (``ListBatch.json_bodies``; one by one, in Python, for a batch whose ids JSON
    would escape): ``COPY`` on PostgreSQL, whose server parses the JSON; ``executemany``
    elsewhere, of the very text Django's ``JSONField`` writes there (``json.dumps``)."""

    def __init__(self, stage_pk: int, progress: Progress) -> None:
        self.stage_pk, self.progress = stage_pk, progress
        self.rows: list[tuple[int, str, str, bool]] = []
        self.lines = 0
        self.copy: Any = None

    def __enter__(self) -> _ListWriter:
        if connection.vendor == "postgresql":
            self._cursor = connection.cursor()
            _compress_with_lz4(self._cursor)
            table = RankedList._meta.db_table
            # Kept: psycopg's copy() is a generator-based context manager.
            self._copy_cm = self._cursor.cursor.copy(
                f"COPY {table} (stage_id, query_id, items, abstained) FROM STDIN"
            )
            self.copy = self._copy_cm.__enter__()
        return self

    def add(self, batch: ListBatch) -> None:
        self.lines += len(batch)
        postgres = self.copy is not None
        bodies = batch.json_bodies("," if postgres else ", ", ascii_only=not postgres)
        if bodies is not None:
            texts = [f"[{body}]" for body in bodies]
        else:
            texts = [(_JSON if postgres else json.dumps)(items) for items in batch.lists()]
        rows = zip(batch.qids, texts, batch.abstained, strict=True)
        if not postgres:
            self.rows += ((self.stage_pk, qid, text, abst) for qid, text, abst in rows)
            self._flush()
            return
        # COPY's text format: the JSON built in Arrow holds no backslash, tab or newline.
        escape = bodies is None
        self.copy.write(
            "".join(
                f"{self.stage_pk}\t{qid.translate(_COPY_TEXT)}\t"
                f"{text.translate(_COPY_TEXT) if escape else text}\t{'t' if abst else 'f'}\n"
                for qid, text, abst in rows
            )
        )
        if self.lines >= PROGRESS_LINES:
            self._flush()

    def _flush(self) -> None:
        if self.rows:
            with connection.cursor() as cursor:
                cursor.executemany(
                    f"INSERT INTO {RankedList._meta.db_table} (stage_id, query_id, items, "
                    "abstained) VALUES (%s, %s, %s, %s)",
                    self.rows,
                )
        self.progress.advance(self.lines)
        self.rows, self.lines = [], 0

    def __exit__(self, *exc: object) -> None:
        if self.copy is not None:
            self._copy_cm.__exit__(*exc)
            self._cursor.close()
        if exc[0] is None:
            self._flush()


def _compress_with_lz4(cursor: Any) -> None:
    """Ranked lists are TOASTed (~10 KB of JSON for 1,000 ids): compressing them with
    lz4 instead of the default pglz took the server 1.5 s instead of 5.6 s for a
    10M-id run, and reads back faster. Set for the rest of this transaction only, and
    only where the server was built with lz4."""
    cursor.execute(
        "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
    )
    row = cursor.fetchone()
    if row and row[0]:
        cursor.execute("SELECT set_config('default_toast_compression', 'lz4', true)")


@dataclass
class RunImportReport:
    run: Run
    stages: list[RunStage]
    unjudged_found: int = 0
    newly_queued: int = 0
    placeholders_created: int = 0
    queries_not_in_collection: list[str] = field(default_factory=list)
    unknown: UnknownIds = field(default_factory=UnknownIds)
    pool_depth: int = 0

    def lines(self, collection: Collection) -> list[str]:
        """What was stored and pooled, one line per fact (the command and the job page)."""
        lines = [
            f"stage {stage.name}: {counted(stage.n_queries, 'query')}, "
            f"{counted(stage.n_rows, 'row')}, "
            f"depth {stage.depth}"
            for stage in self.stages
        ]
        lines.append(
            f"pool depth {self.pool_depth}: {counted(self.unjudged_found, 'unjudged item')} "
            f"found, {self.newly_queued} new to the review queue, "
            f"{counted(self.placeholders_created, 'placeholder item')} created"
        )
        lines.append(f"unknown ids: {self.unknown.describe(collection, depth=self.pool_depth)}")
        missing = self.queries_not_in_collection
        if missing:
            shown = ", ".join(missing[:10])
            more = len(missing) - 10
            lines.append(f"skipped queries: {shown}" + (f" … and {more} more" if more > 0 else ""))
        return lines


def _read_stages(
    path: Path, *, order: str, dedup: str, pieces: bool = True
) -> tuple[list[StageRankings], str]:
    """Every stage's rankings and the file's sha256 (``run_lists``, which needs numpy
    and pyarrow: imported when a run is read, not when the services are)."""
    from . import run_lists

    return run_lists.read_rankings(path, order=order, dedup=dedup, pieces=pieces)


@transaction.atomic
def import_run(
    *,
    collection: Collection,
    path: Path,
    name: str,
    description: str = "",
    order: str = OrderRule.SCORE,
    dedup: str = DedupPolicy.ERROR,
    by: User | None = None,
    progress: Progress | None = None,
    pool_depth: int | None = None,
    ignore_unknown_queries: bool = False,
    pool_strategy: str | None = None,
) -> RunImportReport:
    """Store a run file immutably and queue the unjudged items it surfaces.

    The file is validated by the engine's readers first (line-numbered errors, the
    dedup policy applied and recorded); nothing is stored unless all of it is valid.
    For every collection query, the first ``pool_depth`` items (the collection's, unless
    given) of each stage that have
    no judgment become (or join) review tasks, labelled ``run NAME / STAGE``; pooled ids
    the collection lacks are created as placeholder items. Deeper ids stay in the run
    only: scoring works on ids, and creating millions of empty items would help no one.

    Query ids the collection lacks refuse the file, naming their lines, unless
    ``ignore_unknown_queries``: then their lines are left out and counted. A collection
    that holds its whole corpus refuses pooled item ids it lacks (``run_ids``).
    ``progress`` hears of each phase: reading the file, storing the ranked lists (in
    lines), pooling the unjudged items (in queries).

    On PostgreSQL a TREC run larger than ``run_lists.CHUNK_BYTES`` is stored as it is
    read, a piece at a time (``_Writing.as_read``); anything else is read whole, then
    stored (``_Writing.after_reading``). Both store the same rows.

    ``pool_strategy`` (``depth``, ``mtf``, ``bandit`` or ``depth K + mtf|bandit``; the
    collection's, unless given) orders this run's pooled pairs (docs/POOLING.md). An
    adaptive one needs an adaptive collection: its judgments are what move the order.
    """
    progress = progress or Progress()
    strategy = check_pool_strategy(collection, pool_strategy)
    if not _RUN_NAME.fullmatch(name):
        raise InvariantError(
            f"run name {name[:40]!r} must be 1 to {SLUG_MAX} letters, digits, '-' or '_', "
            "e.g. bm25-2024-06"
        )
    if Run.objects.filter(collection=collection, name=name).exists():
        raise _name_taken(collection, name)
    if order not in (OrderRule.SCORE, OrderRule.RANK):
        raise InvariantError(f"order must be 'score' or 'rank', got {order!r}")
    progress.phase(f"reading {path.name}", path.stat().st_size)  # in bytes
    query_pks = dict(Query.objects.filter(collection=collection).values_list("external_id", "pk"))
    writing = _Writing(
        collection=collection,
        name=name,
        path=path,
        query_pks=query_pks,
        depth=collection.pool_depth if pool_depth is None else pool_depth,
        progress=progress,
    )
    fields = {"description": description, "dedup_policy": dedup, "created_by": by}
    report: RunImportReport | None = None
    pieces = connection.vendor == "postgresql" and _in_pieces(path)
    if pieces:
        try:
            with transaction.atomic():  # undone if the file must be read whole after all
                report = writing.as_read(
                    order=order, dedup=dedup, ignore=ignore_unknown_queries, fields=fields
                )
        except ReadWhole:
            writing.pooled.clear()
    if report is None:
        report = writing.after_reading(
            order=order,
            dedup=dedup,
            ignore=ignore_unknown_queries,
            fields=fields,
            pieces=not pieces,  # pieces that did not do once will not do again
        )
    outcome = pool_items(
        collection=collection,
        rows=(
            row
            for pks, ids, ranks, position in writing.pooled
            for row in zip(pks.tolist(), ids.to_pylist(), ranks.tolist(), repeat(position))
        ),
        labels=[
            f"run {name}" if stage.name == "default" else f"run {name} / {stage.name}"
            for stage in report.stages
        ],
        check_missing=lambda missing: check_unknown_items(
            collection=collection, path=path, missing=missing
        ),
        progress=progress,
        strategy=strategy,
    )
    report.placeholders_created = report.unknown.item_ids = len(outcome.placeholders)
    report.unjudged_found, report.newly_queued = outcome.unjudged, outcome.queued
    if writing.distinct is not None:
        # Every stored id the collection still lacks after pooling: ids ranked only below
        # the pool depth (within it they are placeholders now, or were refused).
        known = list(
            Item.objects.filter(collection=collection).values_list("external_id", flat=True)
        )
        report.unknown.item_ids_beyond = writing.distinct.missing_from(known)
    analyze_after_commit(
        RankedList,
        ReviewTask,
        Item,
        rows=sum(s.n_queries for s in report.stages) + outcome.queued + len(outcome.placeholders),
    )
    return report


def check_pool_strategy(collection: Collection, text: str | None) -> Strategy | None:
    """The strategy ``text`` names for a run of ``collection`` (``None``: empty, the
    collection's); refused, saying why, when unknown or adaptive in a depth collection."""
    if text is None or not text.strip():
        return None
    try:
        strategy = Strategy.parse(text)
    except ValueError as exc:
        raise InvariantError(str(exc)) from None
    if strategy.adaptive and collection.pool_strategy == DEPTH:
        raise InvariantError(
            f"pooling strategy '{strategy}' needs a collection whose judgments move the "
            f"order: collection '{collection.slug}' pools by depth; set its pool_strategy "
            "to mtf or bandit first (collection settings), or import with 'depth'"
        )
    return strategy


def _count_lines(path: Path) -> int:
    lines = 0
    with path.open("rb") as fh:
        while block := fh.read(1 << 24):
            lines += block.count(b"\n")
    return lines


def _in_pieces(path: Path) -> bool:
    from .run_lists import in_pieces

    return in_pieces(path)


@dataclass
class _Writing:
    """One import's storing of its lists: the two orders in which it is done, and the
    pooled pairs it collects on the way (query pks, item ids, ranks, stage index)."""

    collection: Collection
    name: str
    path: Path
    query_pks: dict[str, int]
    depth: int
    progress: Progress
    pooled: list[tuple[Any, Any, Any, int]] = field(default_factory=list)
    distinct: Any = None  # run_lists.DistinctIds: every stored item id, for the answer

    def after_reading(
        self, *, order: str, dedup: str, ignore: bool, fields: dict[str, Any], pieces: bool
    ) -> RunImportReport:
        """Read the whole file (``_read_stages``), then store: the run, then per stage its
        row and its lists."""
        import numpy as np

        stages, sha256 = _read_stages(self.path, order=order, dedup=dedup, pieces=pieces)
        self.progress.advance(self.path.stat().st_size)
        run_qids = {q for s in stages for q in s.qids}
        unknown = self._unknown(run_qids, ignore=ignore)
        run = self._run(stages, sha256=sha256, order_rule=stages[0].order, fields=fields)
        report = RunImportReport(run=run, stages=[], unknown=unknown, pool_depth=self.depth)
        skipped = set(unknown.query_ids)
        self.progress.phase("storing ranked lists", sum(len(s) for s in stages))
        for position in range(len(stages)):
            rankings = stages.pop(0)  # its ids are let go once its lists are stored
            kept = np.fromiter((q not in skipped for q in rankings.qids), dtype=bool)
            stage = RunStage.objects.create(
                run=run, name=rankings.name, position=position, **_counts(rankings, kept)
            )
            report.stages.append(stage)
            with _ListWriter(stage.pk, self.progress) as lists:
                self._write(lists, rankings, kept, position)
            del rankings
        report.queries_not_in_collection = sorted(run_qids - self.query_pks.keys())
        return report

    def as_read(
        self, *, order: str, dedup: str, ignore: bool, fields: dict[str, Any]
    ) -> RunImportReport:
        """PostgreSQL, a TREC run read in pieces: each piece's lists are copied while the
        next piece is read, so that the server's work and the reading overlap. The run's
        and the stage's rows come last (their counts and the file's sha256 are known only
        then), under primary keys drawn first: the foreign keys are checked at commit.
        Raises ``ReadWhole`` (the caller's savepoint undoes the lists) when the pieces do
        not do: the whole read then refuses the file, naming its lines, or stores it. A
        query the collection lacks, not ignored, stops the storing; the file is read on for
        the refusal, which names every unknown query's lines."""
        import numpy as np

        from .run_lists import TrecPieces

        run_pk, stage_pk = _draw_pks(Run, RunStage)
        pieces = TrecPieces(self.path, order=order, dedup=dedup)
        qids: set[str] = set()
        counts = {"depth": 0, "n_queries": 0, "n_rows": 0}
        refusing = False
        # The lines' count is the phase's total (an upper bound: comments and blank lines
        # count too); a pass of counting newlines costs little beside the storing.
        self.progress.phase("storing ranked lists", _count_lines(self.path))
        with _ListWriter(stage_pk, self.progress) as lists:
            for piece in pieces:
                qids.update(piece.qids)
                kept = np.fromiter((q in self.query_pks for q in piece.qids), dtype=bool)
                refusing = refusing or not (ignore or kept.all())
                if refusing:
                    continue
                part = _counts(piece, kept)
                counts["depth"] = max(counts["depth"], part["depth"])
                counts["n_queries"] += part["n_queries"]
                counts["n_rows"] += part["n_rows"]
                self._write(lists, piece, kept, 0)
        unknown = self._unknown(qids, ignore=ignore)
        run = self._run(
            [pieces],
            sha256=pieces.sha256,
            order_rule=pieces.order,
            fields=fields,
            pk=run_pk,
        )
        stage = RunStage.objects.create(pk=stage_pk, run=run, name="default", position=0, **counts)
        report = RunImportReport(run=run, stages=[stage], unknown=unknown, pool_depth=self.depth)
        report.queries_not_in_collection = sorted(qids - self.query_pks.keys())
        return report

    def _unknown(self, qids: set[str], *, ignore: bool) -> UnknownIds:
        return check_unknown_queries(
            collection=self.collection,
            path=self.path,
            qids=qids,
            known=self.query_pks.keys(),
            ignore=ignore,
        )

    def _run(
        self,
        stages: list[Any],
        *,
        sha256: str,
        order_rule: str,
        fields: dict[str, Any],
        pk: int | None = None,
    ) -> Run:
        try:
            # Another import of the same name may have committed since the check above (two
            # CLI imports, or the API and a job): the unique constraint decides, and the
            # loser hears the same sentence as if it had come second.
            with transaction.atomic():
                return Run.objects.create(
                    pk=pk,
                    collection=self.collection,
                    name=self.name,
                    source_filename=self.path.name,
                    source_sha256=sha256,
                    source_format="jsonl" if order_rule == "list" else "trec",
                    order_rule=order_rule,
                    duplicates_dropped=sum(s.duplicates_removed for s in stages),
                    **fields,
                )
        except IntegrityError:
            raise _name_taken(self.collection, self.name) from None

    def _write(self, lists: _ListWriter, rankings: StageRankings, kept: Any, position: int) -> None:
        if self.distinct is None:
            from .run_lists import DistinctIds

            self.distinct = DistinctIds()
        for batch in rankings.batches(kept, BATCH):
            lists.add(batch)
            self.distinct.add(batch.ids)
            self.pooled.append((*batch.pooled(self.depth, self.query_pks), position))


def _counts(rankings: StageRankings, kept: Any) -> dict[str, int]:
    """A stage's ``depth``, ``n_queries`` and ``n_rows`` over its kept queries."""
    lengths = (rankings.offsets[1:] - rankings.offsets[:-1])[kept]
    return {
        "depth": int(lengths.max()) if lengths.size else 0,
        "n_queries": int(kept.sum()),
        "n_rows": int(lengths.sum()),
    }


def _draw_pks(*models: type[Run] | type[RunStage]) -> list[int]:
    """Primary keys drawn from the models' sequences (PostgreSQL), for rows that this
    transaction writes after the rows that refer to them."""
    tables = [model._meta.db_table for model in models]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT " + ", ".join("nextval(pg_get_serial_sequence(%s, 'id'))" for _ in tables),
            tables,
        )
        return list(cursor.fetchone())


_RUN_NAME = re.compile(rf"[-a-zA-Z0-9_]{{1,{SLUG_MAX}}}")


def _name_taken(collection: Collection, name: str) -> InvariantError:
    return InvariantError(
        f"collection '{collection.slug}' has a run named '{name}' already; runs never "
        "change, so pick another name"
    )
