"""How measures and their values are shown to people: measure names, proportions as
percentages and scores to 4 decimals, signed differences, p-values, the sort key of a
table cell, and the natural order of query ids. ``None`` means undefined and is shown as
"undefined", never as 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scoring import comparison
from verity_eval.params import natural_key, split_measure

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

#: Measures that describe the labels rather than the ranking: compared descriptively,
#: never tested (on one snapshot Ceiling@k cannot differ at all).
UNTESTED_FAMILIES = frozenset({"Ceiling", "Judged"})


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


def undefined_reason(measure: str, *, n: int, scorable: int) -> str:
    """Why an aggregate is undefined (never 0): no query to average over."""
    if scorable == 0:
        return "no scorable query: see the query accounting"
    if split_measure(measure)[0] == "Evidence" and n == 0:
        return "no scorable query has an evidence condition"
    return "no scorable query has a value for it"


def undefined_cell_reason(measure: str) -> str:
    """Why one query's cell is undefined."""
    if split_measure(measure)[0] == "Evidence":
        return "no evidence condition for this query"
    return "not defined for this query"


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
