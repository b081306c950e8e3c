"""Paired comparison of two evaluations (two runs on one snapshot, or one run on two
snapshots): when to refuse, then the per-measure differences with their intervals and
tests, the pooled recall difference, the per-tag breakdown and the snapshot diff. The
statistics themselves live in ``scoring.comparison``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from judgments.models import Snapshot
from judgments.selectors import diff_snapshots
from judgments.services import VerityError
from scoring import comparison
from scoring.models import Evaluation
from scoring.reports.assessors import assessor_effect
from scoring.reports.formatting import UNTESTED_FAMILIES, _natural
from scoring.selectors import query_info_for
from verity_eval.params import split_measure


class ComparisonRefused(VerityError):
    """Two evaluations whose numbers do not mean the same thing; ``reasons`` says why."""

    def __init__(self, reasons: Sequence[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = list(reasons)


COMPARED_PARAMS = (
    ("ks", "the cutoffs differ"),
    ("rel_level", "the relevance threshold differs"),
    ("unjudged", "the unjudged policy differs"),
)


def comparison_refusals(a: Evaluation, b: Evaluation) -> list[str]:
    """Why a and b cannot be compared (empty when they can).

    Comparable: one collection, the same stage name, cutoffs, threshold, unjudged policy,
    unit mapping and engine, and either one snapshot (two runs) or one run (two snapshots,
    where every difference comes from the label changes between them).
    """
    if a.pk == b.pk:
        return [f"a and b are the same evaluation ({a.pk}); choose two different ones"]
    reasons: list[str] = []
    if a.collection_id != b.collection_id:
        return [
            f"a belongs to collection '{a.collection.slug}' and b to '{b.collection.slug}': "
            "evaluations of different collections never share queries"
        ]
    if a.stage.name != b.stage.name:
        reasons.append(
            f"the stage differs: a scores '{a.stage.name}', b scores '{b.stage.name}'; "
            "compare the same stage (use the diagnosis page to compare stages of one run)"
        )
    for key, what in COMPARED_PARAMS:
        va, vb = a.params.get(key), b.params.get(key)
        if va != vb:
            reasons.append(
                f"{what}: a has {_show(va)}, b has {_show(vb)}; score both with the same"
            )
    ma = a.mapping.number if a.mapping else None
    mb = b.mapping.number if b.mapping else None
    if ma != mb:
        reasons.append(
            f"the unit mapping differs: a uses {_show_mapping(ma)}, b uses {_show_mapping(mb)}; "
            "the units (and so the denominators) are not the same"
        )
    if a.engine_version != b.engine_version:
        reasons.append(
            f"the engine version differs ({a.engine_version} vs {b.engine_version}); score both "
            "again with the current engine"
        )
    if a.snapshot_id != b.snapshot_id and a.run_id != b.run_id:
        reasons.append(
            f"both the snapshot (v{a.snapshot.number} vs v{b.snapshot.number}) and the run "
            f"('{a.run.name}' vs '{b.run.name}') differ, so a difference could come from "
            "either; score both runs on one snapshot, or compare one run on two snapshots"
        )
    if not _compared_measures(a, b):
        reasons.append("the two evaluations share no measure that can be tested")
    return reasons


def _show(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _show_mapping(number: int | None) -> str:
    return "no mapping" if number is None else f"mapping v{number}"


def _measures_of(evaluation: Evaluation) -> list[str]:
    return list(evaluation.params.get("engine", {}).get("measures") or evaluation.aggregates)


def _compared_measures(a: Evaluation, b: Evaluation) -> list[str]:
    shared = set(_measures_of(b))
    return [
        m for m in _measures_of(a) if m in shared and split_measure(m)[0] not in UNTESTED_FAMILIES
    ]


def _descriptive_measures(a: Evaluation, b: Evaluation) -> list[str]:
    shared = set(_measures_of(b))
    return [m for m in _measures_of(a) if m in shared and split_measure(m)[0] in UNTESTED_FAMILIES]


def _values(
    rows_a: Mapping[str, Mapping[str, Any]],
    rows_b: Mapping[str, Mapping[str, Any]],
    qids: Sequence[str],
    measure: str,
    bound: str | None,
) -> tuple[list[str], list[float], list[float]]:
    keep, va, vb = [], [], []
    for q in qids:
        x, y = rows_a[q].get(measure), rows_b[q].get(measure)
        if x is None or y is None:
            continue  # Evidence@k: only queries with an evidence condition have it
        if bound is not None:
            x, y = x[bound], y[bound]
        keep.append(q)
        va.append(float(x))
        vb.append(float(y))
    return keep, va, vb


def _side(evaluation: Evaluation) -> dict[str, Any]:
    return {
        "id": evaluation.pk,
        "run": evaluation.run.name,
        "stage": evaluation.stage.name,
        "snapshot": evaluation.snapshot.number,
        "snapshot_hash": evaluation.snapshot.content_hash,
        "mapping": evaluation.mapping.number if evaluation.mapping else None,
        "ks": evaluation.params["ks"],
        "rel_level": evaluation.params["rel_level"],
        "unjudged": evaluation.params["unjudged"],
        "status": evaluation.status,
        "scorable": evaluation.counts.get("scorable"),
    }


def _diff_summary(a: Snapshot, b: Snapshot, limit: int = 500) -> dict[str, Any]:
    diff = diff_snapshots(a, b)

    def cap(rows: list[Any]) -> dict[str, Any]:
        return {"count": len(rows), "rows": [list(r) for r in rows[:limit]]}

    return {
        "from": a.number,
        "to": b.number,
        "added": cap(diff.added),
        "removed": cap(diff.removed),
        "regraded": cap(diff.regraded),
        "status_changes": cap(diff.status_changes),
        "evidence_changes": {"count": len(diff.evidence_changes)},
        "unjudged_added": diff.unjudged_added,
        "unjudged_removed": diff.unjudged_removed,
        "scale_changed": diff.scale_changed,
        "limit": limit,
    }


def compare_evaluations(
    a: Evaluation,
    b: Evaluation,
    *,
    seed: int = comparison.DEFAULT_SEED,
    with_assessors: bool = True,
) -> dict[str, Any]:
    """Paired comparison a - b on the queries scorable in both; ``ComparisonRefused`` when
    the two do not measure the same thing (``comparison_refusals``). ``with_assessors``
    false leaves out the scores under each assessor's labels: pages and the API pass
    ``may_see_assessments`` (a plain reviewer could read another assessor's grades off
    them)."""
    reasons = comparison_refusals(a, b)
    if reasons:
        raise ComparisonRefused(reasons)
    rows_a = {q: v for q, v in a.rows.values_list("query_id", "values") if "excluded" not in v}
    rows_b = {q: v for q, v in b.rows.values_list("query_id", "values") if "excluded" not in v}
    shared = _natural(rows_a.keys() & rows_b.keys())
    bounds = a.params["unjudged"] == "bounds"
    entries: list[dict[str, Any]] = []
    values: dict[str, dict[str, Any]] = {}
    for measure in _compared_measures(a, b):
        for bound in (
            ("low", "high") if bounds and split_measure(measure)[0] != "Evidence" else (None,)
        ):
            key = measure if bound is None else f"{measure} ({bound})"
            qids, va, vb = _values(rows_a, rows_b, shared, measure, bound)
            stats = comparison.paired_comparison(va, vb, seed=seed)
            entries.append({"key": key, "measure": measure, "bound": bound, **stats})
            values[key] = {"queries": qids, "a": va, "b": vb}
    adjusted = comparison.holm([e["p"] for e in entries])
    for entry, p_holm in zip(entries, adjusted, strict=True):
        entry["p_holm"] = p_holm
    descriptive = []
    for measure in _descriptive_measures(a, b):
        _, va, vb = _values(rows_a, rows_b, shared, measure, None)
        descriptive.append({"measure": measure, **comparison.describe(va, vb)})
    pooled = {}
    if not bounds:
        for k in a.params["ks"]:
            hk = f"hits@{k}"
            qids = [q for q in shared if hk in rows_a[q] and hk in rows_b[q]]
            pooled[f"R@{k}"] = comparison.pooled_difference(
                [rows_a[q][hk] for q in qids],
                [rows_a[q]["relevant"] for q in qids],
                [rows_b[q][hk] for q in qids],
                [rows_b[q]["relevant"] for q in qids],
                seed=seed,
            )
    info = query_info_for(a.collection, shared)
    tags = {q: info.get(q, {}).get("tags", []) for q in shared}
    by_tag: dict[str, dict[str, Any]] = {}
    for tag in [*sorted({t for ts in tags.values() for t in ts}), "(untagged)"]:
        members = [q for q in shared if (tag in tags[q]) or (tag == "(untagged)" and not tags[q])]
        if not members:
            continue
        member_set = set(members)
        by_tag[tag] = {}
        for key, v in values.items():
            pairs = [
                (x, y)
                for q, x, y in zip(v["queries"], v["a"], v["b"], strict=True)
                if q in member_set
            ]
            by_tag[tag][key] = comparison.describe([p[0] for p in pairs], [p[1] for p in pairs])
        by_tag[tag]["_n"] = len(members)
    mode = "runs" if a.snapshot_id == b.snapshot_id else "labels"
    only_a = _natural(rows_a.keys() - rows_b.keys())
    only_b = _natural(rows_b.keys() - rows_a.keys())
    effect = assessor_effect([a, b], entries[0]["measure"]) if entries and with_assessors else None
    return {
        # Only with several assessors per item: the key is absent otherwise, so the
        # comparison of single-assessor snapshots reads as before.
        **({"assessors": effect} if effect is not None else {}),
        "mode": mode,
        "a": _side(a),
        "b": _side(b),
        "direction": "a - b",
        "seed": seed,
        "resamples": comparison.N_RESAMPLES,
        "confidence": comparison.CONFIDENCE,
        "methods": {
            "difference": "per query, a - b, on the queries scorable in both",
            "interval": "95% bootstrap of the mean difference, queries resampled in pairs "
            "(scipy.stats.bootstrap, paired, BCa; percentile when BCa is undefined), "
            f"{comparison.N_RESAMPLES:,} resamples, seed {seed}",
            "test": "paired randomization (sign-flip) test of the mean difference, two-sided "
            "(scipy.stats.permutation_test, permutation_type='samples'), "
            f"{comparison.N_RESAMPLES:,} resamples or all 2^n sign assignments when fewer, "
            f"seed {seed}",
            "adjustment": "Holm step-down over the randomization p-values of the tested "
            "measures" + (" (each bound counts as one test)" if bounds else ""),
            "cross_check": "paired t-test (scipy.stats.ttest_rel)",
            "effect_size": "mean difference / sd of the differences (ddof = 1)",
            "untested": "Ceiling@k and Judged@k describe the labels, not the ranking: "
            "compared descriptively, not tested",
            "tags": "per-tag breakdown is descriptive (no tests); tags are the queries' "
            "current tags",
            "disagreement": "the interval and p are two methods asking two questions, so "
            "they need not agree: the BCa bootstrap interval estimates how far the mean "
            "difference would move over other samples of queries like these; the "
            "randomization test asks how often swapping a and b at random within each query "
            "gives a mean difference at least this large. With few queries, or a few large "
            "differences, an interval that excludes 0 can sit beside p >= 0.05 (or the "
            "reverse). Neither is wrong: read p (Holm-adjusted when several measures are "
            "tested) for whether a and b differ, and the interval for how much",
        },
        "queries": {"paired": len(shared), "only_a": only_a, "only_b": only_b},
        "measures": entries,
        "descriptive": descriptive,
        "pooled": pooled,
        "tags": by_tag,
        "per_query": {
            "tags": tags,
            "values": values,
        },
        "snapshot_diff": _diff_summary(a.snapshot, b.snapshot) if mode == "labels" else None,
    }
