"""State changes for runs, unit mappings and evaluations; each owns its transaction.

Scoring reads only frozen data: a snapshot's rows and a stored run. There is no way to
score against live judgments, so a stored evaluation never changes meaning.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Value

from judgments.models import (
    Collection,
    Item,
    Judgment,
    Query,
    Snapshot,
)
from judgments.selectors import frozen_judgments, frozen_queries
from judgments.services import InvariantError, VerityError, queue_unjudged

from . import engine
from .models import (
    DedupPolicy,
    Evaluation,
    EvaluationQuery,
    OrderRule,
    RankedList,
    Run,
    RunStage,
    UnitMapping,
    UnitMappingEntry,
)
from .selectors import mapping_pairs_of, stage_lists_of

User = AbstractBaseUser
BATCH = 1000
# Ranked lists go in as Value(...) expressions: that keeps bulk_create on PostgreSQL off
# its UNNEST(jsonb[]) path, where psycopg quotes every list inside one array literal in
# Python, escaping each '"' with a regex callback: ~5x slower for a 10M-line run (see
# bench/README.md, "Run import").
_ITEMS = RankedList._meta.get_field("items")


class RunImportError(VerityError):
    """The run file was refused; nothing was stored. ``errors`` lists file:line problems."""

    def __init__(self, message: str, errors: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.errors = list(errors)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Progress:
    """A plain progress line on a terminal stream; silent when ``stream`` is None."""

    def __init__(self, label: str, total: int, stream: TextIO | None) -> None:
        self.label, self.total, self.stream, self.done, self._shown = label, total, stream, 0, -1

    def advance(self, n: int) -> None:
        self.done += n
        if self.stream is None or self.total <= 0:
            return
        pct = min(100, self.done * 100 // self.total)
        if pct != self._shown:
            self._shown = pct
            bar = "#" * (pct // 4)
            self.stream.write(f"\r{self.label} [{bar:<25}] {pct:3d}% ({self.done}/{self.total})")
            if self.done >= self.total:
                self.stream.write("\n")
            self.stream.flush()


@dataclass
class RunImportReport:
    run: Run
    stages: list[RunStage]
    unjudged_found: int = 0
    newly_queued: int = 0
    placeholders_created: int = 0
    queries_not_in_collection: list[str] = field(default_factory=list)


# -- runs ---------------------------------------------------------------------------------


def _read_stages(path: Path, *, order: str, dedup: str) -> list[engine.Run]:
    try:
        return engine.read_run_stages(path, order=order, dedup=dedup)
    except engine.EngineInputError as exc:
        raise RunImportError(
            f"{path.name}: the run was refused; nothing was imported.", exc.errors
        ) from None
    except engine.EngineError as exc:
        raise RunImportError(str(exc)) from None


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
    progress: TextIO | None = None,
) -> RunImportReport:
    """Store a run file immutably and queue the unjudged items it surfaces.

    The file is validated by the engine's readers first (line-numbered errors, the
    dedup policy applied and recorded); nothing is stored unless all of it is valid.
    For every collection query, the first ``pool_depth`` items of each stage that have
    no judgment become (or join) review tasks, labelled ``run NAME / STAGE``; pooled ids
    the collection lacks are created as placeholder items. Deeper ids stay in the run
    only: scoring works on ids, and creating millions of empty items would help no one.
    """
    if Run.objects.filter(collection=collection, name=name).exists():
        raise InvariantError(
            f"collection '{collection.slug}' has a run named '{name}' already; runs never "
            "change, so pick another name"
        )
    if order not in (OrderRule.SCORE, OrderRule.RANK):
        raise InvariantError(f"order must be 'score' or 'rank', got {order!r}")
    stages = _read_stages(path, order=order, dedup=dedup)
    fmt = "jsonl" if stages[0].order == "list" else "trec"
    run = Run.objects.create(
        collection=collection,
        name=name,
        description=description,
        source_filename=path.name,
        source_sha256=file_sha256(path),
        source_format=fmt,
        order_rule=stages[0].order,
        dedup_policy=dedup,
        duplicates_dropped=sum(s.duplicates_removed for s in stages),
        created_by=by,
    )
    report = RunImportReport(run=run, stages=[])
    query_pks = dict(Query.objects.filter(collection=collection).values_list("external_id", "pk"))
    depth = collection.pool_depth
    pooled: dict[str, list[tuple[str, str, int]]] = {}  # stage -> (qid, item, rank)
    total = sum(len(s.qids) for s in stages)
    bar = Progress(f"storing {name}", total, progress)
    for position, stage_run in enumerate(stages):
        stage_name = stage_run.stage or "default"
        lengths = np.diff(stage_run.offsets)
        stage = RunStage.objects.create(
            run=run,
            name=stage_name,
            position=position,
            depth=int(lengths.max()) if lengths.size else 0,
            n_queries=len(stage_run.qids),
            n_rows=len(stage_run),
        )
        report.stages.append(stage)
        rows: list[RankedList] = []
        pool = pooled.setdefault(stage_name, [])
        for qid, items in stage_run.iter_rankings():
            rows.append(
                RankedList(
                    stage=stage,
                    query_id=qid,
                    items=Value(items, output_field=_ITEMS),
                    abstained=qid in stage_run.abstained,
                )
            )
            if qid in query_pks:
                pool.extend((qid, item, rank) for rank, item in enumerate(items[:depth], 1))
            if len(rows) >= BATCH:
                RankedList.objects.bulk_create(rows)
                bar.advance(len(rows))
                rows = []
        RankedList.objects.bulk_create(rows)
        bar.advance(len(rows))
    run_qids = {q for s in stages for q in s.qids}
    report.queries_not_in_collection = sorted(run_qids - query_pks.keys())
    _pool_unjudged(
        collection=collection, run=run, pooled=pooled, query_pks=query_pks, report=report
    )
    return report


def _pool_unjudged(
    *,
    collection: Collection,
    run: Run,
    pooled: Mapping[str, list[tuple[str, str, int]]],
    query_pks: Mapping[str, int],
    report: RunImportReport,
) -> None:
    wanted = {item for pool in pooled.values() for _, item, _ in pool}
    item_pks: dict[str, int] = {}
    for chunk in _chunks(sorted(wanted), 5000):
        item_pks.update(
            Item.objects.filter(collection=collection, external_id__in=chunk).values_list(
                "external_id", "pk"
            )
        )
    missing = [
        Item(collection=collection, external_id=i, placeholder=True)
        for i in sorted(wanted - item_pks.keys())
    ]
    for item in Item.objects.bulk_create(missing, batch_size=BATCH):
        item_pks[item.external_id] = item.pk
    report.placeholders_created = len(missing)
    distinct = {(query_pks[q], item_pks[i]) for pool in pooled.values() for q, i, _ in pool}
    judged: set[tuple[int, int]] = set()
    for qids in _chunks(sorted({q for q, _ in distinct}), 500):
        judged.update(Judgment.objects.filter(query_id__in=qids).values_list("query_id", "item_id"))
    report.unjudged_found = len(distinct - judged)
    for stage_name, pool in pooled.items():
        label = f"run {run.name}" if stage_name == "default" else f"run {run.name} / {stage_name}"
        by_query: dict[str, list[tuple[int, int, int]]] = {}
        for qid, item, rank in pool:
            by_query.setdefault(qid, []).append((query_pks[qid], item_pks[item], rank))
        for qids in _chunks(sorted(by_query), 200):
            _, created = queue_unjudged(
                collection=collection,
                pairs=(p for q in qids for p in by_query[q]),
                source=label,
            )
            report.newly_queued += created


def _chunks(seq: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


# -- unit mappings ------------------------------------------------------------------------


@transaction.atomic
def import_unit_mapping(
    *,
    collection: Collection,
    path: Path,
    from_unit: str = "chunk",
    to_unit: str = "document",
    note: str = "",
    by: User | None = None,
) -> tuple[UnitMapping, bool]:
    """Store a fine → coarse id map (``fine<TAB>coarse`` lines) as version n+1.

    A map whose content equals the latest version's is not stored again: that version is
    returned with ``False``. The content hash covers the sorted pairs and the units.
    """
    try:
        pairs = engine.read_mapping(path)
    except engine.EngineInputError as exc:
        raise RunImportError(f"{path.name}: the mapping was refused.", exc.errors) from None
    digest = hashlib.sha256()
    digest.update(json.dumps([from_unit, to_unit]).encode())
    for fine in sorted(pairs):
        digest.update(json.dumps([fine, pairs[fine]], ensure_ascii=False).encode() + b"\n")
    content_hash = digest.hexdigest()
    latest = UnitMapping.objects.filter(collection=collection).order_by("-number").first()
    if latest is not None and latest.content_hash == content_hash:
        return latest, False
    mapping = UnitMapping.objects.create(
        collection=collection,
        number=(latest.number + 1) if latest else 1,
        content_hash=content_hash,
        from_unit=from_unit,
        to_unit=to_unit,
        note=note,
        n_entries=len(pairs),
        created_by=by,
    )
    UnitMappingEntry.objects.bulk_create(
        (UnitMappingEntry(mapping=mapping, fine_id=f, coarse_id=c) for f, c in pairs.items()),
        batch_size=5000,
    )
    return mapping, True


# -- evaluations --------------------------------------------------------------------------


#: A snapshot's (qrels, statuses, evidence) by external id, as ``snapshot_inputs`` reads them.
SnapshotInputs = tuple[dict[str, dict[str, int]], dict[str, str], dict[str, list[list[str]]]]
#: A stage's ``{query id: (ranked items, abstained)}``, as ``stage_lists_of`` reads them.
StageLists = dict[str, tuple[list[str], bool]]


def snapshot_inputs(snapshot: Snapshot) -> SnapshotInputs:
    """The frozen qrels, statuses and evidence conditions of a snapshot, by external id."""
    qrels: dict[str, dict[str, int]] = {}
    for qid, item, grade in frozen_judgments(snapshot):
        qrels.setdefault(qid, {})[item] = grade
    statuses: dict[str, str] = {}
    evidence: dict[str, list[list[str]]] = {}
    for qid, status, groups in frozen_queries(snapshot):
        statuses[qid] = status
        if groups:
            evidence[qid] = groups
    return qrels, statuses, evidence


def _canonical_params(params: engine.EvalParams) -> dict[str, Any]:
    return {
        "ks": list(params.ks),
        "measures": list(params.measures) if params.measures else None,
        "rel_level": params.rel_level,
        "unjudged": params.unjudged,
    }


def _fingerprint(
    *, stage: RunStage, snapshot: Snapshot, mapping: UnitMapping | None, params: dict[str, Any]
) -> str:
    # The rows' identities go in beside their content hashes: two runs uploaded from one
    # file, or a snapshot (mapping) whose content returns to an older version's, are
    # different rows, and scoring one must not hand back an evaluation naming the other.
    payload = {
        "engine": engine.__version__,
        "snapshot": snapshot.content_hash,
        "snapshot_id": snapshot.pk,
        "run_id": stage.run_id,
        "stage_id": stage.pk,
        "mapping_id": mapping.pk if mapping else None,
        "run": stage.run.source_sha256,
        "order": stage.run.order_rule,
        "dedup": stage.run.dedup_policy,
        "stage": stage.name,
        "mapping": mapping.content_hash if mapping else None,
        "params": params,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


@transaction.atomic
def score_run_stage(
    *,
    run: Run,
    stage: RunStage,
    snapshot: Snapshot,
    params: engine.EvalParams,
    mapping: UnitMapping | None = None,
    by: User | None = None,
    inputs: SnapshotInputs | None = None,
    lists: StageLists | None = None,
) -> tuple[Evaluation, bool]:
    """Score one stage of a run against one snapshot; return (evaluation, created).

    Only frozen data goes in: the snapshot's judgments, statuses and evidence, and the
    stored run. Queries are accounted by the snapshot's statuses: only ``relevant`` ones
    are scorable; run queries the snapshot lacks are excluded as ``not_in_snapshot``.
    The same inputs give the same fingerprint, and scoring them again returns the stored
    evaluation (identical numbers) instead of a copy. A caller scoring several stages
    passes ``inputs`` (``snapshot_inputs(snapshot)``) and the stage's ``lists``
    (``stage_lists_of(stage)``) so that each is read once.
    """
    if stage.run_id != run.pk:
        raise InvariantError(f"stage '{stage.name}' belongs to another run")
    for other, what in ((snapshot, "snapshot"), (mapping, "unit mapping")):
        if other is not None and other.collection_id != run.collection_id:
            raise InvariantError(f"that {what} belongs to another collection than the run")
    canonical = _canonical_params(params)
    fingerprint = _fingerprint(stage=stage, snapshot=snapshot, mapping=mapping, params=canonical)
    existing = Evaluation.objects.filter(fingerprint=fingerprint).first()
    if existing is not None:
        return existing, False
    qrels, statuses, evidence = inputs if inputs is not None else snapshot_inputs(snapshot)
    if lists is None:
        lists = stage_lists_of(stage)
    rankings = {qid: items for qid, (items, _) in lists.items()}
    abstained = frozenset(qid for qid, (_, marked) in lists.items() if marked)
    pairs = mapping_pairs_of(mapping)
    # Stored lists are already ordered and deduplicated under the run's recorded rules.
    engine_params = engine.EvalParams(
        ks=params.ks,
        measures=params.measures,
        rel_level=params.rel_level,
        unjudged=params.unjudged,
        dedup="error",
    )
    result = engine.evaluate(
        qrels,
        engine.Run.from_mapping(rankings, abstained=abstained, source=run.name),
        engine_params,
        statuses=statuses,
        evidence=evidence,
        mapping=pairs,
    )
    data = result.to_dict()
    counts = dict(data["counts"])
    excluded = dict(counts.get("excluded", {}))
    if "not_in_qrels" in excluded:
        excluded["not_in_snapshot"] = excluded.pop("not_in_qrels")
    counts["excluded"] = excluded
    try:
        # A savepoint: a concurrent scoring of the same inputs may commit first, and then
        # its evaluation is the one to return (the unique fingerprint refuses a second).
        with transaction.atomic():
            evaluation = Evaluation.objects.create(
                collection_id=run.collection_id,
                run=run,
                stage=stage,
                snapshot=snapshot,
                mapping=mapping,
                params={
                    **canonical,
                    "order": run.order_rule,
                    "dedup": run.dedup_policy,
                    "stage": stage.name,
                    "snapshot": snapshot.number,
                    "snapshot_hash": snapshot.content_hash,
                    "mapping": mapping.number if mapping else None,
                    "engine": data["params"],
                },
                engine_version=engine.__version__,
                fingerprint=fingerprint,
                status=data["status"],
                counts=counts,
                aggregates=data["aggregates"],
                created_by=by,
            )
    except IntegrityError:
        existing = Evaluation.objects.filter(fingerprint=fingerprint).first()
        if existing is None:
            raise
        return existing, False
    reasons = {
        qid: ("not_in_snapshot" if r == "not_in_qrels" else r) for qid, r in result.excluded.items()
    }
    rows = [
        EvaluationQuery(evaluation=evaluation, query_id=qid, values=values)
        for qid, values in data["per_query"].items()
    ] + [
        EvaluationQuery(evaluation=evaluation, query_id=qid, values={"excluded": reason})
        for qid, reason in reasons.items()
        if qid not in data["per_query"]
    ]
    EvaluationQuery.objects.bulk_create(rows, batch_size=BATCH)
    return evaluation, True
