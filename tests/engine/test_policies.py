"""Query accounting, unjudged policies, unit mapping, evidence and parameter checks.

Expected values are hand calculations, written next to each case.
"""

from __future__ import annotations

import math

import pytest

from verity_eval import EvalParams, InvalidParameterError, evaluate


def test_accounting_with_statuses() -> None:
    qrels = {
        "ok": {"a": 1},
        "pending": {"a": 1},
        "none": {"a": 0},
        "low": {"a": 1},
        "nostatus": {"a": 1},
    }
    statuses = {
        "ok": "relevant",
        "pending": "unreviewed",
        "none": "no_answer",
        "low": "relevant",
        "absent": "relevant",
    }
    rankings = {"ok": ["a"], "stray": ["a"], "none": []}
    r = evaluate(qrels, rankings, EvalParams(ks=(1,), rel_level=1), statuses=statuses)
    # "low" has grade 1 >= rel_level 1: scorable, absent from the run -> empty ranking.
    assert list(r.per_query) == ["low", "ok"]
    assert r.excluded == {
        "absent": "no_relevant_judgments",  # status relevant, nothing judged
        "none": "no_answer",
        "nostatus": "no_status",
        "pending": "unreviewed",
        "stray": "not_in_qrels",
    }
    assert r.counts["excluded"] == {
        "no_answer": 1,
        "no_relevant_judgments": 1,
        "no_status": 1,
        "not_in_qrels": 1,
        "unreviewed": 1,
    }
    assert r.counts["empty_ranking"] == 1
    assert r.per_query["low"]["R@1"] == 0.0 and r.per_query["low"]["Ceiling@1"] == 1.0


def test_without_statuses_queries_lacking_relevant_judgments_are_excluded() -> None:
    r = evaluate(
        {"1": {"a": 2}, "2": {"b": 1}},
        {"1": ["a"], "2": ["b"], "3": ["c"]},
        EvalParams(ks=(1,), rel_level=2),
    )
    assert list(r.per_query) == ["1"]
    assert r.excluded == {"2": "no_relevant_judgments", "3": "not_in_qrels"}


def test_no_scorable_query_is_undefined_never_zero() -> None:
    r = evaluate({"1": {"a": 0}}, {"1": ["a"]}, EvalParams(ks=(5,)))
    assert r.status == "undefined"
    assert r.per_query == {}
    assert all(v is None for agg in r.aggregates.values() for v in agg.values())
    assert r.aggregates["R@5"] == {"macro": None, "pooled": None}
    assert r.to_dict()["status"] == "undefined"


def test_judged_at_k_counts_judged_items_including_grade_zero() -> None:
    # Ranking a(1) u(absent) b(0) p(-1, pooled but unjudged): judged in first 4 = a, b.
    qrels = {"q": {"a": 1, "b": 0, "p": -1}}
    r = evaluate(qrels, {"q": ["a", "u", "b", "p"]}, EvalParams(ks=(2, 4, 10)))
    row = r.per_query["q"]
    assert (row["Judged@2"], row["Judged@4"], row["Judged@10"]) == (0.5, 0.5, 0.2)


def test_judged_only_condenses_the_list() -> None:
    # a=unjudged, b=rel: condensed list [b] -> RR 1, P@1 1; nonrel policy: RR 1/2.
    qrels = {"q": {"b": 1, "c": 0}}
    nonrel = evaluate(qrels, {"q": ["a", "b"]}, EvalParams(ks=(1,)))
    judged = evaluate(qrels, {"q": ["a", "b"]}, EvalParams(ks=(1,), unjudged="judged-only"))
    assert nonrel.per_query["q"]["RR"] == 0.5 and judged.per_query["q"]["RR"] == 1.0
    assert judged.per_query["q"]["P@1"] == 1.0
    # Judged@k always describes the list as ranked, before condensation.
    assert judged.per_query["q"]["Judged@1"] == 0.0


def test_bounds_policy_reports_both_labelings() -> None:
    # G={a}; ranking [u, a, v] with u, v unjudged; rel_level 1.
    # low (unjudged non-relevant): P@2 = 1/2, R@2 = 1, RR = 1/2, AP = 1/2.
    # high at k=2: u relevant -> P@2 = 2/2, R@2 = 2/2 (|G| = 1 + 1), nDCG@2 = 1.
    # high for RR/AP (u and v relevant, |G| = 3): RR = 1, AP = (1 + 1 + 1)/3 = 1.
    r = evaluate({"q": {"a": 1}}, {"q": ["u", "a", "v"]}, EvalParams(ks=(2,), unjudged="bounds"))
    row = r.per_query["q"]
    assert row["P@2"] == {"low": 0.5, "high": 1.0}
    assert row["R@2"] == {"low": 1.0, "high": 1.0}
    assert row["RR"] == {"low": 0.5, "high": 1.0}
    assert row["AP"] == {"low": 0.5, "high": 1.0}
    low_ndcg = 1 / math.log2(3)  # a at position 2, ideal has a at 1
    assert row["nDCG@2"]["low"] == pytest.approx(low_ndcg)
    assert row["nDCG@2"]["high"] == pytest.approx(1.0)
    # Measures that do not depend on labels stay single numbers.
    assert row["Ceiling@2"] == 1.0 and row["Judged@2"] == 0.5
    assert r.aggregates["P@2"]["macro"] == {"low": 0.5, "high": 1.0}
    assert r.aggregates["R@2"]["pooled"] == {"low": 1.0, "high": 1.0}
    assert "bounds" in r.params


