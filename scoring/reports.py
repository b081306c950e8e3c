"""Reports built from stored evaluations: the evaluation report, stage diagnosis, paired
comparison, and their CSV form.

Everything here reads (through ``selectors``) and computes; the one write is
``diagnosis_for`` scoring a stage through ``score_run_stage`` for a caller who may. The
dicts returned are the JSON the API and ``manage.py score --json`` print; the HTML pages
render the same dicts, so the browser, the API and the CLI cannot disagree. ``None``
means undefined and is shown as "undefined", never as 0.
"""

from __future__ import annotations

import csv
import io
import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from judgments.models import QueryStatus, Role, Snapshot
from judgments.selectors import diff_snapshots, may, snapshot_of
from judgments.services import VerityError

from . import comparison, engine
from .engine.evaluate import natural_key
from .engine.params import ORDER_DESCRIPTIONS, split_measure
from .models import Evaluation, Run, RunStage, UnitMapping
from .selectors import (
    evaluation_report,
    mapping_pairs_of,
    query_info_for,
    stage_lists_of,
    stage_marks_abstentions,
    stages_in_order,
    stored_evaluation,
)
from .services import score_run_stage, snapshot_inputs

REPORT_VERSION = 1

#: Measures that are proportions (shown as percentages); the others as 4-decimal scores.
RATE_FAMILIES = frozenset({"R", "Ceiling", "AnyHit", "AllHit", "P", "Judged", "Evidence", "Rprec"})

MEASURE_NAMES: dict[str, str] = {
    "R": "recall",
    "Ceiling": "ceiling (best reachable recall)",
    "AnyHit": "any-hit",
    "AllHit": "all-hit",
    "P": "precision",
    "nDCG": "nDCG",
    "Judged": "judged",
    "Evidence": "evidence condition met",
    "RR": "reciprocal rank",
    "AP": "average precision",
    "Rprec": "R-precision",
    "bpref": "bpref",
}

UNJUDGED_POLICIES: dict[str, str] = {
    "nonrel": "unjudged items count as non-relevant (trec_eval's default)",
    "judged-only": "unjudged items are removed before scoring (condensed list, trec_eval -J)",
    "bounds": "both: unjudged as non-relevant (low) and as relevant (high); the interval "
    "shows how far the missing labels could move each number",
}

EXCLUSION_REASONS: dict[str, str] = {
    "unreviewed": "not reviewed yet: its relevant items are unknown",
    "no_answer": "reviewed, confirmed no answer in the corpus: see the abstention section",
    "not_in_snapshot": "in the run, but the snapshot does not hold the query",
    "no_relevant_judgments": "status relevant, but no judgment reaches the relevance threshold",
    "no_status": "judged, but the snapshot gives it no review status",
}

#: Measures that describe the labels rather than the ranking: compared descriptively,
#: never tested (on one snapshot Ceiling@k cannot differ at all).
UNTESTED_FAMILIES = frozenset({"Ceiling", "Judged"})


# -- formatting ---------------------------------------------------------------------------


def is_rate(measure: str) -> bool:
    return split_measure(measure)[0] in RATE_FAMILIES


def fmt_number(measure: str, value: float | None) -> str:
    if value is None:
        return "undefined"
    return f"{value * 100:.2f}%" if is_rate(measure) else f"{value:.4f}"


def fmt_value(measure: str, value: Any) -> str:
    """A measure value for people: "44.44%", "0.4147", "[40.00%, 50.00%]", "undefined"."""
    if isinstance(value, Mapping):
        return (
            f"[{fmt_number(measure, value.get('low'))}, {fmt_number(measure, value.get('high'))}]"
        )
    return fmt_number(measure, value)


def fmt_diff(measure: str, value: float | None) -> str:
    """A difference: percentage points for proportions, plain for scores, signed."""
    if value is None:
        return "undefined"
    if abs(value) <= comparison.TIE:
        return "0.00 pp" if is_rate(measure) else "0.0000"
    return f"{value * 100:+.2f} pp" if is_rate(measure) else f"{value:+.4f}"


def fmt_p(p: float | None) -> str:
    if p is None:
        return "undefined"
    return "< 0.0001" if p < 1e-4 else f"{p:.4f}"


def sort_value(value: Any) -> float | str:
    """What a sortable table cell sorts by: the low end of an interval; undefined last."""
    if isinstance(value, Mapping):
        value = value.get("low")
    return "" if value is None else value


def measure_label(measure: str) -> str:
    family, k = split_measure(measure)
    name = MEASURE_NAMES.get(family, family)
    return f"{name} at {k}" if k is not None else name


def _natural(qids: Iterable[str]) -> list[str]:
    return sorted(qids, key=natural_key)


# -- the evaluation report ----------------------------------------------------------------


