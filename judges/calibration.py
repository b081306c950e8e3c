"""How far a judge's proposals agree with people's resolved labels. Pure: no Django.

Input: the pairs that both the judge and people graded, as ``(qid, item, model_grade,
human_grade)``. Output: the JSON the page, the API and ``manage.py calibration --json``
share. Kappa (plain and quadratic) and ordinal alpha are those of assessor agreement,
``judgments.agreement.pair_figures`` and ``alpha`` (scikit-learn's ``cohen_kappa_score``
and the ``krippendorff`` package, imported lazily), with the model and the people as
the two coders.

A figure is ``null`` with its reason, never 0 or 1, below ``MIN_PAIRS`` shared pairs or
when it is 0/0 (every grade the same). The interval is a percentile bootstrap over the
pairs, seeded, so the same pairs give the same interval.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

MIN_PAIRS = 10
"""Fewer shared pairs than this and every figure is undefined: one changed grade in
nine moves kappa by more than the difference between a good and a poor judge."""
RESAMPLES = 1000
LEVEL = 0.95
FIGURES = ("kappa", "kappa_quadratic", "alpha_ordinal")

Pair = tuple[str, str, int, int]


def _figures(model: Sequence[int], human: Sequence[int], grades: Sequence[int]) -> dict[str, float]:
    """Kappa, quadratic kappa and ordinal alpha; nan where a figure is 0/0."""
    from judgments.agreement import alpha, pair_figures

    kappas = pair_figures(human, model, grades=grades)
    ratings = {
        (str(n), ""): {"model": m, "people": h}
        for n, (m, h) in enumerate(zip(model, human, strict=True))
    }
    ordinal, _ = alpha(ratings, grades=grades, level="ordinal")
    figures = {
        "kappa": kappas["kappa"],
        "kappa_quadratic": kappas["kappa_quadratic"],
        "alpha_ordinal": ordinal,
    }
    return {key: math.nan if value is None else value for key, value in figures.items()}


def confusion(model: Sequence[int], human: Sequence[int], grades: Sequence[int]) -> list[list[int]]:
    """Counts by human grade (rows) and model grade (columns), in scale order."""
    index = {g: i for i, g in enumerate(grades)}
    table = [[0] * len(grades) for _ in grades]
    for m, h in zip(model, human, strict=True):
        table[index[h]][index[m]] += 1
    return table


def bias(model: Sequence[int], human: Sequence[int], grades: Sequence[int]) -> dict[str, Any]:
    """Where the judge is stricter (lower grade than people) or more lenient, per human
    grade, and its mean difference (model - human) over all pairs."""
    rows = []
    for g in grades:
        mine = [m for m, h in zip(model, human, strict=True) if h == g]
        n = len(mine)
        rows.append(
            {
                "human_grade": g,
                "n": n,
                "mean_model_grade": sum(mine) / n if n else None,
                "stricter": sum(m < g for m in mine) / n if n else None,
                "same": sum(m == g for m in mine) / n if n else None,
                "more_lenient": sum(m > g for m in mine) / n if n else None,
            }
        )
    n = len(model)
    mean = sum(m - h for m, h in zip(model, human, strict=True)) / n if n else None
    leaning = None
    if mean is not None:
        leaning = "stricter" if mean < 0 else "more lenient" if mean > 0 else "neither"
    return {"mean_difference": mean, "leaning": leaning, "per_grade": rows}


def figures_from_counts(counts: Any) -> dict[str, Any]:
    """Kappa (plain, quadratic) and ordinal alpha from confusion counts, vectorised over
    a stack of tables (``counts[b, human, model]``): the bootstrap needs a thousand of
    them, and the packages take a millisecond each. Equal to the packages to 1e-12 (see
    the tests); nan where 0/0. Grades are the table's index, in scale order."""
    import numpy as np

    c = np.asarray(counts, dtype=float)
    k = c.shape[-1]
    n = c.sum(axis=(1, 2))
    i, j = np.indices((k, k))
    expected = c.sum(axis=2)[:, :, None] * c.sum(axis=1)[:, None, :] / n[:, None, None]
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for key, w in (("kappa", (i != j).astype(float)), ("kappa_quadratic", (i - j) ** 2.0)):
            out[key] = 1 - (c * w).sum(axis=(1, 2)) / (expected * w).sum(axis=(1, 2))
        # Krippendorff: two coders, no missing value: the coincidences are C + Cᵀ.
        o = c + c.transpose(0, 2, 1)
        marg = o.sum(axis=2)
        cum = np.cumsum(marg, axis=1)
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        # ordinal δ²(c, k) = (Σ_{g=c..k} n_g - (n_c + n_k)/2)²
        between = cum[:, hi] - np.where(lo > 0, cum[:, lo - 1], 0.0)
        delta = (between - (marg[:, lo] + marg[:, hi]) / 2) ** 2
        total = 2 * n
        observed = (o * delta).sum(axis=(1, 2))
        chance = (marg[:, :, None] * marg[:, None, :] * delta).sum(axis=(1, 2))
        out["alpha_ordinal"] = 1 - (total - 1) * observed / chance
    return out


