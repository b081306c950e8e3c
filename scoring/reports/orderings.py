"""The collection's runs scored against qrels given as data (not a snapshot), for a
model judge's calibration: the same runs under people's labels and under the judge's,
so that their orderings can be compared. Registered with ``judgments.extensions`` in
``ScoringConfig.ready()``: the judges app may not import scoring.

Nothing is stored: an evaluation scores a frozen snapshot, and these qrels are neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import verity_eval as engine
from judgments.models import Collection
from scoring.models import Run
from scoring.selectors import stage_lists_of, stages_in_order

#: The measure the orderings compare: graded, top-heavy, and the one TREC's RAG and DL
#: tracks compare human and model qrels with.
MEASURE, K = "nDCG@10", 10


def runs_under_qrels(
    collection: Collection, qrels_sets: Mapping[str, Mapping[str, Mapping[str, int]]]
) -> dict[str, Any]:
    """Each run's final stage scored (macro nDCG@10, unjudged as non-relevant, no unit
    mapping) against every named qrels set: ``{"measure", "runs": [{"run", "stage",
    "scores": {name: value or None}, "queries": {name: scorable count}}]}``. A query
    counts where its qrels hold a relevant grade; the caller gives each set the same
    queries."""
    params = engine.EvalParams(
        ks=(K,), measures=(MEASURE,), rel_level=collection.relevant_grade, dedup="error"
    )
    runs = []
    for run in Run.objects.filter(collection=collection).order_by("name"):
        stages = stages_in_order(run)
        if not stages:
            continue
        final = stages[-1]
        rankings = {qid: items for qid, (items, _) in stage_lists_of(final).items()}
        scores: dict[str, float | None] = {}
        queries: dict[str, int] = {}
        for name, qrels in qrels_sets.items():
            result = engine.evaluate({q: dict(g) for q, g in qrels.items()}, rankings, params)
            value = result.aggregates[MEASURE]["macro"]
            scores[name] = None if value is None else float(value)
            queries[name] = int(result.counts["scorable"])
        runs.append({"run": run.name, "stage": final.name, "scores": scores, "queries": queries})
    return {
        "measure": MEASURE,
        "aggregation": "macro",
        "unjudged": "nonrel",
        "stage": "each run's final stage",
        "runs": runs,
    }