def header_of(evaluation: Evaluation) -> list[dict[str, str]]:
    """Everything that fixes the meaning of the numbers, as (key, label, value) rows."""
    run, stage, snapshot, mapping = (
        evaluation.run,
        evaluation.stage,
        evaluation.snapshot,
        evaluation.mapping,
    )
    collection = run.collection
    params = evaluation.params
    engine_params = params.get("engine", {})
    n_stages = run.stages.count()
    collapsed = (engine_params.get("mapping") or {}).get("collapsed", 0)
    rel = params["rel_level"]
    rows = [
        ("collection", "Collection", f"{collection.name} ({collection.slug})"),
        ("corpus_boundary", "Corpus boundary", collection.description or "not described"),
        ("unit", "Labeling unit", snapshot.unit),
        ("snapshot", "Snapshot", f"v{snapshot.number}"),
        ("snapshot_hash", "Snapshot hash", f"sha256:{snapshot.content_hash}"),
        (
            "mapping",
            "Unit mapping",
            (
                f"v{mapping.number} ({mapping.from_unit} → {mapping.to_unit}, "
                f"sha256:{mapping.content_hash[:12]}; {collapsed} repeats collapsed to the "
                "first rank)"
            )
            if mapping
            else "none: ids scored as the run gave them",
        ),
        ("run", "Run", f"{run.name} ({run.source_filename}, sha256:{run.source_sha256[:12]})"),
        (
            "stage",
            "Stage",
            f"{stage.name} (stage {stage.position + 1} of {n_stages}; depth {stage.depth})",
        ),
        ("cutoffs", "Cutoffs k", ", ".join(str(k) for k in params["ks"])),
        (
            "order",
            "Order rule",
            f"{run.order_rule}: {ORDER_DESCRIPTIONS.get(run.order_rule, run.order_rule)}",
        ),
        (
            "dedup",
            "Dedup policy",
            f"{run.dedup_policy}: "
            + (
                f"keep the first occurrence ({run.duplicates_dropped} duplicates dropped at upload)"
                if run.dedup_policy == "first"
                else "duplicate ids were an error at upload (none stored)"
            ),
        ),
        (
            "relevance_threshold",
            "Relevance threshold",
            f"grade ≥ {rel} ({_grade_name(snapshot, rel)}); nDCG gains are the raw grades",
        ),
        (
            "unjudged",
            "Unjudged policy",
            f"{params['unjudged']}: {UNJUDGED_POLICIES.get(params['unjudged'], '')}",
        ),
        (
            "aggregation",
            "Aggregation",
            "macro = mean of per-query values (each query weighs the same); pooled (recall "
            "only) = Σ hits / Σ |G|, the mean weighted by |G_i| / Σ|G_j|",
        ),
        ("engine", "Engine", f"{evaluation.engine_version}; fingerprint {evaluation.fingerprint}"),
    ]
    return [{"key": k, "label": label, "value": v} for k, label, v in rows]


def _grade_name(snapshot: Snapshot, grade: int) -> str:
    for g in snapshot.scale:
        if int(g["grade"]) == grade:
            return str(g["name"])
    return str(grade)


def accounting_of(counts: Mapping[str, Any]) -> dict[str, Any]:
    excluded = dict(counts.get("excluded", {}))
    return {
        "total": counts["scorable"] + sum(excluded.values()),
        "scorable": counts["scorable"],
        "excluded": excluded,
        "excluded_total": sum(excluded.values()),
        "empty_ranking": counts.get("empty_ranking", 0),
        "abstained_scorable": counts.get("abstained", 0),
        "reasons": {r: EXCLUSION_REASONS.get(r, r) for r in excluded},
    }


def abstention_of(evaluation: Evaluation, no_answer: Sequence[str]) -> dict[str, Any]:
    """What the run did on the confirmed no-answer queries of the snapshot."""
    lists = stage_lists_of(evaluation.stage, no_answer)
    marks = stage_marks_abstentions(evaluation.stage)
    depth = max(evaluation.params["ks"])
    rows = []
    outcome_counts: Counter[str] = Counter()
    for qid in no_answer:
        entry = lists.get(qid)
        if entry is None:
            outcome, items = "not_in_run", []
        else:
            items, abstained = entry
            if abstained:
                outcome = "abstained"
            elif items:
                outcome = "answered"
            else:
                outcome = "returned_nothing"
        outcome_counts[outcome] += 1
        rows.append({"query": qid, "outcome": outcome, "items": len(items), "top": items[:depth]})
    return {
        "no_answer": len(no_answer),
        "answered": outcome_counts["answered"],
        "abstained": outcome_counts["abstained"] if marks else None,
        "returned_nothing": outcome_counts["returned_nothing"],
        "not_in_run": outcome_counts["not_in_run"],
        "run_marks_abstentions": marks,
        "queries": rows,
    }


