"""Holes per run (issue 28, item 2): judged and unjudged items in the first k, worked by hand."""

from __future__ import annotations

import pytest

from verity_eval import InvalidParameterError, find_holes, unjudged_rows

# q1: a relevant, b judged non-relevant, c pooled but unjudged (-1); q2: x; q3 not judged.
QRELS = {"q1": {"a": 1, "b": 0, "c": -1}, "q2": {"x": 2}}
RUN = {"q1": ["a", "d", "b", "c", "e"], "q2": ["y"], "q3": ["z", "x"]}


def test_per_query_counts_by_hand():
    holes = find_holes(QRELS, RUN, (5, 2))
    assert holes.ks == (2, 5)
    assert holes.per_query() == {
        # first 2: a judged, d not; first 5: a, b judged; d, c (-1), e not
        "q1": {
            "ranked": 5,
            "k": {"2": {"judged_at": 0.5, "unjudged": 1}, "5": {"judged_at": 0.4, "unjudged": 3}},
        },
        # one item ranked: Judged@k keeps k as its denominator
        "q2": {
            "ranked": 1,
            "k": {"2": {"judged_at": 0.0, "unjudged": 1}, "5": {"judged_at": 0.0, "unjudged": 1}},
        },
        # x is judged for q2, not for q3
        "q3": {
            "ranked": 2,
            "k": {"2": {"judged_at": 0.0, "unjudged": 2}, "5": {"judged_at": 0.0, "unjudged": 2}},
        },
    }


def test_overall_by_hand():
    overall = find_holes(QRELS, RUN, (2, 5)).overall()
    assert overall["queries"] == 3
    # k=2: 1 judged of 2 x 3 positions; unjudged 1 + 1 + 2
    assert overall["ks"]["2"] == pytest.approx(
        {"judged_at": 1 / 6, "unjudged": 4, "queries_with_unjudged": 3}
    )
    # k=5: 2 judged of 5 x 3; unjudged 3 + 1 + 2
    assert overall["ks"]["5"] == pytest.approx(
        {"judged_at": 2 / 15, "unjudged": 6, "queries_with_unjudged": 3}
    )


def test_unjudged_rows_within_a_depth_and_for_some_queries():
    assert unjudged_rows(QRELS, RUN, depth=2) == [
        ("q1", "d", 2),
        ("q2", "y", 1),
        ("q3", "z", 1),
        ("q3", "x", 2),
    ]
    assert unjudged_rows(QRELS, RUN, depth=None, queries=["q1"]) == [
        ("q1", "d", 2),
        ("q1", "c", 4),
        ("q1", "e", 5),
    ]
    assert unjudged_rows({"q1": {"a": 1}}, {"q1": ["a"]}, depth=None) == []


def test_judged_at_agrees_with_evaluate():
    from verity_eval import EvalParams, evaluate

    result = evaluate(QRELS, RUN, EvalParams(ks=(2, 5), measures=("Judged@2", "Judged@5")))
    holes = find_holes(QRELS, RUN, (2, 5)).per_query()
    # only q1 is scorable (q2's x is relevant too): the engine's Judged@k is the same number
    for qid, row in result.per_query.items():
        assert row["Judged@2"] == holes[qid]["k"]["2"]["judged_at"]
        assert row["Judged@5"] == holes[qid]["k"]["5"]["judged_at"]


def test_refuses_a_bad_cutoff():
    with pytest.raises(InvalidParameterError, match="positive integers"):
        find_holes(QRELS, RUN, (0,))
