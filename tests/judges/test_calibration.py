"""The calibration core (pure): undefined below the minimum overlap or at 0/0, never 0
or 1; the vectorised bootstrap figures equal the packages'; bias per grade."""

from __future__ import annotations

import random

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from judges.calibration import MIN_PAIRS, calibrate, confusion, figures_from_counts

GRADES = [0, 1, 2, 3]


def pairs_of(model, human):
    return [(f"q{n}", f"d{n}", m, h) for n, (m, h) in enumerate(zip(model, human, strict=True))]


def test_too_few_pairs_is_undefined_with_a_reason():
    report = calibrate(pairs_of([1] * 9, [1] * 9), grades=GRADES)
    assert report["pairs"] == 9 and MIN_PAIRS == 10
    assert report["kappa"] is None and report["alpha_ordinal"] is None
    assert report["reason"].startswith("9 pairs graded by both the judge and people")
    assert report["interval"] is None


def test_every_grade_the_same_is_zero_over_zero():
    report = calibrate(pairs_of([2] * 12, [2] * 12), grades=GRADES, resamples=50)
    assert report["kappa"] is None and report["alpha_ordinal"] is None
    assert "0/0" in report["undefined"]["kappa"] and "0/0" in report["reason"]
    assert report["agreement"] == 1.0  # the raw agreement is defined, and shown


def test_bias_per_grade_and_confusion():
    model = [0, 1, 1, 2, 3, 3, 3, 2, 1, 0, 3, 3]
    human = [0, 0, 1, 2, 2, 3, 1, 2, 1, 0, 3, 2]
    report = calibrate(pairs_of(model, human), grades=GRADES, resamples=0)
    # By hand: rows are people's grades. Human 0: model 0,1,0; human 2: model 2,3,2,3 ...
    assert report["confusion"] == [[2, 1, 0, 0], [0, 2, 0, 1], [0, 0, 2, 2], [0, 0, 0, 2]]
    two = report["bias"]["per_grade"][2]
    assert (two["n"], two["same"], two["more_lenient"], two["stricter"]) == (4, 0.5, 0.5, 0.0)
    assert report["bias"]["mean_difference"] == pytest.approx(5 / 12)
    assert report["bias"]["leaning"] == "more lenient"
    assert report["kappa"] == pytest.approx(cohen_kappa_score(human, model, labels=GRADES))


@pytest.mark.parametrize("seed", range(8))
def test_vectorised_figures_equal_the_packages(seed):
    r = random.Random(seed)
    n = r.randint(5, 80)
    model = [r.choice([0, 1, 1, 2, 3]) for _ in range(n)]
    human = [min(3, max(0, m + r.choice([-1, 0, 0, 1]))) for m in model]
    fast = figures_from_counts(np.array([confusion(model, human, GRADES)]))
    assert fast["kappa"][0] == pytest.approx(cohen_kappa_score(human, model), abs=1e-12)
    assert fast["kappa_quadratic"][0] == pytest.approx(
        cohen_kappa_score(human, model, weights="quadratic"), abs=1e-12
    )
    alpha = krippendorff.alpha(
        reliability_data=np.array([model, human], dtype=float),
        value_domain=GRADES,
        level_of_measurement="ordinal",
    )
    assert fast["alpha_ordinal"][0] == pytest.approx(alpha, abs=1e-12)
