"""The evaluation report: one stored evaluation with the header that fixes the meaning of
its numbers, the accounting of every query, the abstention section, the weights, the
query texts and tags, and the chart data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from judgments.models import QueryStatus, Snapshot
from judgments.wording import counted
from scoring.models import Evaluation
from scoring.reports.formatting import UNJUDGED_POLICIES, _natural
from scoring.selectors import (
    evaluation_report,
    query_info_for,
    stage_holes,
    stage_lists_of,
    stage_marks_abstentions,
)
from verity_eval.params import ORDER_DESCRIPTIONS

REPORT_VERSION = 1

EXCLUSION_REASONS: dict[str, str] = {
    "unreviewed": "not reviewed yet: its relevant items are unknown",
    "no_answer": "reviewed, confirmed no answer in the corpus: see the abstention section",
    "not_in_snapshot": "in the run, but the snapshot does not hold the query",
    "no_relevant_judgments": "status relevant, but no judgment reaches the relevance threshold",
    "no_status": "judged, but the snapshot gives it no review status",
}


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
        ("labels", "Labels", snapshot.label_sources),
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
        (
            "queries",
            "Queries",
            queries_line(evaluation.counts, engine_params.get("measures") or ()),
        ),
        ("engine", "Engine", f"{evaluation.engine_version}; fingerprint {evaluation.fingerprint}"),
    ]
    return [{"key": k, "label": label, "value": v} for k, label, v in rows]


def queries_line(counts: Mapping[str, Any], measures: Sequence[str]) -> str:
    """The query accounting in one line: which queries every aggregate averages over,
    and the others by reason ("20 scorable (averaged); excluded: 3 unreviewed, …")."""
    excluded = dict(counts.get("excluded", {}))
    total = counts["scorable"] + sum(excluded.values())
    parts = [f"{counted(total, 'query')} seen: {counts['scorable']} scorable (averaged)"]
    if excluded:
        parts.append(
            "excluded: " + ", ".join(f"{n} {reason}" for reason, n in sorted(excluded.items()))
        )
    else:
        parts.append("none excluded")
    empty = counts.get("empty_ranking", 0)
    if empty:
        parts.append(f"{empty} of the scorable scored as empty rankings (not in the run)")
    with_evidence = counts.get("with_evidence", 0)
    has_evidence = any(m.startswith("Evidence@") for m in measures)
    if has_evidence and with_evidence != counts["scorable"]:
        parts.append(
            f"Evidence@k averages over the {with_evidence} with an evidence condition only"
        )
    return "; ".join(parts)


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
        # Holes: judged and unjudged items in the first k of every query of the stage,
        # scored or not (verity_eval.find_holes), at the evaluation's cutoffs.
        "holes": {
            "snapshot": evaluation.snapshot.number,
            "stage": evaluation.stage.name,
            **stage_holes(
                evaluation.stage, evaluation.snapshot, ks, mapping=evaluation.mapping
            ).to_dict(),
        },
    }
    return report
