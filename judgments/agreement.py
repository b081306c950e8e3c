"""Agreement between assessors: Krippendorff's alpha, Cohen's kappa, raw agreement, the
confusion of grades, and each assessor's agreement with the resolved labels.

Pure: grades in, a JSON-ready dict out; no Django. The figures come from well-kept
implementations, imported lazily (start-up time matters): alpha from the
``krippendorff`` package, kappa from scikit-learn's ``cohen_kappa_score``.

A unit is one (query, item) pair. Every figure is computed on shared units only:

- alpha over the units that at least two assessors graded ("pairable" units);
- kappa and raw agreement of two assessors over the units both graded.

A figure is **undefined** (``null``, with its reason under ``"undefined"``), never 0 or
1, when it has fewer than ``MIN_SHARED_UNITS`` such units, or when it is 0/0: every
grade the same, so that the disagreement expected by chance is zero.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from .wording import counted

MIN_SHARED_UNITS = 5
"""Fewer shared units than this, and a figure is undefined: with four units one changed
grade moves kappa by more than it can mean."""

Unit = tuple[str, str]
Ratings = Mapping[Unit, Mapping[str, int]]


def _too_few(n: int, noun: str, rest: str = "") -> str:
    """ "3 shared units; at least 5 are needed" (``noun`` singular: one plural rule)."""
    return f"{counted(n, noun)}{rest}; at least {MIN_SHARED_UNITS} are needed"


def alpha(ratings: Ratings, *, grades: Sequence[int], level: str) -> tuple[float | None, str]:
    """Krippendorff's alpha at ``level`` ("ordinal" or "nominal") over the pairable
    units of ``ratings``; (value, "") or (None, reason)."""
    pairable = [u for u, by in ratings.items() if len(by) >= 2]
    if len(pairable) < MIN_SHARED_UNITS:
        return None, _too_few(len(pairable), "unit", " graded by two or more assessors")
    values = {g for u in pairable for g in ratings[u].values()}
    if len(values) < 2:
        return None, f"every assessment of the shared units is grade {values.pop()}: 0/0"
    import krippendorff
    import numpy as np

    assessors = sorted({a for u in pairable for a in ratings[u]})
    data = np.full((len(assessors), len(pairable)), np.nan)
    for col, unit in enumerate(pairable):
        for row, who in enumerate(assessors):
            if who in ratings[unit]:
                data[row, col] = ratings[unit][who]
    value = float(
        krippendorff.alpha(
            reliability_data=data, value_domain=sorted(grades), level_of_measurement=level
        )
    )
    return _finite(value, "alpha")


def _finite(value: float, name: str) -> tuple[float | None, str]:
    if math.isnan(value):
        return None, f"{name} is 0/0 on these units (chance agreement is complete)"
    return value, ""


def pair_figures(a: Sequence[int], b: Sequence[int], *, grades: Sequence[int]) -> dict[str, Any]:
    """Cohen's kappa (unweighted and quadratic-weighted) and raw agreement of two
    assessors' grades for the same units, in the same order."""
    n = len(a)
    out: dict[str, Any] = {"n": n, "kappa": None, "kappa_quadratic": None, "agreement": None}
    if n < MIN_SHARED_UNITS:
        out["undefined"] = _too_few(n, "shared unit")
        return out
    from sklearn.metrics import cohen_kappa_score

    out["agreement"] = sum(x == y for x, y in zip(a, b, strict=True)) / n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 0/0 is detected below and said undefined
        plain = float(cohen_kappa_score(a, b, labels=list(grades)))
        quadratic = float(cohen_kappa_score(a, b, labels=list(grades), weights="quadratic"))
    reasons = []
    for key, value in (("kappa", plain), ("kappa_quadratic", quadratic)):
        out[key], why = _finite(value, key)
        if why:
            reasons.append(why)
    if reasons:
        out["undefined"] = "; ".join(reasons)
    return out


def agreement(
    ratings: Ratings,
    *,
    grades: Sequence[int],
    resolved: Mapping[Unit, int] | None = None,
) -> dict[str, Any]:
    """Every agreement figure of ``ratings`` (unit → assessor → grade) as the JSON the
    page, the API and ``manage.py agreement --json`` share; ``resolved`` (unit → the
    resolved grade) adds each assessor's agreement with the resolved labels."""
    assessors = sorted({who for by in ratings.values() for who in by})
    result: dict[str, Any] = {
        "alpha": {},
        "units": sum(1 for by in ratings.values() if len(by) >= 2),
        "assessors": assessors,
        "min_shared_units": MIN_SHARED_UNITS,
        "pairs": [],
        "per_query": {},
        "confusion": _confusion(ratings, grades),
        "vs_resolved": [],
    }
    reasons = {}
    for level in ("ordinal", "nominal"):
        result["alpha"][level], why = alpha(ratings, grades=grades, level=level)
        if why:
            reasons[level] = why
    if reasons:
        result["alpha"]["undefined"] = reasons
    for x, y in combinations(assessors, 2):
        shared = sorted(u for u, by in ratings.items() if x in by and y in by)
        figures = pair_figures(
            [ratings[u][x] for u in shared], [ratings[u][y] for u in shared], grades=grades
        )
        result["pairs"].append({"a": x, "b": y, **figures})
    by_query: dict[str, dict[Unit, Mapping[str, int]]] = defaultdict(dict)
    for unit, by in ratings.items():
        by_query[unit[0]][unit] = by
    for qid in sorted(by_query):
        value, why = alpha(by_query[qid], grades=grades, level="ordinal")
        row: dict[str, Any] = {
            "alpha_ordinal": value,
            "units": sum(1 for by in by_query[qid].values() if len(by) >= 2),
        }
        if why:
            row["undefined"] = why
        result["per_query"][qid] = row
    for who in assessors if resolved is not None else []:
        assert resolved is not None
        units = sorted(u for u, by in ratings.items() if who in by and u in resolved)
        figures = pair_figures(
            [ratings[u][who] for u in units], [resolved[u] for u in units], grades=grades
        )
        result["vs_resolved"].append({"assessor": who, **figures})
    return result


def _confusion(ratings: Ratings, grades: Sequence[int]) -> dict[str, Any]:
    """How often grade g met grade h on one unit: every two assessments of a unit by
    different assessors count once in each direction, so the matrix is symmetric."""
    order = sorted(grades)
    index = {g: n for n, g in enumerate(order)}
    counts = [[0] * len(order) for _ in order]
    for by in ratings.values():
        for x, y in combinations(by.values(), 2):
            if x in index and y in index:
                counts[index[x]][index[y]] += 1
                counts[index[y]][index[x]] += 1
    return {"grades": order, "counts": counts}
