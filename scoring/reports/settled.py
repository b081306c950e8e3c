"""Whether a comparison is settled: could the unjudged items change its sign?

For two runs scored on one snapshot, each compared measure is scored again on both
stages with the engine's ``bounds`` policy (unjudged items as non-relevant and as
relevant at rel_level: ``verity_eval.evaluate``), on the queries paired in the comparison.
``scoring.comparison.sign_bounds`` turns the four per-query arrays into the range the
mean difference a - b could take, in the direction that favours each run, and a verdict.

When the sign could change, the pairs involved are the unjudged items within the
measure's cutoff (every ranked one for RR, AP, Rprec, bpref, as ``bounds`` relabels) in
either run's ranking, of the queries whose value the labelings move
(``verity_eval.unjudged_rows``). Judging them all settles the comparison on the next
snapshot: with no unjudged item left in either ranking, low = high on both sides.

A comparison of one run on two snapshots (``mode == "labels"``) does not apply: it asks
what the label changes did, not which run is better.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import verity_eval as engine
from judgments.models import FocusSet, Snapshot
from judgments.selectors import focus_progress
from scoring import comparison
from scoring.models import Evaluation
from scoring.reports.comparison import _compared_measures
from scoring.reports.formatting import _natural
from scoring.selectors import mapping_pairs_of, stage_lists_of
from scoring.services.evaluations import snapshot_inputs
from verity_eval.params import natural_key, split_measure

#: Measures whose value does not depend on how unjudged items are labelled.
LABEL_FREE = ("Ceiling", "Judged", "Evidence")
#: Pairs listed per measure on the page; the JSON lists them all.
PAGE_PAIRS = 25

RULE = (
    "each run scored twice on this snapshot, unjudged items as non-relevant and as relevant "
    "at the relevance threshold (the 'bounds' policy); the mean difference a - b could go "
    "as low as mean(a non-relevant - b relevant) and as high as mean(a relevant - b "
    "non-relevant). Settled when both ends are on one side of 0 (or both 0). An item both "
    "runs rank may count as relevant for one and not the other, so 'could change' is an "
    "upper bound. For P@k, AnyHit@k and RR, which read only the labels of a run's own "
    "ranked items, 'settled' is certain; for measures with a denominator or an ideal "
    "ranking (R@k, AllHit@k, nDCG@k, AP, Rprec, bpref), an unjudged item outside the first k "
    "still moves |G|, so 'settled' is under the bounds policy's labelings"
)


def focus_name(a: Evaluation, b: Evaluation) -> str:
    """The focus set that holds the pairs which could change comparison (a, b)."""
    return f"compare-{a.pk}-{b.pk}"


def _bounds(a: Evaluation, measures: Sequence[str], inputs: Any) -> tuple[Any, Any]:
    """(run, per-query bounds) of evaluation ``a``'s stage on its snapshot."""
    qrels, statuses, evidence = inputs
    lists = stage_lists_of(a.stage)
    run = engine.Run.from_mapping(
        {qid: items for qid, (items, _) in lists.items()}, source=a.run.name
    )
    mapping = mapping_pairs_of(a.mapping)
    if mapping:
        run, _ = run.map_units(mapping)
    params = engine.EvalParams(
        ks=tuple(a.params["ks"]),
        measures=tuple(measures),
        rel_level=a.params["rel_level"],
        unjudged="bounds",
    )
    result = engine.evaluate(qrels, run, params, statuses=statuses, evidence=evidence)
    return run, result.per_query


