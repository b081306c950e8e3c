"""Comparisons that say whether they are settled (issue 28, item 3): the hand-worked
example of ``settle_helpers`` (its docstring has the arithmetic)."""

from __future__ import annotations

import pytest

from judgments.models import ReviewTask
from judgments.services import freeze_snapshot
from judgments.services.pooling import URGENT_PRIORITY
from scoring import comparison
from scoring.reports import compare_evaluations, settlement
from tests.scoring.settle_helpers import build, judge_settling_pairs, score

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("a_low", "a_high", "b_low", "b_high", "expected"),
    [
        # the example's A - B: could go from -.5 to +.25
        ([0.5, 0], [1, 0.5], [0.5, 0.5], [0.5, 1], {"low": -0.5, "high": 0.25, "verdict": "open"}),
        # C - D: at worst +.5
        ([1, 0.5], [1, 1], [0, 0], [0.5, 0], {"low": 0.5, "high": 1.0, "verdict": "a"}),
        # b better whatever the labels
        ([0, 0], [0.2, 0], [1, 1], [1, 1], {"low": -1.0, "high": -0.9, "verdict": "b"}),
        # nothing unjudged and equal: a tie, settled
        ([0.5], [0.5], [0.5], [0.5], {"low": 0.0, "high": 0.0, "verdict": "tie"}),
        # could become a tie: not settled
        ([1], [1], [0.5], [1], {"low": 0.0, "high": 0.5, "verdict": "open"}),
    ],
)
def test_sign_bounds_by_hand(a_low, a_high, b_low, b_high, expected):
    got = comparison.sign_bounds(a_low, a_high, b_low, b_high)
    assert got["low"] == pytest.approx(expected["low"])
    assert got["high"] == pytest.approx(expected["high"])
    assert got["verdict"] == expected["verdict"]
    assert got["settled"] == (expected["verdict"] != "open")


def test_a_comparison_the_unjudged_could_flip_lists_exactly_its_pairs(tmp_path):
    ex = build(tmp_path)
    a, b = ex["ev"]["run-a"], ex["ev"]["run-b"]
    assert compare_evaluations(a, b)["measures"][0]["mean_diff"] == pytest.approx(-0.25)
    got = settlement(a, b)
    assert got["applies"] and not got["settled"]
    (entry,) = got["measures"]
    assert entry["measure"] == "P@2"
    assert (entry["low"], entry["high"]) == pytest.approx((-0.5, 0.25))
    assert entry["verdict"] == "open"
    assert entry["pairs"] == {"count": 3, "rows": [["q1", "u1"], ["q2", "u2"], ["q2", "u3"]]}
    assert got["pairs"] == entry["pairs"]
    assert got["focus"] == f"compare-{a.pk}-{b.pk}"


def test_a_comparison_the_unjudged_cannot_flip_is_settled_with_no_pairs(tmp_path):
    ex = build(tmp_path)
    got = settlement(ex["ev"]["run-c"], ex["ev"]["run-d"])
    assert got["settled"]
    (entry,) = got["measures"]
    assert (entry["low"], entry["high"], entry["verdict"]) == pytest.approx((0.5, 1.0, "a"))
    assert entry["pairs"] == {"count": 0, "rows": []}
    # the other way round: b is better whatever the labels
    back = settlement(ex["ev"]["run-d"], ex["ev"]["run-c"])["measures"][0]
    assert (back["low"], back["high"], back["verdict"]) == pytest.approx((-1.0, -0.5, "b"))


def test_judging_the_pairs_and_freezing_settles_it_on_the_new_snapshot(tmp_path, reviewer_ana):
    ex = build(tmp_path)
    judge_settling_pairs(ex["collection"], reviewer_ana)
    v2, _ = freeze_snapshot(collection=ex["collection"], by=reviewer_ana)
    a2, b2 = score(ex["runs"]["run-a"], v2), score(ex["runs"]["run-b"], v2)
    got = settlement(a2, b2)
    assert got["settled"] and got["pairs"]["count"] == 0
    (entry,) = got["measures"]
    # A = (1, .5), B = (.5, .5) on v2, nothing unjudged: low = high = +.25
    assert (entry["low"], entry["high"], entry["verdict"]) == pytest.approx((0.25, 0.25, "a"))
    # on v1 it still reads open: a comparison is pinned to its snapshot
    assert not settlement(ex["ev"]["run-a"], ex["ev"]["run-b"])["settled"]


def test_one_run_on_two_snapshots_does_not_apply(tmp_path, reviewer_ana):
    ex = build(tmp_path)
    judge_settling_pairs(ex["collection"], reviewer_ana)
    v2, _ = freeze_snapshot(collection=ex["collection"], by=reviewer_ana)
    got = settlement(ex["ev"]["run-a"], score(ex["runs"]["run-a"], v2))
    assert got["applies"] is False and "two snapshots" in got["reason"]


def test_pooled_tasks_of_the_pairs_start_below_urgent(tmp_path):
    # import_run pools u1..u5 at the pooled priority (1 source, rank r: 10 000 - r)
    ex = build(tmp_path)
    got = dict(
        ReviewTask.objects.filter(collection=ex["collection"]).values_list(
            "item__external_id", "priority"
        )
    )
    assert got == {"u1": 9_998, "u2": 9_999, "u3": 9_998, "u4": 9_998, "u5": 9_998}
    assert max(got.values()) < URGENT_PRIORITY
