"""Stage diagnosis: for every relevant item of a multi-stage run, the last stage it reached
(not retrieved, lost between two stages, or reached the last one), with each stage's
scores at the same cutoff. Reads only: the stages' evaluations are the stored ones, and
scoring the missing ones is a job (``scoring.tasks.start_diagnosis``).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import verity_eval as engine
from judgments.models import Snapshot
from judgments.selectors import snapshot_of
from judgments.services import VerityError
from scoring.models import Evaluation, Run, RunStage, UnitMapping
from scoring.reports.formatting import UNJUDGED_POLICIES, _natural
from scoring.selectors import (
    mapping_pairs_of,
    query_info_for,
    stage_lists_of,
    stages_in_order,
    stored_evaluation,
)
from scoring.services import SnapshotInputs, StageLists, canonical_params, snapshot_inputs

#: Readable names for a loss, by the name of the stage the item failed to reach.
LOSS_GLOSS = {
    "reranked": "lost in ranking",
    "rerank": "lost in ranking",
    "ranked": "lost in ranking",
    "context": "lost at the context budget",
}


def outcome_kinds(stage_names: Sequence[str]) -> list[dict[str, str]]:
    """The outcomes of a relevant item for an N-stage pipeline, in pipeline order."""
    first, last = stage_names[0], stage_names[-1]
    kinds = [
        {
            "key": "not_retrieved",
            "label": "not retrieved",
            "description": f"missing from {first}",
        }
    ]
    for here, there in itertools.pairwise(stage_names):
        kinds.append(
            {
                "key": f"lost_after:{here}",
                "label": LOSS_GLOSS.get(there.lower(), f"lost between {here} and {there}"),
                "description": f"in {here}, not in {there}",
            }
        )
    kinds.append(
        {"key": f"reached:{last}", "label": f"reached {last}", "description": f"in {last}"}
    )
    return kinds


def _mapped(items: Sequence[str], pairs: Mapping[str, str] | None) -> list[str]:
    if not pairs:
        return list(items)
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(pairs.get(item, item), None)
    return list(seen)


def diagnose(
    *,
    stage_names: Sequence[str],
    lists: Sequence[Mapping[str, Sequence[str]]],
    qrels: Mapping[str, Mapping[str, int]],
    statuses: Mapping[str, str],
    rel_level: int,
    mapping: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """For every relevant item of every scorable query, the last stage it reached.

    ``lists[j]`` is stage j's ``{query: ranked ids}`` in pipeline order. Which queries
    are scorable is the engine's rule (``engine.exclusion_reason``). An item's outcome is
    decided by the last stage that holds it; one that skips a stage and reappears later
    (a non-nested pipeline) keeps that outcome and lists the stages it skipped.
    """
    if not stage_names or len(stage_names) != len(lists):
        raise ValueError("give one ranked-list mapping per stage, in pipeline order")
    kinds = outcome_kinds(stage_names)
    keys = [k["key"] for k in kinds]
    scorable: list[str] = []
    excluded: dict[str, str] = {}
    for qid in _natural(set(statuses) | set(qrels)):
        reason = engine.exclusion_reason(
            statuses.get(qid),
            in_qrels=qid in qrels,
            has_relevant=any(g >= rel_level for g in qrels.get(qid, {}).values()),
        )
        if reason:
            excluded[qid] = reason
        else:
            scorable.append(qid)
    totals: Counter[str] = Counter()
    reached_by_stage = [0] * len(stage_names)
    per_query: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    non_nested = 0
    for qid in scorable:
        ranks_by_stage = []
        in_run = False
        for stage_lists in lists:
            ranked = stage_lists.get(qid)
            in_run = in_run or ranked is not None
            mapped = _mapped(ranked or (), mapping)
            ranks_by_stage.append({item: pos for pos, item in enumerate(mapped, start=1)})
        gold = _natural(i for i, g in qrels[qid].items() if g >= rel_level)
        counts: Counter[str] = Counter()
        reached = [0] * len(stage_names)
        for item in gold:
            ranks = [r.get(item) for r in ranks_by_stage]
            present = [j for j, r in enumerate(ranks) if r is not None]
            if not present:
                key = "not_retrieved"
                skipped: list[str] = []
            else:
                last = present[-1]
                key = keys[last + 1]
                skipped = [stage_names[j] for j in range(last) if ranks[j] is None]
            if skipped:
                non_nested += 1
            for j in present:
                reached[j] += 1
                reached_by_stage[j] += 1
            counts[key] += 1
            totals[key] += 1
            items.append(
                {
                    "query": qid,
                    "item": item,
                    "grade": qrels[qid][item],
                    "outcome": key,
                    "ranks": ranks,
                    "skipped": skipped,
                }
            )
        per_query.append(
            {
                "query": qid,
                "relevant": len(gold),
                "in_run": in_run,
                "outcomes": {k: counts[k] for k in keys},
                "reached": reached,
            }
        )
    n_items = sum(totals.values())
    return {
        "stages": list(stage_names),
        "outcomes": kinds,
        "totals": {k: totals[k] for k in keys},
        "share": {k: (totals[k] / n_items if n_items else None) for k in keys},
        "relevant_items": n_items,
        "reached_by_stage": reached_by_stage,
        "non_nested": non_nested,
        "scorable": len(scorable),
        "excluded": dict(Counter(excluded.values())),
        "per_query": per_query,
        "items": items,
    }


def build_diagnosis(
    *,
    run: Run,
    stages: Sequence[RunStage],
    snapshot: Snapshot,
    k: int,
    rel_level: int,
    unjudged: str,
    mapping: UnitMapping | None,
    evaluations: Sequence[Evaluation | None],
    inputs: SnapshotInputs | None = None,
    stage_lists: Sequence[StageLists] | None = None,
) -> dict[str, Any]:
    """The diagnosis of a run on a snapshot, with each stage's scores at the same k.

    ``evaluations[j]`` is stage j scored with identical parameters, or ``None`` when it
    has not been scored (a reader who may not score sees the item outcomes only).
    ``inputs`` and ``stage_lists`` are the snapshot's and stages' rows when the caller
    has read them already.
    """
    qrels, statuses, _ = inputs if inputs is not None else snapshot_inputs(snapshot)
    if stage_lists is None:
        stage_lists = [stage_lists_of(stage) for stage in stages]
    result = diagnose(
        stage_names=[s.name for s in stages],
        lists=[{qid: items for qid, (items, _) in lists.items()} for lists in stage_lists],
        qrels=qrels,
        statuses=statuses,
        rel_level=rel_level,
        mapping=mapping_pairs_of(mapping),
    )
    info = query_info_for(run.collection, (row["query"] for row in result["per_query"]))
    rows_by_stage: list[dict[str, dict[str, Any]]] = []
    for evaluation in evaluations:
        if evaluation is None:
            rows_by_stage.append({})
        else:
            rows_by_stage.append(dict(evaluation.rows.values_list("query_id", "values")))
    recall_key = f"R@{k}"
    for row in result["per_query"]:
        row.update(info.get(row["query"], {"text": "", "tags": []}))
        row["recall"] = [
            stage_rows.get(row["query"], {}).get(recall_key) if stage_rows else None
            for stage_rows in rows_by_stage
        ]
    result["stage_scores"] = [
        {
            "stage": stage.name,
            "position": stage.position,
            "depth": stage.depth,
            "evaluation": evaluation.pk if evaluation else None,
            "aggregates": evaluation.aggregates if evaluation else None,
        }
        for stage, evaluation in zip(stages, evaluations, strict=True)
    ]
    result["header"] = {
        "collection": run.collection.slug,
        "run": run.name,
        "snapshot": snapshot.number,
        "snapshot_hash": snapshot.content_hash,
        "labels": snapshot.label_sources,
        "unit": snapshot.unit,
        "k": k,
        "rel_level": rel_level,
        "unjudged": unjudged,
        "mapping": mapping.number if mapping else None,
        "stage_depths": {s.name: s.depth for s in stages},
    }
    return result


# -- diagnosis parameters and scoring -----------------------------------------------------


class DiagnosisError(VerityError):
    """Parameters a diagnosis cannot use; the message says how to fix them."""


def diagnosis_params(
    *,
    run: Run,
    snapshot: int | None,
    k: int | None,
    rel_level: int | None,
    unjudged: str,
    mapping: int | None,
) -> dict[str, Any]:
    """Resolve a diagnosis request: the snapshot (latest by default), the cutoff (the
    last stage's depth by default: every stage measured at the final budget), the
    threshold (the snapshot's by default) and the unit mapping version."""
    stages = stages_in_order(run)
    if not stages:
        raise DiagnosisError(f"run '{run.name}' has no stage")
    snap = snapshot_of(run.collection, snapshot)
    if k is None:
        k = max(1, stages[-1].depth)
    if unjudged not in UNJUDGED_POLICIES:
        raise DiagnosisError(
            f"unjudged={unjudged!r} is not a policy; use one of {', '.join(UNJUDGED_POLICIES)}"
        )
    unit_mapping = None
    if mapping is not None:
        unit_mapping = UnitMapping.objects.filter(collection=run.collection, number=mapping).first()
        if unit_mapping is None:
            raise DiagnosisError(f"'{run.collection.slug}' has no unit mapping v{mapping}")
    try:
        engine_params = engine.EvalParams(
            ks=(k,),
            rel_level=rel_level if rel_level is not None else snap.relevant_grade,
            unjudged=unjudged,
        )
    except engine.EngineError as exc:
        raise DiagnosisError(str(exc)) from None
    return {
        "run": run,
        "stages": stages,
        "snapshot": snap,
        "k": k,
        "params": engine_params,
        "mapping": unit_mapping,
    }


def stored_stage_evaluations(
    *,
    stages: Sequence[RunStage],
    snapshot: Snapshot,
    params: engine.EvalParams,
    mapping: UnitMapping | None,
) -> list[Evaluation | None]:
    """Each stage's stored evaluation at a diagnosis's parameters (every measure), or
    ``None`` where there is none yet."""
    canonical = {**canonical_params(params), "measures": None}
    return [
        stored_evaluation(
            stage=stage, snapshot=snapshot, mapping=mapping, canonical_params=canonical
        )
        for stage in stages
    ]


def diagnosis_for(
    *,
    run: Run,
    stages: Sequence[RunStage],
    snapshot: Snapshot,
    k: int,
    params: engine.EvalParams,
    mapping: UnitMapping | None,
) -> dict[str, Any]:
    """Diagnose the run, with each stage's scores from its stored evaluation at exactly
    these parameters; a stage without one shows no scores (the item outcomes, which need
    no scoring, are complete either way). Never writes."""
    # Read once here, not once per stage and again for the diagnosis.
    inputs = snapshot_inputs(snapshot)
    stage_lists = [stage_lists_of(stage) for stage in stages]
    evaluations = stored_stage_evaluations(
        stages=stages, snapshot=snapshot, params=params, mapping=mapping
    )
    return build_diagnosis(
        run=run,
        stages=stages,
        snapshot=snapshot,
        k=k,
        rel_level=params.rel_level,
        unjudged=params.unjudged,
        mapping=mapping,
        evaluations=evaluations,
        inputs=inputs,
        stage_lists=stage_lists,
    )