def settlement(a: Evaluation, b: Evaluation) -> dict[str, Any]:
    """Per compared measure, whether the unjudged items could change the sign of the
    mean difference a - b; the pairs that could, per measure and all together (the
    ``pairs`` a focus set queues). ``{"applies": False, "reason": …}`` when the two
    evaluations are not two runs on one snapshot."""
    if a.snapshot_id != b.snapshot_id:
        return {
            "applies": False,
            "reason": "one run on two snapshots: the comparison shows what the label changes "
            "did, not which run is better, so no unjudged item can 'settle' it",
        }
    measures = [m for m in _compared_measures(a, b) if split_measure(m)[0] not in LABEL_FREE]
    inputs = snapshot_inputs(a.snapshot)
    run_a, rows_a = _bounds(a, measures, inputs)
    run_b, rows_b = _bounds(b, measures, inputs)
    shared = _natural(rows_a.keys() & rows_b.keys())
    qrels = inputs[0]
    entries: list[dict[str, Any]] = []
    everything: set[tuple[str, str]] = set()
    unjudged: dict[int | None, list[list[tuple[str, str, int]]]] = {}
    for measure in measures:
        al = [rows_a[q][measure]["low"] for q in shared]
        ah = [rows_a[q][measure]["high"] for q in shared]
        bl = [rows_b[q][measure]["low"] for q in shared]
        bh = [rows_b[q][measure]["high"] for q in shared]
        entry: dict[str, Any] = {"measure": measure, **comparison.sign_bounds(al, ah, bl, bh)}
        pairs: list[tuple[str, str]] = []
        if not entry["settled"]:
            moved = [
                q
                for q, x0, x1, y0, y1 in zip(shared, al, ah, bl, bh, strict=True)
                if x1 - x0 > comparison.TIE or y1 - y0 > comparison.TIE
            ]
            depth = split_measure(measure)[1]
            if depth not in unjudged:
                # Once per cutoff (measures share them), over every paired query.
                unjudged[depth] = [
                    engine.unjudged_rows(qrels, run, depth=depth, queries=shared)
                    for run in (run_a, run_b)
                ]
            wanted = set(moved)
            found = {(q, item) for rows in unjudged[depth] for q, item, _ in rows if q in wanted}
            pairs = sorted(found, key=lambda p: (natural_key(p[0]), p[1]))
            everything |= found
        entry["pairs"] = {"count": len(pairs), "rows": [list(p) for p in pairs]}
        entries.append(entry)
    all_pairs = sorted(everything, key=lambda p: (natural_key(p[0]), p[1]))
    return {
        "applies": True,
        "snapshot": a.snapshot.number,
        "rule": RULE,
        "settled": all(e["settled"] for e in entries),
        "measures": entries,
        "pairs": {"count": len(all_pairs), "rows": [list(p) for p in all_pairs]},
        "focus": focus_name(a, b),
    }


def newer_comparison(a: Evaluation, b: Evaluation) -> dict[str, Any] | None:
    """When the collection has a snapshot newer than the one a and b (two runs) are pinned
    to: its number, and the evaluations of a's and b's stages scored on it as a and b were
    (``None`` where not scored yet). A comparison never moves to newer labels by itself:
    the reader is offered the comparison on the newer snapshot, beside this one."""
    if a.snapshot_id != b.snapshot_id:
        return None
    latest = Snapshot.objects.filter(collection_id=a.collection_id).order_by("-number").first()
    if latest is None or latest.number <= a.snapshot.number:
        return None
    ea, eb = scored_like(a, latest), scored_like(b, latest)
    return {
        "snapshot": latest.number,
        "a": ea.pk if ea else None,
        "b": eb.pk if eb else None,
    }


def scored_like(evaluation: Evaluation, snapshot: Snapshot) -> Evaluation | None:
    """The evaluation of ``evaluation``'s stage on ``snapshot`` with its parameters,
    mapping and engine, if one is stored."""
    keys = ("ks", "measures", "rel_level", "unjudged")
    for other in Evaluation.objects.filter(
        stage_id=evaluation.stage_id,
        snapshot=snapshot,
        mapping_id=evaluation.mapping_id,
        engine_version=evaluation.engine_version,
    ).order_by("pk"):
        if all(other.params.get(k) == evaluation.params.get(k) for k in keys):
            return other
    return None


def focus_state(a: Evaluation, b: Evaluation) -> dict[str, Any] | None:
    """The focus set of comparison (a, b), if queued: its pairs and how many are judged
    now (live labels, not the pinned snapshot's)."""
    focus = FocusSet.objects.filter(collection_id=a.collection_id, name=focus_name(a, b)).first()
    if focus is None:
        return None
    judged, total = focus_progress(focus)
    return {
        "name": focus.name,
        "pairs": total,
        "judged": judged,
        "queued_at": focus.created_at.isoformat(),
    }


__all__ = [
    "PAGE_PAIRS",
    "RULE",
    "focus_name",
    "focus_state",
    "newer_comparison",
    "scored_like",
    "settlement",
]
