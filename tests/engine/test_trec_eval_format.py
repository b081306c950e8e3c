"""``--format trec_eval`` by hand: names, trec_eval's order and layout, and the notes on
where the averaged query set departs from plain trec_eval's."""

from __future__ import annotations

import pytest

from verity_eval import EvalParams, evaluate
from verity_eval.trec_eval_format import departures, format_trec_eval, trec_eval_name


def _line(name: str, qid: str, value: str) -> str:
    return f"{name:<22}\t{qid}\t{value}"


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [("AP", "map"), ("RR", "recip_rank"), ("Rprec", "Rprec"), ("bpref", "bpref"),
     ("P@5", "P_5"), ("R@100", "recall_100"), ("nDCG@10", "ndcg_cut_10"),
     ("AnyHit@1", "success_1"), ("Ceiling@5", None), ("AllHit@5", None), ("Judged@5", None),
     ("Evidence@5", None)],
)  # fmt: skip
def test_measure_names(ours: str, theirs: str | None) -> None:
    assert trec_eval_name(ours) == theirs


def test_lines_in_trec_evals_order_and_layout() -> None:
    qrels = {"q2": {"a": 1, "b": 1}, "q10": {"c": 2}}
    result = evaluate(qrels, {"q2": ["a", "x"], "q10": ["y", "c", "z"]}, EvalParams(ks=(2, 10)))
    measures = ("R@10", "P@10", "P@2", "AP", "Ceiling@2", "nDCG@2")
    text = format_trec_eval(
        result, per_query=True, relevant_retrieved={"q2": 1, "q10": 1}, measures=measures
    )
    per_query = {
        "q10": ["3", "1", "1", "0.5000", "0.5000", "0.1000", "1.0000", "0.6309"],
        "q2": ["2", "2", "1", "0.5000", "0.5000", "0.1000", "0.5000", "0.6131"],
    }
    names = ["num_ret", "num_rel", "num_rel_ret", "map", "P_2", "P_10", "recall_10",
             "ndcg_cut_2"]  # fmt: skip
    means = ["5", "3", "2", "0.5000", "0.5000", "0.1000", "0.7500", "0.6220"]
    expected = [
        _line(n, qid, v)
        for qid, vals in per_query.items()
        for n, v in zip(names, vals, strict=True)
    ]
    expected += [_line("num_q", "all", "2")]
    expected += [_line(n, "all", v) for n, v in zip(names, means, strict=True)]
    assert text.splitlines() == expected
    plain = format_trec_eval(result, per_query=False, relevant_retrieved={"q2": 1, "q10": 1})
    assert all("\tall\t" in line for line in plain.splitlines())
    assert plain.splitlines()[:4] == expected[-9:-5]  # num_q and the three counts


def test_an_undefined_result_is_refused_and_departures_are_noted() -> None:
    undefined = evaluate({"q": {"a": 0}}, {"q": ["a"]})
    with pytest.raises(ValueError) as info:
        format_trec_eval(undefined, per_query=False, relevant_retrieved={})
    assert str(info.value) == "no scorable query: every mean is undefined"
    assert departures(evaluate({"q": {"a": 1}}, {"q": ["a"]})) == []
    result = evaluate({"q": {"a": 1}, "e": {"b": 1}, "n": {"c": 0}, "m": {"d": 0}}, {"q": ["a"]})
    assert departures(result) == [
        "1 scorable queries have no ranking in the run and are averaged in as 0, as with "
        "trec_eval -c (trec_eval 10 without -c stops with an error at the first of them; "
        "verity-trec-eval follows trec_eval exactly)",
        "2 queries have no relevant judgment and are left out (trec_eval averages in those "
        "the run ranks: as 0 for most measures, but its ndcg_cut counts every positive grade, "
        "below -l too; verity-trec-eval follows trec_eval exactly)",
    ]