def _interval(
    model: Sequence[int], human: Sequence[int], grades: Sequence[int], resamples: int, seed: int
) -> dict[str, Any]:
    import numpy as np

    index = {g: x for x, g in enumerate(grades)}
    k, n = len(grades), len(model)
    cells = np.array([index[h] * k + index[m] for m, h in zip(model, human, strict=True)])
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, (resamples, n))
    flat = (cells[picks] + np.arange(resamples)[:, None] * k * k).ravel()
    counts = np.bincount(flat, minlength=resamples * k * k).reshape(resamples, k, k)
    values = figures_from_counts(counts)
    out: dict[str, Any] = {"level": LEVEL, "resamples": resamples, "seed": seed}
    tail = (1 - LEVEL) / 2 * 100
    for key in FIGURES:
        finite = values[key][np.isfinite(values[key])]
        out[key] = (
            [float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail))]
            if finite.size
            else None
        )
        out[f"{key}_undefined_resamples"] = int(resamples - finite.size)
    return out


def calibrate(
    pairs: Sequence[Pair],
    *,
    grades: Sequence[int],
    min_pairs: int = MIN_PAIRS,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Every calibration figure of the judge against people on ``pairs``."""
    pairs = sorted(pairs)
    model = [p[2] for p in pairs]
    human = [p[3] for p in pairs]
    result: dict[str, Any] = {
        "pairs": len(pairs),
        "min_pairs": min_pairs,
        "grades": list(grades),
        "kappa": None,
        "kappa_quadratic": None,
        "alpha_ordinal": None,
        "confusion": confusion(model, human, grades),
        "confusion_axes": "rows: human grade, columns: model grade, in the order of grades",
        "agreement": sum(m == h for m, h in zip(model, human, strict=True)) / len(pairs)
        if pairs
        else None,
        "bias": bias(model, human, grades),
        "interval": None,
        "per_pair": [list(p) for p in pairs],
    }
    if len(pairs) < min_pairs:
        result["reason"] = (
            f"{len(pairs)} pairs graded by both the judge and people; at least {min_pairs} "
            "are needed for kappa or alpha to mean anything"
        )
        return result
    undefined = {}
    for key, value in _figures(model, human, grades).items():
        if math.isnan(value):
            undefined[key] = f"{key} is 0/0 on these pairs: every grade is the same"
        else:
            result[key] = value
    if undefined:
        result["undefined"] = undefined
        result["reason"] = "; ".join(undefined.values())
    if resamples > 0:
        result["interval"] = _interval(model, human, grades, resamples, seed)
    return result


MIN_RUNS = 3
"""Fewer runs than this and Kendall's tau between two orderings is undefined: with two,
it can only be 1 or -1."""


def run_orderings(runs: Sequence[tuple[str, float, float]]) -> dict[str, Any]:
    """The runs ordered by their score under people's labels and under the judge's
    (best first, ties by name), and Kendall's tau-b between the two score lists
    (``scipy.stats.kendalltau``, which handles ties as tau-b), from ``(run, human score,
    model score)``. ``tau`` is ``null`` with a ``reason`` below ``MIN_RUNS`` runs or
    when it is 0/0 (every run scores the same under one of the labels)."""
    rows = sorted(runs)
    out: dict[str, Any] = {
        "runs": len(rows),
        "min_runs": MIN_RUNS,
        "human_order": [r[0] for r in sorted(rows, key=lambda r: (-r[1], r[0]))],
        "model_order": [r[0] for r in sorted(rows, key=lambda r: (-r[2], r[0]))],
        "kendall_tau": None,
        "p_value": None,
    }
    if len(rows) < MIN_RUNS:
        out["reason"] = (
            f"{len(rows)} runs scored both ways; Kendall's tau needs at least {MIN_RUNS} "
            "(with two it can only be 1 or -1)"
        )
        return out
    from scipy.stats import kendalltau

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant input warns and gives nan: said below
        result = kendalltau([r[1] for r in rows], [r[2] for r in rows])
    tau, p = float(result.statistic), float(result.pvalue)
    if math.isnan(tau):
        out["reason"] = "tau is 0/0: every run has the same score under one of the labels"
        return out
    out["kendall_tau"], out["p_value"] = tau, p
    return out
