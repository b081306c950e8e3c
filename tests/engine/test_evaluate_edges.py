"""``evaluate`` at its edges: the order queries are listed in, abstentions, the recorded
parameters, and a run that disagrees with the parameters."""

from __future__ import annotations

from pathlib import Path

import pytest

from verity_eval import (
    EngineInputError,
    EvalParams,
    InvalidParameterError,
    Run,
    evaluate,
    read_run,
)
from verity_eval.evaluate import AGGREGATIONS, natural_key


def test_queries_are_listed_in_natural_order() -> None:
    qrels = {qid: {"a": 1} for qid in ("q10", "q9", "q2", "q1a", "q1")}
    result = evaluate(qrels, {"r10": ["a"], "r9": ["a"], "q2": ["a"]}, EvalParams(ks=(1,)))
    assert list(result.per_query) == ["q1", "q1a", "q2", "q9", "q10"]
    assert list(result.excluded) == ["r9", "r10"]
    assert sorted(["b", "10", "a2", "a10", "9"], key=natural_key) == ["9", "10", "a2", "a10", "b"]


def test_an_abstaining_query_is_flagged_and_counted() -> None:
    run = Run.from_mapping({"q": [], "r": ["a"]}, abstained=frozenset({"q"}))
    qrels = {"q": {"a": 1}, "r": {"a": 1}, "s": {"b": 1}}
    result = evaluate(qrels, run, EvalParams(ks=(1,), measures=("R",)))
    assert result.per_query["q"]["abstained"] is True and result.per_query["q"]["R@1"] == 0.0
    assert "abstained" not in result.per_query["r"] and "abstained" not in result.per_query["s"]
    assert result.counts["abstained"] == 1 and result.counts["empty_ranking"] == 2
    assert (result.counts["run_queries"], result.counts["qrels_queries"]) == (2, 3)


def test_the_parameters_record_gains_aggregations_and_the_mapping() -> None:
    result = evaluate({"q": {"a": 1}}, {"q": ["a", "b"]}, mapping={"b": "c"})
    params = result.params
    assert params["gains"] == (
        "raw grades (every grade > 0, whatever rel_level), as trec_eval ndcg_cut"
    )
    assert params["aggregations"] == AGGREGATIONS and set(AGGREGATIONS) == {"macro", "pooled"}
    assert params["mapping"] == {"applied": True, "size": 1, "collapsed": 0, "dedup": "first"}
    unmapped = evaluate({"q": {"a": 1}}, {"q": ["a"]}).params["mapping"]
    assert unmapped == {"applied": False, "size": 0, "collapsed": 0, "dedup": "first"}


def test_hits_are_listed_by_cutoff_under_bounds() -> None:
    result = evaluate({"q": {"a": 1}}, {"q": ["u", "a"]}, EvalParams(ks=(2, 10), unjudged="bounds"))
    row = result.per_query["q"]
    assert [k for k in row if k.startswith("hits@")] == ["hits@2", "hits@10"]
    assert row["R@2"] == {"low": 1.0, "high": 1.0} and row["P@2"] == {"low": 0.5, "high": 1.0}


def test_evidence_groups_may_be_tuples_but_not_a_string() -> None:
    result = evaluate(
        {"q": {"a": 1, "b": 1}},
        {"q": ["a", "x", "b"]},
        EvalParams(ks=(2, 3)),
        evidence={"q": (("a", "b"),)},
    )
    assert result.per_query["q"]["Evidence@2"] == 0.0
    assert result.per_query["q"]["Evidence@3"] == 1.0
    with pytest.raises(EngineInputError) as info:
        evaluate({"q": {"a": 1}}, {"q": ["a"]}, evidence={"q": "ab"})
    assert info.value.errors == [
        "evidence: evidence for query 'q' must be a non-empty list of groups, e.g. "
        '[["a", "b"], ["c"]] for (a AND b) OR c'
    ]


def _staged(tmp_path: Path) -> Run:
    path = tmp_path / "run.jsonl"
    path.write_text('{"query": "q", "stages": {"candidates": ["a", "b"], "context": ["a"]}}\n')
    return read_run(path, stage="context")


def test_a_run_that_disagrees_with_the_parameters_is_refused_in_words(tmp_path: Path) -> None:
    qrels = {"q": {"a": 1}}
    path = tmp_path / "run.trec"
    path.write_text("q Q0 a 1 1 t\n")
    cases = [
        (read_run(path, order="rank"), EvalParams(),
         "the run was read with order='rank' but params say order='score'; read it again or "
         "change EvalParams.order"),
        (read_run(path), EvalParams(dedup="first"),
         "the run was read with dedup='error' but params say dedup='first'; read it again or "
         "change EvalParams.dedup"),
        (_staged(tmp_path), EvalParams(stage="candidates"),
         "params ask for stage 'candidates' but the run holds stage 'context'; pass stage= to "
         "read_run"),
        (["a"], EvalParams(), "rankings must be a Run or a mapping {qid: [ids...]}"),
    ]  # fmt: skip
    for rankings, params, message in cases:
        with pytest.raises(InvalidParameterError) as info:
            evaluate(qrels, rankings, params)
        assert str(info.value) == message
    # No stage asked for: the run's own stage is scored, and recorded.
    result = evaluate(qrels, _staged(tmp_path), EvalParams(ks=(1,)))
    assert result.params["stage"] == "context" and result.per_query["q"]["R@1"] == 1.0


def test_ids_equal_as_numbers_are_listed_in_a_fixed_order() -> None:
    """'1' and '01' have the same natural key; their order must not follow a set's hash
    order (which changes from one process to the next)."""
    ids = ["0" * n + "1" for n in range(8)]
    qrels = {qid: {"a": 1} for qid in ids}
    result = evaluate(qrels, {f"r{qid}": ["a"] for qid in ids}, EvalParams(ks=(1,)))
    assert list(result.per_query) == sorted(ids)  # "00000001" ... "01", "1"
    assert list(result.excluded) == sorted(f"r{qid}" for qid in ids)


def test_counts_are_integers_in_the_result() -> None:
    """JSON shows 2, not 2.0, for a count: hits, relevant and retrieved stay ints."""
    result = evaluate({"q": {"a": 1, "b": 2}}, {"q": ["a", "x", "b"]}, EvalParams(ks=(2,)))
    row = result.per_query["q"]
    counts = {k: row[k] for k in ("hits@2", "relevant", "retrieved")}
    assert counts == {"hits@2": 1, "relevant": 2, "retrieved": 3}
    assert all(type(v) is int for v in counts.values())


def test_measures_given_as_a_list_are_kept_as_a_tuple() -> None:
    params = EvalParams(ks=(5,), measures=["R", "AP"])
    assert params.measures == ("R", "AP") and hash(params) == hash(
        EvalParams(ks=5, measures=("R", "AP"))
    )
