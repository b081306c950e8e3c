"""Paired statistics for two evaluations on the same queries: numpy and scipy, no Django.

Every function takes per-query values already paired by query (``a[i]`` and ``b[i]`` are
one query) and returns plain dicts that go into JSON as they are. ``None`` means
undefined, and every undefined value comes with a note saying why.

The choices, stated once:

* difference = a - b, per query, on the queries scorable in both evaluations;
* interval: 95 % bootstrap of the mean difference, queries resampled in pairs
  (``scipy.stats.bootstrap``, ``paired=True``, BCa; percentile when BCa cannot be
  computed, and the method used is recorded), 10,000 resamples, seeded;
* test: paired randomization (sign-flip) test of the mean difference
  (``scipy.stats.permutation_test``, ``permutation_type="samples"``, two-sided: twice the
  smaller tail, which for this symmetric null is P(|mean*| ≥ |mean|)), 10,000 resamples,
  seeded; exact over all 2^n sign assignments when 2^n ≤ 10,000, as scipy does;
* cross-check: the paired t-test (``scipy.stats.ttest_rel``);
* effect size d_z = mean(d) / sd(d) with ddof = 1;
* family-wise error: Holm's step-down adjustment of the randomization p-values across
  the compared measures (``holm``).

Degenerate cases are decided here, not left to scipy's NaNs and warnings: no pair → all
undefined; every difference zero → p = 1, interval [0, 0], t and d_z undefined; every
difference equal but not zero → interval [c, c], t and d_z undefined (sd = 0); one
pair → interval, t and d_z undefined.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

# numpy and scipy.stats (~0.6 s of imports) are imported by the functions that use them:
# this module is reachable from the URL configuration, so every process would pay for them.

N_RESAMPLES = 10_000
CONFIDENCE = 0.95
DEFAULT_SEED = 20250630
#: Differences smaller than this are ties (the engine's values are exact ratios; this
#: only absorbs the last-bit noise of sums computed in different orders).
TIE = 1e-12
#: Resamples evaluated at once are capped so that memory stays near BATCH_CELLS floats
#: whatever the number of queries; scipy's results do not depend on the batch size.
BATCH_CELLS = 4_000_000
#: Below this many pairs a note says the interval and p-values are rough.
FEW = 10


def _batch(n: int) -> int:
    return max(1, min(N_RESAMPLES, BATCH_CELLS // max(n, 1)))


def _mean_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return (x - y).mean(axis=axis)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values, in the input order; ``None`` stays ``None``
    and is not counted in the family.

    Sorted ascending p_(1) ≤ … ≤ p_(m): adjusted p_(i) = max over j ≤ i of
    min(1, (m - j + 1) · p_(j)), which keeps the adjusted values in the raw order.
    """
    defined = [(p, i) for i, p in enumerate(pvalues) if p is not None]
    m = len(defined)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(defined)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def randomization_test(a: np.ndarray, b: np.ndarray, *, seed: int) -> dict[str, Any]:
    """Two-sided paired sign-flip test of mean(a - b) = 0."""
    from scipy import stats

    n = len(a)
    exact = 2**n <= N_RESAMPLES
    result = stats.permutation_test(
        (a, b),
        _mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=N_RESAMPLES,
        batch=_batch(n),
        alternative="two-sided",
        rng=seed,
    )
    return {
        "p": float(result.pvalue),
        "exact": exact,
        "resamples": 2**n if exact else N_RESAMPLES,
    }


def bootstrap_interval(
    data: Sequence[np.ndarray], statistic: Any, *, seed: int
) -> tuple[float | None, float | None, str]:
    """The 95 % paired bootstrap interval of ``statistic``; BCa, else percentile."""
    from scipy import stats

    n = len(data[0])
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            # BCa's jackknife divides by zero on some discrete samples; scipy warns and
            # returns NaN, which is handled below by falling back to the percentile method.
            warnings.simplefilter("ignore")
            ci = stats.bootstrap(
                tuple(data),
                statistic,
                paired=True,
                vectorized=True,
                n_resamples=N_RESAMPLES,
                batch=_batch(n),
                confidence_level=CONFIDENCE,
                method=method,
                rng=seed,
            ).confidence_interval
        low, high = float(ci.low), float(ci.high)
        if math.isfinite(low) and math.isfinite(high):
            return low, high, method
    return None, None, "undefined"


