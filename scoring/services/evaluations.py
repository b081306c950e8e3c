"""Evaluations: score one stage of a run against one snapshot, stored once per inputs.

Scoring reads only frozen data: a snapshot's rows and a stored run. There is no way to
score against live judgments, so a stored evaluation never changes meaning.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import IntegrityError, transaction

import verity_eval as engine
from jobs.progress import Progress
from judgments.models import Snapshot
from judgments.selectors import frozen_judgments, frozen_queries
from judgments.services import InvariantError

from ..models import Evaluation, EvaluationQuery, Run, RunStage, UnitMapping
from ..selectors import mapping_pairs_of, stage_lists_of
from ._common import BATCH, User

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


def canonical_params(params: engine.EvalParams) -> dict[str, Any]:
    """The parameters that fix an evaluation's meaning, as stored in ``params``."""
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
    progress: Progress | None = None,
) -> tuple[Evaluation, bool]:
    """Score one stage of a run against one snapshot; return (evaluation, created).

    Only frozen data goes in: the snapshot's judgments, statuses and evidence, and the
    stored run. Queries are accounted by the snapshot's statuses: only ``relevant`` ones
    are scorable; run queries the snapshot lacks are excluded as ``not_in_snapshot``.
    The same inputs give the same fingerprint, and scoring them again returns the stored
    evaluation (identical numbers) instead of a copy. A caller scoring several stages
    passes ``inputs`` (``snapshot_inputs(snapshot)``) and the stage's ``lists``
    (``stage_lists_of(stage)``) so that each is read once. ``progress`` hears of each
    phase (reading, scoring, storing the per-query rows).
    """
    progress = progress or Progress()
    if stage.run_id != run.pk:
        raise InvariantError(f"stage '{stage.name}' belongs to another run")
    for other, what in ((snapshot, "snapshot"), (mapping, "unit mapping")):
        if other is not None and other.collection_id != run.collection_id:
            raise InvariantError(f"that {what} belongs to another collection than the run")
    canonical = canonical_params(params)
    fingerprint = _fingerprint(stage=stage, snapshot=snapshot, mapping=mapping, params=canonical)
    existing = Evaluation.objects.filter(fingerprint=fingerprint).first()
    if existing is not None:
        return existing, False
    # Two steps: the snapshot's qrels and statuses, then the stage's lists.
    progress.phase(f"reading snapshot v{snapshot.number} and stage {stage.name}", 2)
    qrels, statuses, evidence = inputs if inputs is not None else snapshot_inputs(snapshot)
    progress.advance(1)
    if lists is None:
        lists = stage_lists_of(stage)
    progress.advance(1)
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
    progress.phase(f"scoring {len(rankings)} ranked lists", len(rankings))
    result = engine.evaluate(
        qrels,
        engine.Run.from_mapping(rankings, abstained=abstained, source=run.name),
        engine_params,
        statuses=statuses,
        evidence=evidence,
        mapping=pairs,
    )
    progress.advance(len(rankings))
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
    progress.phase("storing per-query rows", len(rows))
    for i in range(0, len(rows), BATCH):
        EvaluationQuery.objects.bulk_create(rows[i : i + BATCH])
        progress.advance(len(rows[i : i + BATCH]))
    return evaluation, True
