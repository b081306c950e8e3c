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
from judgments.models import Collection, Query
from judgments.services import InvariantError, pool_items
from verity_limits import SLUG_MAX

from ..models import DedupPolicy, OrderRule, RankedList, Run, RunStage
from ._common import BATCH, User
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

    def __init__(self, stage: RunStage, progress: Progress) -> None:
        self.stage, self.progress = stage, progress
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
            self.rows += ((self.stage.pk, qid, text, abst) for qid, text, abst in rows)
            self._flush()
            return
        # COPY's text format: the JSON built in Arrow holds no backslash, tab or newline.
        escape = bodies is None
        self.copy.write(
            "".join(
                f"{self.stage.pk}\t{qid.translate(_COPY_TEXT)}\t"
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
            f"stage {stage.name}: {stage.n_queries} queries, {stage.n_rows} rows, "
            f"depth {stage.depth}"
            for stage in self.stages
        ]
        lines.append(
            f"pool depth {self.pool_depth}: {self.unjudged_found} unjudged items found, "
            f"{self.newly_queued} new to the review queue, {self.placeholders_created} "
            "placeholder items created"
        )
        lines.append(f"unknown ids: {self.unknown.describe(collection, depth=self.pool_depth)}")
        missing = self.queries_not_in_collection
        if missing:
            shown = ", ".join(missing[:10])
            more = len(missing) - 10
            lines.append(f"skipped queries: {shown}" + (f" … and {more} more" if more > 0 else ""))
        return lines


def _read_stages(path: Path, *, order: str, dedup: str) -> tuple[list[StageRankings], str]:
    """Every stage's rankings and the file's sha256 (``run_lists``, which needs numpy
    and pyarrow: imported when a run is read, not when the services are)."""
    from . import run_lists

    return run_lists.read_rankings(path, order=order, dedup=dedup)


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
    """
    import numpy as np  # here, not at the top: every process imports the services

    progress = progress or Progress()
    if not _RUN_NAME.fullmatch(name):
        raise InvariantError(
            f"run name {name[:40]!r} must be 1 to {SLUG_MAX} letters, digits, '-' or '_', "
            "e.g. bm25-2024-06"
        )
    if Run.objects.filter(collection=collection, name=name).exists():
        raise _name_taken(collection, name)
    if order not in (OrderRule.SCORE, OrderRule.RANK):
        raise InvariantError(f"order must be 'score' or 'rank', got {order!r}")
    progress.phase(f"reading {path.name}")
    stages, sha256 = _read_stages(path, order=order, dedup=dedup)
    query_pks = dict(Query.objects.filter(collection=collection).values_list("external_id", "pk"))
    unknown = check_unknown_queries(
        collection=collection,
        path=path,
        stages=stages,
        known=query_pks.keys(),
        ignore=ignore_unknown_queries,
    )
    skipped = set(unknown.query_ids)
    fmt = "jsonl" if stages[0].order == "list" else "trec"
    try:
        # Another import of the same name may have committed since the check above (two
        # CLI imports, or the API and a job): the unique constraint decides, and the
        # loser hears the same sentence as if it had come second.
        with transaction.atomic():
            run = Run.objects.create(
                collection=collection,
                name=name,
                description=description,
                source_filename=path.name,
                source_sha256=sha256,
                source_format=fmt,
                order_rule=stages[0].order,
                dedup_policy=dedup,
                duplicates_dropped=sum(s.duplicates_removed for s in stages),
                created_by=by,
            )
    except IntegrityError:
        raise _name_taken(collection, name) from None
    report = RunImportReport(run=run, stages=[], unknown=unknown)
    depth = collection.pool_depth if pool_depth is None else pool_depth
    report.pool_depth = depth
    run_qids = {q for s in stages for q in s.qids}
    pooled: list[tuple[np.ndarray, Any, np.ndarray, int]] = []  # query pks, ids, ranks, stage
    labels: list[str] = []
    progress.phase("storing ranked lists", sum(len(s) for s in stages))
    for position in range(len(stages)):
        rankings = stages.pop(0)  # its ids are let go once its lists are stored
        stage_name = rankings.name
        kept = np.fromiter((q not in skipped for q in rankings.qids), dtype=bool)
        lengths = np.diff(rankings.offsets)[kept]
        stage = RunStage.objects.create(
            run=run,
            name=stage_name,
            position=position,
            depth=int(lengths.max()) if lengths.size else 0,
            n_queries=int(kept.sum()),
            n_rows=int(lengths.sum()),
        )
        report.stages.append(stage)
        labels.append(f"run {name}" if stage_name == "default" else f"run {name} / {stage_name}")
        with _ListWriter(stage, progress) as lists:
            for batch in rankings.batches(kept, BATCH):
                lists.add(batch)
                pooled.append((*batch.pooled(depth, query_pks), position))
        del rankings
    report.queries_not_in_collection = sorted(run_qids - query_pks.keys())
    outcome = pool_items(
        collection=collection,
        rows=(
            row
            for pks, ids, ranks, position in pooled
            for row in zip(pks.tolist(), ids.to_pylist(), ranks.tolist(), repeat(position))
        ),
        labels=labels,
        check_missing=lambda missing: check_unknown_items(
            collection=collection, path=path, missing=missing
        ),
        progress=progress,
    )
    report.placeholders_created = report.unknown.item_ids = len(outcome.placeholders)
    report.unjudged_found, report.newly_queued = outcome.unjudged, outcome.queued
    return report


_RUN_NAME = re.compile(rf"[-a-zA-Z0-9_]{{1,{SLUG_MAX}}}")


def _name_taken(collection: Collection, name: str) -> InvariantError:
    return InvariantError(
        f"collection '{collection.slug}' has a run named '{name}' already; runs never "
        "change, so pick another name"
    )