def paired_comparison(
    a: Sequence[float], b: Sequence[float], *, seed: int = DEFAULT_SEED
) -> dict[str, Any]:
    """Paired statistics of a - b for one measure; see the module docstring."""
    import numpy as np
    from scipy import stats

    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    if xa.shape != xb.shape or xa.ndim != 1:
        raise ValueError("a and b must be one-dimensional and of equal length (one per query)")
    d = xa - xb
    n = int(d.size)
    out: dict[str, Any] = {
        "n": n,
        "mean_a": None,
        "mean_b": None,
        "mean_diff": None,
        "ci_low": None,
        "ci_high": None,
        "ci_method": None,
        "p": None,
        "p_exact": None,
        "p_resamples": None,
        "t": None,
        "df": None,
        "p_t": None,
        "d_z": None,
        "sd_diff": None,
        "wins": int(np.sum(d > TIE)),
        "ties": int(np.sum(np.abs(d) <= TIE)),
        "losses": int(np.sum(d < -TIE)),
        "notes": [],
    }
    if n == 0:
        out["notes"].append("no query is scorable in both evaluations with this measure")
        return out
    out["mean_a"] = float(np.mean(xa))
    out["mean_b"] = float(np.mean(xb))
    out["mean_diff"] = float(np.mean(d))
    if n >= 2:
        out["sd_diff"] = float(np.std(d, ddof=1))
        out["df"] = n - 1
    if n < FEW:
        out["notes"].append(
            f"only {n} paired quer{'y' if n == 1 else 'ies'}: intervals and p-values are rough"
        )
    spread = float(np.max(d) - np.min(d))
    if spread <= TIE:
        c = 0.0 if abs(float(d[0])) <= TIE else float(np.mean(d))
        out["ci_low"] = out["ci_high"] = c
        out["ci_method"] = "degenerate: every difference equal"
        if c == 0.0:
            out["mean_diff"] = 0.0
            out["p"], out["p_exact"], out["p_resamples"] = 1.0, True, None
            out["p_t"] = 1.0
            out["notes"].append(
                "every difference is zero: p = 1, interval [0, 0], t and d_z undefined"
            )
        elif n == 1:
            # Both sign assignments of one difference are as extreme as the observed one.
            out["p"], out["p_exact"], out["p_resamples"] = 1.0, True, 2
        else:
            out.update(_randomization_fields(xa, xb, seed))
        if c != 0.0 and n >= 2:
            out["notes"].append(
                "every difference is the same non-zero value: the sd of the differences "
                "is 0, so t and d_z are undefined"
            )
        if n == 1:
            out["ci_low"] = out["ci_high"] = None
            out["ci_method"] = None
            out["notes"].append("one pair: no interval")
        return out
    # n >= 2 here: a spread needs two values.
    out.update(_randomization_fields(xa, xb, seed))
    low, high, method = bootstrap_interval((xa, xb), _mean_diff, seed=seed)
    out["ci_low"], out["ci_high"], out["ci_method"] = low, high, method
    t = stats.ttest_rel(xa, xb)
    out["t"], out["p_t"] = float(t.statistic), float(t.pvalue)
    out["d_z"] = out["mean_diff"] / out["sd_diff"]
    return out


def _randomization_fields(xa: np.ndarray, xb: np.ndarray, seed: int) -> dict[str, Any]:
    test = randomization_test(xa, xb, seed=seed)
    return {"p": test["p"], "p_exact": test["exact"], "p_resamples": test["resamples"]}


