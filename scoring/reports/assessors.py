"""What disagreement does to the numbers: evaluations of one snapshot scored again against
each assessor's frozen labels, the ordering of the runs under each, and Kendall's tau
between those orderings and the ordering under the resolved labels.

Only a snapshot of a collection with several assessors per item keeps every assessment
(canonical form 2), so only there is this reproducible; elsewhere it is ``None``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import verity_eval as engine
from judgments.selectors import frozen_assessments
from scoring.models import Evaluation
from scoring.selectors import mapping_pairs_of, stage_lists_of
from scoring.services.evaluations import snapshot_inputs

RESOLVED = "resolved"


def _score(evaluation: Evaluation, qrels: dict[str, dict[str, int]], inputs: Any) -> Any:
    _, statuses, evidence = inputs
    lists = stage_lists_of(evaluation.stage)
    params = evaluation.params
    result = engine.evaluate(
        qrels,
        engine.Run.from_mapping(
            {qid: items for qid, (items, _) in lists.items()},
            abstained=frozenset(qid for qid, (_, marked) in lists.items() if marked),
            source=evaluation.run.name,
        ),
        engine.EvalParams(
            ks=tuple(params["ks"]),
            measures=tuple(params["measures"]) if params["measures"] else None,
            rel_level=params["rel_level"],
            unjudged="nonrel" if params["unjudged"] == "bounds" else params["unjudged"],
            dedup="error",
        ),
        statuses=statuses,
        evidence=evidence,
        mapping=mapping_pairs_of(evaluation.mapping),
    )
    return result.aggregates


def _tau(x: Sequence[float | None], y: Sequence[float | None]) -> tuple[float | None, str]:
    pairs = [(a, b) for a, b in zip(x, y, strict=True) if a is not None and b is not None]
    if len(pairs) < 2:
        return None, "fewer than two runs with a defined score"
    from scipy.stats import kendalltau

    value = float(kendalltau([a for a, _ in pairs], [b for _, b in pairs]).statistic)
    if math.isnan(value):
        return None, "every run ties under one of the two label sets"
    return value, ""


def assessor_effect(evaluations: Sequence[Evaluation], measure: str) -> dict[str, Any] | None:
    """``measure`` (macro) of each evaluation's run stage under the resolved labels and
    under each assessor's labels of the same snapshot; per assessor the runs' ordering
    and Kendall's tau (scipy, tau-b) against the resolved ordering. ``None`` unless the
    evaluations share one snapshot that keeps several assessors' labels. Bounds
    evaluations are rescored with unjudged items as non-relevant (their low bound)."""
    snapshots = {e.snapshot_id for e in evaluations}
    if len(snapshots) != 1 or not evaluations[0].snapshot.has_overlap:
        return None
    snapshot = evaluations[0].snapshot
    inputs = snapshot_inputs(snapshot)
    label_sets: dict[str, dict[str, dict[str, int]]] = {RESOLVED: inputs[0]}
    for qid, item, who, grade in frozen_assessments(snapshot):
        label_sets.setdefault(who, {}).setdefault(qid, {})[item] = grade
    runs = [f"{e.run.name}/{e.stage.name}" for e in evaluations]
    rows = []
    for name in [RESOLVED, *sorted(n for n in label_sets if n != RESOLVED)]:
        scores = []
        for evaluation in evaluations:
            value = _score(evaluation, label_sets[name], inputs).get(measure, {}).get("macro")
            scores.append(value if isinstance(value, float | int) else None)
        order = [
            runs[i]
            for i in sorted(
                (i for i, v in enumerate(scores) if v is not None), key=lambda i: -scores[i]
            )
        ]
        rows.append({"labels": name, "scores": scores, "order": order})
    resolved = rows[0]["scores"]
    for row in rows:
        row["tau"], why = _tau(resolved, row["scores"])
        if why:
            row["undefined"] = why
    return {"measure": measure, "aggregation": "macro", "runs": runs, "rows": rows}