def build_report(evaluation: Evaluation) -> dict[str, Any]:
    """The full report of one evaluation: ``evaluation_report``'s fields, and the header,
    accounting, abstention section, weights, query texts and tags, and chart data."""
    base = evaluation_report(evaluation)
    rows = base["per_query"]
    scored = [q for q in _natural(rows) if "excluded" not in rows[q]]
    excluded = {q: rows[q]["excluded"] for q in _natural(rows) if "excluded" in rows[q]}
    measures = list(evaluation.params.get("engine", {}).get("measures") or base["aggregates"])
    info = query_info_for(evaluation.collection, rows)
    no_answer = [q for q, reason in excluded.items() if reason == QueryStatus.NO_ANSWER]
    n = len(scored)
    sizes = Counter(rows[q]["relevant"] for q in scored)
    ks = list(evaluation.params["ks"])
    report = {
        **base,
        "report_version": REPORT_VERSION,
        "header": header_of(evaluation),
        "measures": measures,
        "accounting": accounting_of(base["counts"]),
        "abstention": abstention_of(evaluation, no_answer),
        "excluded": excluded,
        "weights": [
            {
                "query": q,
                "relevant": rows[q]["relevant"],
                "pooled": rows[q]["weight"],
                "macro": 1 / n,
            }
            for q in scored
        ],
        "queries": {q: info.get(q, {"text": "", "tags": []}) for q in _natural(rows)},
        "charts": {
            "relevant_sizes": [[size, sizes[size]] for size in sorted(sizes)],
            "ks": ks,
            "order": scored,
            "recall": {str(k): [rows[q].get(f"R@{k}") for q in scored] for k in ks},
            "ceiling": {str(k): [rows[q].get(f"Ceiling@{k}") for q in scored] for k in ks},
        },
    }
    return report


def report_csv_rows(report: Mapping[str, Any]) -> Iterator[list[Any]]:
    """The report as long-format rows ``section, query, measure, statistic, value``:
    one schema for every number, so a spreadsheet pivot or ``pandas`` rebuilds any table."""
    yield ["section", "query", "measure", "statistic", "value"]
    for row in report["header"]:
        yield ["header", "", row["key"], "", row["value"]]
    yield ["header", "", "status", "", report["status"]]
    for measure, agg in report["aggregates"].items():
        for statistic, value in agg.items():
            if isinstance(value, Mapping):
                yield ["aggregate", "", measure, f"{statistic}_low", _csv_number(value["low"])]
                yield ["aggregate", "", measure, f"{statistic}_high", _csv_number(value["high"])]
            else:
                yield ["aggregate", "", measure, statistic, _csv_number(value)]
    acc = report["accounting"]
    for key in ("total", "scorable", "excluded_total", "empty_ranking", "abstained_scorable"):
        yield ["accounting", "", "", key, acc[key]]
    for reason, count in acc["excluded"].items():
        yield ["accounting", "", "", f"excluded:{reason}", count]
    ab = report["abstention"]
    for key in ("no_answer", "answered", "abstained", "returned_nothing", "not_in_run"):
        yield ["abstention", "", "", key, _csv_number(ab[key])]
    for row in ab["queries"]:
        yield ["abstention", row["query"], "", "outcome", row["outcome"]]
    per_query = report["per_query"]
    for w in report["weights"]:
        q = w["query"]
        yield ["query", q, "tags", "", ";".join(report["queries"].get(q, {}).get("tags", []))]
        yield ["query", q, "relevant", "", w["relevant"]]
        yield ["query", q, "weight", "pooled", _csv_number(w["pooled"])]
        yield ["query", q, "weight", "macro", _csv_number(w["macro"])]
        for measure, value in per_query[q].items():
            if measure in ("relevant", "weight"):
                continue
            if isinstance(value, Mapping):
                yield ["query", q, measure, "low", _csv_number(value["low"])]
                yield ["query", q, measure, "high", _csv_number(value["high"])]
            else:
                yield ["query", q, measure, "", _csv_number(value)]
    for q, reason in report["excluded"].items():
        yield ["excluded", q, "", "reason", reason]


def _csv_number(value: Any) -> Any:
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return repr(value)
    return value


