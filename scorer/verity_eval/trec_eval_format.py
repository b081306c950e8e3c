"""``--format trec_eval``: the measures Verity shares with trec_eval, printed exactly as
trec_eval prints them, so that a script written for trec_eval's output reads it unchanged.

trec_eval's layout: one ``measure<TAB>query<TAB>value`` line per value, the measure name
left-aligned in 22 columns, ratios with four decimals, counts as integers; with ``-q`` the
lines of each query (in query-id order) come first, then the ``all`` lines (``num_q``,
the sums of the counts, the means of the rest). Measures appear in trec_eval's own order
(its measure table), cutoffs ascending.

The names: ``map`` (AP), ``Rprec``, ``bpref``, ``recip_rank`` (RR), ``P_k`` (P@k),
``recall_k`` (R@k), ``ndcg_cut_k`` (nDCG@k), ``success_k`` (AnyHit@k), and the counts
``num_q``, ``num_ret``, ``num_rel``, ``num_rel_ret``. Verity's other measures (Ceiling,
AllHit, Judged, Evidence, pooled recall) have no trec_eval name and are left out here;
the other formats keep them under their own names.

The numbers are Verity's, which agree with trec_eval's wherever the query set does (see
``verity_eval``: queries without a relevant judgment are excluded, and scorable queries
missing from the run score 0 as under ``trec_eval -c``). ``departures`` says when that
makes the averaged query set differ from plain ``trec_eval``'s, for a note on stderr.
"""

from __future__ import annotations

from typing import Any

from .evaluate import EvalResult
from .params import split_measure

#: trec_eval's measure table order (measures.c), for the measures Verity shares.
TREC_EVAL_ORDER = (
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "Rprec",
    "bpref",
    "recip_rank",
    "P",
    "recall",
    "ndcg_cut",
    "success",
)
WHOLE_RANKING = {"AP": "map", "Rprec": "Rprec", "bpref": "bpref", "RR": "recip_rank"}
AT_CUTOFF = {"P": "P", "R": "recall", "nDCG": "ndcg_cut", "AnyHit": "success"}
COUNTS = ("num_ret", "num_rel", "num_rel_ret")


def trec_eval_name(measure: str) -> str | None:
    """``"nDCG@10"`` -> ``"ndcg_cut_10"``; ``None`` for a measure trec_eval does not have."""
    family, k = split_measure(measure)
    if k is None:
        return WHOLE_RANKING.get(family)
    base = AT_CUTOFF.get(family)
    return None if base is None else f"{base}_{k}"


def _order(name: str) -> tuple[int, int]:
    base, _, k = name.rpartition("_")
    if base in TREC_EVAL_ORDER and k.isdigit():
        return TREC_EVAL_ORDER.index(base), int(k)
    return TREC_EVAL_ORDER.index(name), 0


def _line(name: str, qid: str, value: Any) -> str:
    text = str(value) if isinstance(value, int) else f"{value:.4f}"
    return f"{name:<22}\t{qid}\t{text}"


def format_trec_eval(
    result: EvalResult,
    *,
    per_query: bool,
    relevant_retrieved: dict[str, int],
    measures: tuple[str, ...] | None = None,
) -> str:
    """The result as trec_eval prints it (``per_query``: as ``trec_eval -q``).

    ``relevant_retrieved`` is each scorable query's number of relevant items in its whole
    (scored) ranking, trec_eval's ``num_rel_ret``. The result must have a scorable query
    (an undefined mean is never printed as a number). ``measures``: the ones to print, of
    the result's (default: all of them).
    """
    if result.status != "ok":
        raise ValueError("no scorable query: every mean is undefined")
    names = {m: trec_eval_name(m) for m in (result.measures if measures is None else measures)}
    shown = sorted((n for n in names.values() if n is not None), key=_order)
    by_name = {n: m for m, n in names.items() if n is not None}

    def values(row: dict[str, Any], qid: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "num_ret": row["retrieved"],
            "num_rel": row["relevant"],
            "num_rel_ret": relevant_retrieved[qid],
        }
        out.update({n: row[by_name[n]] for n in shown})
        return out

    lines: list[str] = []
    per_q = {qid: values(row, qid) for qid, row in sorted(result.per_query.items())}
    columns = [*COUNTS, *shown]
    if per_query:
        for qid, vals in per_q.items():
            lines.extend(_line(n, qid, vals[n]) for n in columns)
    lines.append(_line("num_q", "all", len(per_q)))
    for n in COUNTS:
        lines.append(_line(n, "all", sum(v[n] for v in per_q.values())))
    for n in shown:
        lines.append(_line(n, "all", result.aggregates[by_name[n]]["macro"]))
    return "\n".join(lines) + "\n"


def departures(result: EvalResult) -> list[str]:
    """Where the averaged query set differs from plain trec_eval's (without ``-c``)."""
    notes = []
    c = result.counts
    if c["empty_ranking"]:
        notes.append(
            f"{c['empty_ranking']} scorable queries have no ranking in the run and are "
            "averaged in as 0, as with trec_eval -c (trec_eval 10 without -c stops with an "
            "error at the first of them; verity-trec-eval follows trec_eval exactly)"
        )
    no_rel = c["excluded"].get("no_relevant_judgments", 0)
    if no_rel:
        notes.append(
            f"{no_rel} queries have no relevant judgment and are left out (trec_eval "
            "averages in those the run ranks: as 0 for most measures, but its ndcg_cut "
            "counts every positive grade, below -l too; verity-trec-eval follows trec_eval "
            "exactly)"
        )
    return notes