def _pooled_diff(ha: np.ndarray, ga: np.ndarray, hb: np.ndarray, gb: np.ndarray, axis: int = -1):
    return ha.sum(axis=axis) / ga.sum(axis=axis) - hb.sum(axis=axis) / gb.sum(axis=axis)


def pooled_difference(
    hits_a: Sequence[float],
    relevant_a: Sequence[float],
    hits_b: Sequence[float],
    relevant_b: Sequence[float],
    *,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """Pooled recall a - b (Σ hits / Σ |G| on each side) with a 95 % paired bootstrap
    interval, queries resampled in pairs. Descriptive: no test, no Holm adjustment."""
    import numpy as np

    arrays = [np.asarray(v, dtype=np.float64) for v in (hits_a, relevant_a, hits_b, relevant_b)]
    n = int(arrays[0].size)
    if n == 0:
        return dict.fromkeys(
            ("pooled_a", "pooled_b", "diff", "ci_low", "ci_high", "ci_method"), None
        ) | {"n": 0}
    ha, ga, hb, gb = arrays
    pa, pb = float(ha.sum() / ga.sum()), float(hb.sum() / gb.sum())
    out: dict[str, Any] = {
        "n": n,
        "pooled_a": pa,
        "pooled_b": pb,
        "diff": pa - pb,
        "ci_low": None,
        "ci_high": None,
        "ci_method": None,
    }
    if n >= 2:
        low, high, method = bootstrap_interval(arrays, _pooled_diff, seed=seed)
        out["ci_low"], out["ci_high"], out["ci_method"] = low, high, method
    return out


def describe(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Means, mean difference and wins/ties/losses only: for the per-tag breakdown."""
    import numpy as np

    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    d = xa - xb
    n = int(d.size)
    return {
        "n": n,
        "mean_a": float(xa.mean()) if n else None,
        "mean_b": float(xb.mean()) if n else None,
        "mean_diff": float(d.mean()) if n else None,
        "wins": int(np.sum(d > TIE)),
        "ties": int(np.sum(np.abs(d) <= TIE)),
        "losses": int(np.sum(d < -TIE)),
    }


def sign_bounds(
    a_low: Sequence[float],
    a_high: Sequence[float],
    b_low: Sequence[float],
    b_high: Sequence[float],
) -> dict[str, Any]:
    """How far the unjudged items could move mean(a - b), and whether its sign is settled.

    Per query, each side is known between its value with unjudged items as non-relevant
    and as relevant (``low``/``high``, the engine's ``bounds``). The mean difference can
    go as low as mean(a_low - b_high) (every labeling favours b) and as high as
    mean(a_high - b_low) (every labeling favours a). Settled: both ends on one side of 0
    ("a" or "b" better), or both 0 ("tie", nothing unjudged moves it); otherwise the
    unjudged items could change the sign. Conservative: an item ranked by both runs may
    count as relevant for one and non-relevant for the other, so a "could change" is an
    upper bound. Where the per-query low/high are a measure's true extremes (P@k, AnyHit@k,
    RR: they read only the labels of the run's own ranked items) a "settled" is certain
    (``tests/scoring/test_settled_property.py`` checks every labeling); for measures whose
    |G| an unranked item moves (R@k, nDCG@k, AP, …) it holds under the two labelings.
    """
    import numpy as np

    al, ah, bl, bh = (np.asarray(v, dtype=np.float64) for v in (a_low, a_high, b_low, b_high))
    n = int(al.size)
    if n == 0:
        return {"n": 0, "low": None, "high": None, "settled": False, "verdict": "undefined"}
    low, high = float(np.mean(al - bh)), float(np.mean(ah - bl))
    if low > TIE:
        verdict = "a"
    elif high < -TIE:
        verdict = "b"
    elif abs(low) <= TIE and abs(high) <= TIE:
        verdict = "tie"
    else:
        verdict = "open"
    return {"n": n, "low": low, "high": high, "settled": verdict != "open", "verdict": verdict}
