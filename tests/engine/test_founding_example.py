"""The founding text's three-query example at k=2, and the inputs it refuses.

Hand calculation (seeds/000_df99e44f9b04309e.txt): A ranks [a, x, b, c] with G={a,b,c},
B ranks [x, d] with G={d}, C ranks [x, y] with G={e}. Hits at 2: A 1, B 1, C 0.
macro R@2 = (1/3 + 1 + 0) / 3 = 4/9; pooled R@2 = (1+1+0) / (3+1+1) = 2/5;
AnyHit@2 = 2/3 (A, B); AllHit@2 = 1/3 (B); Ceiling@2 for A = min(2,3)/3 = 2/3;
weights |G_i| / sum |G_j| = 3/5, 1/5, 1/5.
"""

from __future__ import annotations

import math

import pytest

from verity_eval import EngineError, EvalParams, evaluate, score_query

CASES = {
    "A": (["a", "x", "b", "c"], {"a", "b", "c"}),
    "B": (["x", "d"], {"d"}),
    "C": (["x", "y"], {"e"}),
}


def _result():
    qrels = {q: {d: 1 for d in gold} for q, (_, gold) in CASES.items()}
    rankings = {q: ranked for q, (ranked, _) in CASES.items()}
    return evaluate(qrels, rankings, EvalParams(ks=(2,)))


def test_macro_and_pooled_recall() -> None:
    agg = _result().aggregates
    assert math.isclose(agg["R@2"]["macro"], 4 / 9)
    assert math.isclose(agg["R@2"]["pooled"], 2 / 5)
    assert math.isclose(agg["AnyHit@2"]["macro"], 2 / 3)
    assert math.isclose(agg["AllHit@2"]["macro"], 1 / 3)


def test_per_query_ceiling_weights_and_hits() -> None:
    pq = _result().per_query
    assert math.isclose(pq["A"]["Ceiling@2"], 2 / 3)
    assert [pq[q]["weight"] for q in "ABC"] == pytest.approx([0.6, 0.2, 0.2])
    assert [pq[q]["hits@2"] for q in "ABC"] == [1, 1, 0]
    pooled = sum(pq[q]["weight"] * pq[q]["R@2"] for q in "ABC")
    assert math.isclose(pooled, 2 / 5)


def test_score_query_matches_the_text() -> None:
    assert score_query([], {"a"}, 2)["recall"] == 0
    assert score_query(["a"], {"a", "b"}, 5)["recall"] == 0.5
    best = score_query(["a", "b"], {"a", "b", "c"}, 2)
    assert math.isclose(best["recall"], 2 / 3) and best["all_hit"] == 0
    assert math.isclose(best["ceiling"], 2 / 3)


@pytest.mark.parametrize(
    ("ranked", "gold", "k"),
    [
        (["a", "a"], {"a"}, 2),
        (["a"], set(), 2),
        (["a"], {"a"}, 0),
        (["a"], {"a"}, -1),
        (["a"], {"a"}, True),
        (["a"], {"a"}, 2.0),
    ],
    ids=["duplicate-ids", "empty-gold", "k=0", "k=-1", "k=True", "k=2.0"],
)
def test_invalid_inputs_refused(ranked: list[str], gold: set[str], k: object) -> None:
    with pytest.raises(ValueError):
        score_query(ranked, gold, k)  # type: ignore[arg-type]
    with pytest.raises(EngineError):
        score_query(ranked, gold, k)  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [0, -3, True, 2.0, "2"], ids=repr)
def test_eval_params_refuse_bad_k(k: object) -> None:
    with pytest.raises(ValueError, match="positive integer"):
        EvalParams(ks=(k,))  # type: ignore[arg-type]


def test_duplicate_ids_in_rankings_refused_unless_dedup_first() -> None:
    qrels = {"A": {"a": 1}}
    with pytest.raises(EngineError, match=r"duplicate id 'a'.*dedup='first'"):
        evaluate(qrels, {"A": ["a", "x", "a"]}, EvalParams(ks=(2,)))
    result = evaluate(qrels, {"A": ["x", "a", "a"]}, EvalParams(ks=(2,), dedup="first"))
    assert result.per_query["A"]["R@2"] == 1.0
    assert result.params["dedup"] == "first" and result.params["duplicates_removed"] == 1