def to_csv(rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows(rows)
    return out.getvalue()


def report_csv(report: Mapping[str, Any]) -> str:
    return to_csv(report_csv_rows(report))


# -- stage diagnosis ----------------------------------------------------------------------

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

    ``lists[j]`` is stage j's ``{query: ranked ids}`` in pipeline order. A query is
    scorable when its status is ``relevant`` and some judgment reaches ``rel_level``
    (the engine's rule). An item's outcome is decided by the last stage that holds it;
    one that skips a stage and reappears later (a non-nested pipeline) keeps that
    outcome and lists the stages it skipped.
    """
    if not stage_names or len(stage_names) != len(lists):
        raise ValueError("give one ranked-list mapping per stage, in pipeline order")
    kinds = outcome_kinds(stage_names)
    keys = [k["key"] for k in kinds]
    scorable: list[str] = []
    excluded: dict[str, str] = {}
    for qid in _natural(set(statuses) | set(qrels)):
        status = statuses.get(qid)
        grades = qrels.get(qid, {})
        if status is None:
            excluded[qid] = "no_status"
        elif status != QueryStatus.RELEVANT:
            excluded[qid] = status
        elif not any(g >= rel_level for g in grades.values()):
            excluded[qid] = "no_relevant_judgments"
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
) -> dict[str, Any]:
    """The diagnosis of a run on a snapshot, with each stage's scores at the same k.

    ``evaluations[j]`` is stage j scored with identical parameters, or ``None`` when it
    has not been scored (a reader who may not score sees the item outcomes only).
    """
    qrels, statuses, _ = snapshot_inputs(snapshot)
    lists = [{qid: items for qid, (items, _) in stage_lists_of(stage).items()} for stage in stages]
    result = diagnose(
        stage_names=[s.name for s in stages],
        lists=lists,
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
        "unit": snapshot.unit,
        "k": k,
        "rel_level": rel_level,
        "unjudged": unjudged,
        "mapping": mapping.number if mapping else None,
        "stage_depths": {s.name: s.depth for s in stages},
    }
    return result


def diagnosis_csv(diagnosis: Mapping[str, Any]) -> str:
    stages = diagnosis["stages"]
    rows: list[list[Any]] = [["query", "item", "grade", "outcome", *[f"rank:{s}" for s in stages]]]
    for it in diagnosis["items"]:
        ranks = ["" if r is None else r for r in it["ranks"]]
        rows.append([it["query"], it["item"], it["grade"], it["outcome"], *ranks])
    return to_csv(rows)


# -- paired comparison --------------------------------------------------------------------


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
    a: Evaluation, b: Evaluation, *, seed: int = comparison.DEFAULT_SEED
) -> dict[str, Any]:
    """Paired comparison a - b on the queries scorable in both; ``ComparisonRefused`` when
    the two do not measure the same thing (``comparison_refusals``)."""
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
    return {
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


def comparison_csv(result: Mapping[str, Any]) -> str:
    head = [
        "measure",
        "n",
        "mean_a",
        "mean_b",
        "mean_diff",
        "ci_low",
        "ci_high",
        "ci_method",
        "p",
        "p_holm",
        "p_exact",
        "t",
        "df",
        "p_t",
        "d_z",
        "wins",
        "ties",
        "losses",
    ]
    rows: list[list[Any]] = [head]
    for e in result["measures"]:
        rows.append([e["key"], *[_csv_number(e[h]) for h in head[1:]]])
    return to_csv(rows)


# -- diagnosis parameters and scoring -----------------------------------------------------


class DiagnosisError(VerityError):
    """Parameters a diagnosis cannot use; the message says how to fix them."""


def may_score(user: Any, collection: Any) -> bool:
    """Scoring stores evaluations: an evaluator's action (``Role.EVALUATOR``)."""
    return may(user, collection, Role.EVALUATOR)


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


def diagnosis_for(
    *,
    run: Run,
    stages: Sequence[RunStage],
    snapshot: Snapshot,
    k: int,
    params: engine.EvalParams,
    mapping: UnitMapping | None,
    may_score: bool,
    by: Any = None,
) -> dict[str, Any]:
    """Score every stage with identical parameters and diagnose the run.

    Each stage goes through ``score_run_stage`` (idempotent: the same inputs return the
    stored evaluation) when the caller ``may_score``; otherwise only evaluations stored
    before are used, and a stage without one shows no scores (the item outcomes, which
    need no scoring, are complete either way).
    """
    evaluations: list[Evaluation | None] = []
    canonical = {
        "ks": list(params.ks),
        "measures": None,
        "rel_level": params.rel_level,
        "unjudged": params.unjudged,
    }
    for stage in stages:
        if may_score:
            evaluation, _ = score_run_stage(
                run=run,
                stage=stage,
                snapshot=snapshot,
                params=params,
                mapping=mapping,
                by=by if getattr(by, "is_authenticated", False) else None,
            )
        else:
            evaluation = stored_evaluation(
                stage=stage, snapshot=snapshot, mapping=mapping, canonical_params=canonical
            )
        evaluations.append(evaluation)
    return build_diagnosis(
        run=run,
        stages=stages,
        snapshot=snapshot,
        k=k,
        rel_level=params.rel_level,
        unjudged=params.unjudged,
        mapping=mapping,
        evaluations=evaluations,
    )
