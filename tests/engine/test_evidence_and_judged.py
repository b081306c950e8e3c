"""Evidence@k and Judged@k through ``evaluate``, with every value worked out by hand.

Three queries; q1 (first in order) has no evidence condition, so a loop that stopped at
the first query without one would lose q2 and q3. Judged@3 is asked while the other
measures' cutoffs are 1 and 2, so its cutoff must come from its own name.
"""

from __future__ import annotations

import pytest

from verity_eval import EvalParams, evaluate, exclusion_reason

QRELS = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}, "q3": {"e": 1, "z": 0}}
RUN = {"q1": ["x", "a", "b"], "q2": ["c", "y"], "q3": ["z", "e"]}
# q3: the group (e AND z) is complete at rank 2; the group (nope) never.
EVIDENCE = {"q2": [["c"]], "q3": [["e", "z"], ["nope"]]}
MEASURES = ("Evidence@1", "Evidence@2", "R@2", "Judged@3", "Ceiling@2")


def _result():
    params = EvalParams(ks=(2, 3), measures=MEASURES, rel_level=1, unjudged="nonrel")
    return evaluate(QRELS, RUN, params, evidence=EVIDENCE)


def test_per_query_values_by_hand():
    assert _result().per_query == {
        # R@2: a in the first 2 of |G| = 2; Judged@3: a, b of 3 ranks; weight 2 of 4 relevant
        "q1": {"Ceiling@2": 1.0, "Judged@3": pytest.approx(2 / 3), "R@2": 0.5, "hits@2": 1,
               "relevant": 2, "retrieved": 3, "weight": 0.5},
        # Evidence: c at rank 1; Judged@3: only c is judged, divided by k = 3
        "q2": {"Ceiling@2": 1.0, "Evidence@1": 1.0, "Evidence@2": 1.0,
               "Judged@3": pytest.approx(1 / 3), "R@2": 1.0, "hits@2": 1, "relevant": 1,
               "retrieved": 2, "weight": 0.25},
        # Evidence: (e AND z) needs rank 2; z is judged (grade 0), so Judged@3 = 2/3
        "q3": {"Ceiling@2": 1.0, "Evidence@1": 0.0, "Evidence@2": 1.0,
               "Judged@3": pytest.approx(2 / 3), "R@2": 1.0, "hits@2": 1, "relevant": 1,
               "retrieved": 2, "weight": 0.25},
    }  # fmt: skip


def test_aggregates_by_hand():
    assert _result().aggregates == {
        "Evidence@1": {"macro": 0.5},  # over the 2 queries with a condition: (1 + 0) / 2
        "Evidence@2": {"macro": 1.0},
        "R@2": {"macro": pytest.approx(2.5 / 3), "pooled": 0.75},  # 3 hits of 4 relevant
        "Judged@3": {"macro": pytest.approx(5 / 9)},  # (2/3 + 1/3 + 2/3) / 3
        "Ceiling@2": {"macro": 1.0},
    }


def test_a_query_whose_ranking_misses_every_group_has_evidence_0():
    params = EvalParams(ks=(5,), measures=("Evidence@5",), rel_level=1, unjudged="nonrel")
    result = evaluate({"q": {"a": 1}}, {"q": ["a"]}, params, evidence={"q": [["b"], ["c", "a"]]})

    assert result.per_query["q"]["Evidence@5"] == 0.0
    assert result.aggregates["Evidence@5"] == {"macro": 0.0}


@pytest.mark.parametrize(
    "status,in_qrels,has_relevant,reason",
    [
        ("relevant", True, True, ""),
        ("no_answer", True, True, "no_answer"),
        ("unreviewed", True, False, "unreviewed"),
        (None, True, True, "no_status"),
        (None, False, False, "not_in_qrels"),
        ("relevant", True, False, "no_relevant_judgments"),
    ],
)
def test_the_scorability_rule_with_statuses_by_default(status, in_qrels, has_relevant, reason):
    # The package's documented call leaves statuses_given out: statuses are then given.
    assert exclusion_reason(status, in_qrels=in_qrels, has_relevant=has_relevant) == reason
