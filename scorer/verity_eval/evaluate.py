"""``evaluate``: one run stage against one set of judgments, with stated parameters.

Query accounting (every query seen in the qrels, the run or the statuses gets exactly one
outcome):

* with statuses: a query is scorable when its status is ``relevant`` and it has at least
  one judgment with grade >= rel_level. Otherwise it is excluded as ``unreviewed``,
  ``no_answer``, ``no_relevant_judgments`` (status ``relevant`` but nothing reaches
  rel_level: possible when rel_level is raised above the collection's threshold, so it is
  an exclusion, not an input error), ``no_status`` (judged but given no status) or
  ``not_in_qrels`` (only in the run);
* without statuses: scorable when it has a judgment >= rel_level; otherwise excluded as
  ``no_relevant_judgments`` or ``not_in_qrels``.

A scorable query the run lacks (or ranks nothing for) scores as an empty ranking: every
measure 0 except ``Ceiling@k``, and it is counted in ``empty_ranking``. No scorable query:
``status`` is ``"undefined"`` and every aggregate is ``None``, never 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import EngineInputError, ErrorCollector, InvalidParameterError
from .measures import Labels, Segments, compute, judged_at
from .params import ORDER_DESCRIPTIONS, EvalParams, natural_key, split_measure
from .readers import STATUSES, Statuses, check_evidence
from .tables import UNJUDGED, Qrels, Run, qrels_grades_for_run

QrelsLike = Qrels | Mapping[str, Mapping[str, int]]
RankingsLike = Run | Mapping[str, Sequence[str]]
Value = float | dict[str, float] | None

#: Measures that do not depend on how unjudged items are treated: single numbers even
#: under the ``bounds`` policy.
LABEL_FREE = ("Ceiling", "Judged", "Evidence")

AGGREGATIONS = {
    "macro": "mean of per-query values over scorable queries (each query weighs the same)",
    "pooled": "sum of hits@k / sum of |G| over scorable queries (R@k only; equals the mean "
    "of R@k weighted by each query's 'weight' = |G_i| / sum |G_j|)",
}


@dataclass(frozen=True)
class EvalResult:
    """The outcome of ``evaluate``; ``to_dict()`` is the documented JSON shape.

    Invariants: ``status == "undefined"`` exactly when no query is scorable, and then every
    aggregate value is ``None``; ``per_query`` holds every scorable query and nothing else;
    ``excluded`` maps every other query seen to its reason.
    """

    status: str
    params: dict[str, Any]
    counts: dict[str, Any]
    aggregates: dict[str, dict[str, Value]]
    per_query: dict[str, dict[str, Any]]
    excluded: dict[str, str]
    measures: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "params": self.params,
            "counts": self.counts,
            "aggregates": self.aggregates,
            "per_query": self.per_query,
            "excluded": self.excluded,
        }


def _as_run(rankings: RankingsLike, params: EvalParams) -> Run:
    if isinstance(rankings, Run):
        if rankings.order != "list" and rankings.order != params.order:
            raise InvalidParameterError(
                f"the run was read with order={rankings.order!r} but params say "
                f"order={params.order!r}; read it again or change EvalParams.order"
            )
        if rankings.dedup != params.dedup:
            raise InvalidParameterError(
                f"the run was read with dedup={rankings.dedup!r} but params say "
                f"dedup={params.dedup!r}; read it again or change EvalParams.dedup"
            )
        if params.stage is not None and rankings.stage != params.stage:
            raise InvalidParameterError(
                f"params ask for stage {params.stage!r} but the run holds stage "
                f"{rankings.stage!r}; pass stage= to read_run"
            )
        return rankings
    if not isinstance(rankings, Mapping):
        raise InvalidParameterError("rankings must be a Run or a mapping {qid: [ids...]}")
    return Run.from_mapping(rankings, dedup=params.dedup)


def _check_statuses(statuses: Mapping[str, str]) -> dict[str, str]:
    errors = ErrorCollector()
    out: dict[str, str] = {}
    for qid, status in statuses.items():
        if status not in STATUSES:
            errors.add(
                f"statuses: query {qid!r}: status {status!r} is not one of {', '.join(STATUSES)}"
            )
        else:
            out[qid] = status
    errors.raise_if_any()
    return out


def _check_evidence(evidence: Mapping[str, Sequence[Sequence[str]]]) -> dict[str, list[list[str]]]:
    errors = ErrorCollector()
    out: dict[str, list[list[str]]] = {}
    for qid, groups in evidence.items():
        as_lists = [list(g) for g in groups] if isinstance(groups, list | tuple) else groups
        checked = check_evidence(qid, as_lists, "evidence", errors)
        if checked is not None:
            out[qid] = checked
    errors.raise_if_any()
    return out


def exclusion_reason(
    status: str | None, *, in_qrels: bool, has_relevant: bool, statuses_given: bool = True
) -> str:
    """Why a query is not scorable, or ``""`` when it is: the one rule of scorability.

    With statuses, a query is scorable when its status is ``relevant`` and a judgment
    reaches rel_level (``has_relevant``); ``status`` is ``None`` when the statuses leave
    the query out. Without statuses (``statuses_given=False``) the qrels alone decide.
    """
    if statuses_given:
        if status is None:
            return "no_status" if in_qrels else "not_in_qrels"
        if status != "relevant":
            return status
    elif not in_qrels:
        return "not_in_qrels"
    return "" if has_relevant else "no_relevant_judgments"


def evaluate(
    qrels: QrelsLike,
    rankings: RankingsLike,
    params: EvalParams | None = None,
    statuses: Mapping[str, str] | Statuses | None = None,
    evidence: Mapping[str, Sequence[Sequence[str]]] | None = None,
    mapping: Mapping[str, str] | None = None,
) -> EvalResult:
    """Score one ranking per query against judgments; see the module docstring.

    ``qrels``: a ``Qrels`` from ``read_qrels`` or ``{qid: {docid: grade}}``.
    ``rankings``: a ``Run`` from ``read_run`` or ``{qid: [id, ...]}`` (list order, best
    first). ``statuses``: ``{qid: "relevant"|"no_answer"|"unreviewed"}`` or a ``Statuses``
    (whose evidence is used when ``evidence`` is None). ``evidence``: ``{qid: [[a, b],
    [c]]}`` meaning (a AND b) OR c. ``mapping``: fine id -> coarse id, applied to the
    rankings before scoring (ids it lacks are kept as they are).
    """
    params = params if params is not None else EvalParams()
    q = qrels if isinstance(qrels, Qrels) else Qrels.from_mapping(qrels)
    run = _as_run(rankings, params)
    if isinstance(statuses, Statuses):
        if evidence is None:
            evidence = statuses.evidence
        statuses = statuses.statuses
    status_map = _check_statuses(statuses) if statuses is not None else None
    evidence_map = _check_evidence(evidence) if evidence else {}

    collapsed = 0
    if mapping:
        run, collapsed = run.map_units(mapping)
    names = params.measure_names(with_evidence=bool(evidence_map))
    L = params.rel_level

    # ---- query accounting
    qrel_index = {qid: i for i, qid in enumerate(q.qids)}
    run_index = {qid: j for j, qid in enumerate(run.qids)}
    qrow_query = q.row_queries()
    nrel_by_q = np.bincount(qrow_query[q.grades >= L], minlength=len(q.qids))
    universe = set(q.qids) | set(run.qids) | set(status_map or ())
    excluded: dict[str, str] = {}
    scorable: list[str] = []
    for qid in sorted(universe):  # ties of natural_key ("1", "01") in a fixed order
        qi = qrel_index.get(qid)
        reason = exclusion_reason(
            status_map.get(qid) if status_map is not None else None,
            in_qrels=qi is not None,
            has_relevant=qi is not None and nrel_by_q[qi] > 0,
            statuses_given=status_map is not None,
        )
        if reason:
            excluded[qid] = reason
        else:
            scorable.append(qid)
    scorable.sort(key=natural_key)
    scorable_set = set(scorable)

    # ---- segments: scorable queries in run order, then the ones the run lacks (empty)
    run_lens = np.diff(run.offsets)
    in_segs = np.fromiter(
        (qid in scorable_set for qid in run.qids), dtype=bool, count=len(run.qids)
    )
    seg_qids = [qid for qid in run.qids if qid in scorable_set]
    seg_qids += [qid for qid in scorable if qid not in run_index]
    nseg = len(seg_qids)
    seg_lens = np.concatenate(
        [run_lens[in_segs], np.zeros(nseg - int(in_segs.sum()), dtype=np.int64)]
    )
    seg_offsets = np.concatenate([[0], np.cumsum(seg_lens)]).astype(np.int64)
    if bool(in_segs.all()):
        phys_rows = run.perm
    else:
        query_of_final = np.repeat(np.arange(len(run.qids)), run_lens)
        phys_rows = run.perm[in_segs[query_of_final]]
    run_to_qrels = np.fromiter(
        (qrel_index.get(qid, -1) for qid in run.qids), dtype=np.int64, count=len(run.qids)
    )
    run_to_qrels[~in_segs] = -1
    phys_grades = qrels_grades_for_run(run, q, run_to_qrels)
    segments = Segments(seg_offsets, phys_grades[phys_rows])
    del phys_grades

    seg_index = {qid: i for i, qid in enumerate(seg_qids)}
    qrels_to_seg = np.fromiter(
        (seg_index.get(qid, -1) for qid in q.qids), dtype=np.int64, count=len(q.qids)
    )
    jseg = qrels_to_seg[qrow_query]
    on = jseg >= 0
    labels = Labels.build(jseg[on], q.grades[on], nseg, L)

    # ---- measures
    label_names = [n for n in names if split_measure(n)[0] not in LABEL_FREE]
    judged_ks = [k for n in names for fam, k in [split_measure(n)] if fam == "Judged" and k]
    scored = segments.condensed() if params.unjudged == "judged-only" else segments
    low = compute(scored, labels, L, label_names)
    high = _high_scenario(scored, labels, L, label_names) if params.unjudged == "bounds" else None
    free: dict[str, np.ndarray] = {}
    for k, vals in judged_at(segments, judged_ks).items():
        free[f"Judged@{k}"] = vals
    ceiling_names = [n for n in names if n.startswith("Ceiling@")]
    ceiling = compute(scored, labels, L, ceiling_names) if ceiling_names else {}
    free.update({n: v for n, v in ceiling.items() if not n.startswith("hits@")})
    evidence_vals = _evidence(run, phys_rows, segments, seg_qids, evidence_map, names)

    # ---- assemble
    total_rel = int(labels.num_rel.sum())
    per_query: dict[str, dict[str, Any]] = {}
    hit_keys = sorted((k for k in low if k.startswith("hits@")), key=lambda s: int(s[5:]))
    low_lists = {k: v.tolist() for k, v in low.items()}
    high_lists = {k: v.tolist() for k, v in high.items()} if high is not None else None
    free_lists = {k: v.tolist() for k, v in free.items()}
    rel_list = labels.num_rel.tolist()
    # trec_eval's num_ret: items in the scored list (after judged-only condensation).
    len_list = scored.lengths().tolist()
    evidence_names = {name for name in names if split_measure(name)[0] == "Evidence"}
    for qid in scorable:
        i = seg_index[qid]
        row: dict[str, Any] = {}
        for name in names:
            if name in evidence_names:
                if qid in evidence_vals:
                    row[name] = evidence_vals[qid][name]
            elif name in free_lists:
                row[name] = free_lists[name][i]
            elif high_lists is not None:
                a, b = low_lists[name][i], high_lists[name][i]
                row[name] = {"low": min(a, b), "high": max(a, b)}
            else:
                row[name] = low_lists[name][i]
        for hk in hit_keys:
            row[hk] = low_lists[hk][i]
        row["relevant"] = rel_list[i]
        row["weight"] = rel_list[i] / total_rel
        row["retrieved"] = len_list[i]
        if qid in run.abstained:
            row["abstained"] = True
        per_query[qid] = row

    aggregates = _aggregates(names, scorable, per_query, low, high, labels, evidence_vals)
    excluded_sorted = {qid: excluded[qid] for qid in sorted(excluded, key=natural_key)}
    empty = sum(1 for qid in scorable if qid not in run_index or run_lens[run_index[qid]] == 0)
    counts: dict[str, Any] = {
        "scorable": len(scorable),
        "excluded": dict(sorted(Counter(excluded.values()).items())),
        "empty_ranking": empty,
        "abstained": sum(1 for qid in scorable if qid in run.abstained),
        "with_evidence": len(evidence_vals),
        "run_queries": len(run.qids),
        "qrels_queries": len(q.qids),
    }
    out_params: dict[str, Any] = {
        "ks": list(params.ks),
        "measures": list(names),
        "rel_level": L,
        "unjudged": params.unjudged,
        "dedup": run.dedup,
        "duplicates_removed": run.duplicates_removed,
        "order": run.order,
        "order_rule": ORDER_DESCRIPTIONS[run.order],
        "stage": run.stage,
        "mapping": {
            "applied": bool(mapping),
            "size": len(mapping or {}),
            "collapsed": collapsed,
            "dedup": "first",
        },
        "gains": "raw grades (every grade > 0, whatever rel_level), as trec_eval ndcg_cut",
        "aggregations": AGGREGATIONS,
        "qrels": q.source,
        "run": run.source,
    }
    if params.unjudged == "bounds":
        out_params["bounds"] = (
            "low/high = smaller/larger of two labelings: unjudged as non-relevant, and "
            "unjudged as relevant at grade rel_level (for a measure at k, those in the "
            "first k; for RR, AP, Rprec, bpref, every ranked one)"
        )
    return EvalResult(
        status="ok" if scorable else "undefined",
        params=out_params,
        counts=counts,
        aggregates=aggregates,
        per_query=per_query,
        excluded=excluded_sorted,
        measures=names,
    )


def _high_scenario(
    segments: Segments, labels: Labels, rel_level: int, names: Sequence[str]
) -> dict[str, np.ndarray]:
    """Measures with unjudged ranked items taken as relevant at grade ``rel_level``.

    For a measure at cutoff k only the unjudged items in the first k are relabelled (those
    below k cannot raise it, and would only enlarge |G|); for RR, AP, Rprec and bpref all are.
    """
    g = segments.grades
    lens = segments.lengths()
    unj = g == UNJUDGED
    pos = np.arange(g.size, dtype=np.int64) - np.repeat(segments.offsets[:-1], lens) + 1
    seg_of_row = np.repeat(np.arange(segments.count, dtype=np.int64), lens)
    by_depth: dict[int | None, list[str]] = {}
    for name in names:
        by_depth.setdefault(split_measure(name)[1], []).append(name)
    out: dict[str, np.ndarray] = {}
    for depth, group in by_depth.items():
        mask = unj if depth is None else unj & (pos <= depth)
        extra = np.bincount(seg_of_row[mask], minlength=segments.count).astype(np.int64)
        relabelled = Segments(segments.offsets, np.where(mask, rel_level, g))
        relabelled_labels = labels.with_extra_relevant(extra, rel_level)
        out.update(compute(relabelled, relabelled_labels, rel_level, group))
        if depth is not None:
            out[f"relevant@{depth}"] = relabelled_labels.num_rel
    return out


def _evidence(
    run: Run,
    phys_rows: np.ndarray,
    segments: Segments,
    seg_qids: list[str],
    evidence: Mapping[str, list[list[str]]],
    names: Sequence[str],
) -> dict[str, dict[str, float]]:
    """Evidence@k per scorable query that has a condition: 1 when some AND-group lies
    entirely within the first k items of the scored (mapped, deduplicated) ranking."""
    ks = [k for n in names for fam, k in [split_measure(n)] if fam == "Evidence" and k]
    out: dict[str, dict[str, float]] = {}
    if not ks:
        return out
    for i, qid in enumerate(seg_qids):
        groups = evidence.get(qid)
        if groups is None:
            continue
        a, b = int(segments.offsets[i]), int(segments.offsets[i + 1])
        ids = run.docids.take(phys_rows[a:b]).to_pylist() if b > a else []
        first_pos = {d: p for p, d in enumerate(ids, start=1)}
        need = min(
            (
                max((first_pos.get(item, math.inf) for item in grp), default=math.inf)
                for grp in groups
            ),
            default=math.inf,
        )
        out[qid] = {f"Evidence@{k}": 1.0 if need <= k else 0.0 for k in ks}
    return out


def _aggregates(
    names: Sequence[str],
    scorable: list[str],
    per_query: dict[str, dict[str, Any]],
    low: dict[str, np.ndarray],
    high: dict[str, np.ndarray] | None,
    labels: Labels,
    evidence_vals: dict[str, dict[str, float]],
) -> dict[str, dict[str, Value]]:
    out: dict[str, dict[str, Value]] = {}
    total_rel = float(labels.num_rel.sum())
    for name in names:
        fam, k = split_measure(name)
        values = [per_query[qid][name] for qid in scorable if name in per_query[qid]]
        entry: dict[str, Value] = {}
        if not values:
            entry["macro"] = None
        elif isinstance(values[0], dict):
            entry["macro"] = {
                "low": math.fsum(v["low"] for v in values) / len(values),
                "high": math.fsum(v["high"] for v in values) / len(values),
            }
        else:
            entry["macro"] = math.fsum(values) / len(values)
        if fam == "R":
            if not scorable:
                entry["pooled"] = None
            else:
                lo = float(low[f"hits@{k}"].sum()) / total_rel
                if high is None:
                    entry["pooled"] = lo
                else:
                    hi = float(high[f"hits@{k}"].sum()) / float(high[f"relevant@{k}"].sum())
                    entry["pooled"] = {"low": min(lo, hi), "high": max(lo, hi)}
        out[name] = entry
    return out


__all__ = ["EngineInputError", "EvalResult", "evaluate"]