def test_bounds_pooled_recall() -> None:
    # q1: G={a}, ranking [a]; q2: G={b,c}, ranking [u, x] (u unjudged, x judged 0).
    # low pooled R@2 = (1 + 0) / (1 + 2) = 1/3; high: q2 gains u -> (1 + 1) / (1 + 3) = 1/2.
    r = evaluate(
        {"1": {"a": 1}, "2": {"b": 1, "c": 1, "x": 0}},
        {"1": ["a"], "2": ["u", "x"]},
        EvalParams(ks=(2,), unjudged="bounds", measures=("R",)),
    )
    assert r.aggregates["R@2"]["pooled"] == pytest.approx({"low": 1 / 3, "high": 1 / 2})


def test_unit_mapping_collapses_to_first_rank() -> None:
    # chunks c1, c2 -> doc D1; c3 -> D2; "z" is unmapped and kept as is.
    # mapped ranking: D1 (c1), z, D1 (c2: collapsed), D2 -> [D1, z, D2]
    mapping = {"c1": "D1", "c2": "D1", "c3": "D2"}
    r = evaluate(
        {"q": {"D1": 1, "D2": 1, "z": 1}},
        {"q": ["c1", "z", "c2", "c3"]},
        EvalParams(ks=(2, 3)),
        mapping=mapping,
    )
    row = r.per_query["q"]
    assert row["R@2"] == pytest.approx(2 / 3) and row["R@3"] == 1.0
    assert row["retrieved"] == 3
    assert r.params["mapping"] == {"applied": True, "size": 3, "collapsed": 1, "dedup": "first"}


def test_evidence_condition_is_reported_apart_from_recall() -> None:
    # (a AND b) OR c. q1 ranking [a, x, b]: group {a,b} complete at k=3, not at k=2.
    # q2 ranking [c]: group {c} complete at k=1. q3 has no condition: no Evidence value.
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}, "q3": {"d": 1}}
    evidence = {"q1": [["a", "b"], ["c"]], "q2": [["a", "b"], ["c"]]}
    r = evaluate(
        qrels,
        {"q1": ["a", "x", "b"], "q2": ["c"], "q3": ["d"]},
        EvalParams(ks=(2, 3)),
        evidence=evidence,
    )
    assert r.per_query["q1"]["Evidence@2"] == 0.0 and r.per_query["q1"]["Evidence@3"] == 1.0
    assert r.per_query["q2"]["Evidence@2"] == 1.0
    assert "Evidence@2" not in r.per_query["q3"]
    assert r.aggregates["Evidence@2"]["macro"] == 0.5  # over the 2 queries with a condition
    assert r.counts["with_evidence"] == 2
    assert r.per_query["q1"]["R@2"] == 0.5  # recall unchanged by the condition


def test_measure_selection_and_aliases() -> None:
    r = evaluate(
        {"q": {"a": 1}},
        {"q": ["a"]},
        EvalParams(ks=(5,), measures=("recall_10", "nDCG", "map", "P@3")),
    )
    assert r.measures == ("P@3", "nDCG@5", "R@10", "AP")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"measures": ("Recall@10",)},
        {"measures": ("R@0",)},
        {"measures": ("MRR",)},
        {"rel_level": 0},
        {"rel_level": True},
        {"unjudged": "ignore"},
        {"dedup": "last"},
        {"ks": ()},
    ],
    ids=lambda kw: repr(kw),
)
def test_invalid_parameters(kwargs: dict) -> None:
    with pytest.raises(InvalidParameterError):
        EvalParams(**kwargs)


def test_invalid_grade_and_status_in_memory() -> None:
    with pytest.raises(ValueError, match=r"grade 1\.5 is not an integer"):
        evaluate({"q": {"a": 1.5}}, {"q": ["a"]})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="status 'done' is not one of"):
        evaluate({"q": {"a": 1}}, {"q": ["a"]}, statuses={"q": "done"})
