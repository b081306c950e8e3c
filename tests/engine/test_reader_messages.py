"""Readers' messages, word for word, and the engine pieces the Django side relies on.

Each defective file below holds several defects on several lines, and the test expects
every message in full, in line order: the contract is that a reader names the file and
the line, says what is wrong and how to fix it, and goes on to the next line so that one
pass finds every problem. The messages are written out here by hand (found by mutation
testing: a reader that stopped at the first defect, or a message that lost its fix,
passed the suite before).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from verity_eval import (
    EngineInputError,
    EvalParams,
    InvalidParameterError,
    Qrels,
    Run,
    evaluate,
    read_mapping,
    read_qrels,
    read_run,
    read_run_stages,
    read_statuses,
    score_query,
    tables,
)


def _file(tmp_path: Path, name: str, lines: list[object] | str) -> Path:
    path = tmp_path / name
    if isinstance(lines, str):
        path.write_text(lines)
    else:
        path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def _errors(call, *args, **kwargs) -> list[str]:
    with pytest.raises(EngineInputError) as info:
        call(*args, **kwargs)
    return info.value.errors


# -- JSON Lines runs ---------------------------------------------------------------------------


def test_jsonl_run_reports_every_defective_line(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        "run.jsonl",
        [
            [1, 2],
            {"query": ""},
            {"query": "a", "ranking": ["x"]},
            {"query": "a", "ranking": ["y"]},
            {"query": "b", "abstain": "yes"},
            {"query": "c", "stages": {}, "ranking": []},
            {"query": "d", "stages": ["x"]},
            {"query": "e", "stages": {"s1": "x"}},
            {"query": "f", "ranking": ["x", ""]},
            {"query": "g"},
            "{not json",
            {"query": "h", "ranking": ["x"]},
        ],
    )
    p = str(path)
    assert _errors(read_run, path) == [
        f"{p} line 1: expected a JSON object with a 'query' key",
        f"{p} line 2: 'query' must be a non-empty string",
        f"{p} line 4: query 'a' already given at line 3; put each query on one line",
        f"{p} line 5: 'abstain' must be true or false",
        f"{p} line 6: give either 'stages' or 'ranking', not both",
        f"{p} line 7: 'stages' must map stage names to id lists",
        f"{p} line 8: stage 's1' must be a list of item ids",
        f"{p} line 9: 'ranking', position 2: '' is not an item id; ids are non-empty strings",
        f"{p} line 10: no 'stages' or 'ranking' for query 'g'; give the ranked ids, or "
        '"abstain": true',
        f"{p} line 11: not valid JSON (Expecting property name enclosed in double quotes at "
        "column 2); write one JSON object per line",
    ]


def test_jsonl_stage_defects_are_all_reported(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        "pipe.jsonl",
        [
            {"query": "a", "stages": {"cand": ["x", "y", "x", "y"], "ctx": ["x"]}},
            {"query": "b", "stages": {"cand": ["z"]}},
            {"query": "c", "stages": {}},
            {"query": "d", "stages": {"cand": ["z", "z"], "ctx": []}},
        ],
    )
    p = str(path)
    assert _errors(read_run, path, stage="ctx") == [
        f"{p} line 2: query 'b' has no stage 'ctx' (it has cand); give every query every "
        "stage, an empty list if need be",
        f"{p} line 3: query 'c' has no stage 'ctx' (it has none); give every query every "
        "stage, an empty list if need be",
    ]
    assert _errors(read_run, path, stage="cand") == [
        f"{p} line 1: duplicate id 'x' at position 3 of stage 'cand' for query 'a' (first at "
        "position 1); pass --dedup first to keep the first occurrence",
        f"{p} line 1: duplicate id 'y' at position 4 of stage 'cand' for query 'a' (first at "
        "position 2); pass --dedup first to keep the first occurrence",
        f"{p} line 3: query 'c' has no stage 'cand' (it has none); give every query every "
        "stage, an empty list if need be",
        f"{p} line 4: duplicate id 'z' at position 2 of stage 'cand' for query 'd' (first at "
        "position 1); pass --dedup first to keep the first occurrence",
    ]
    assert _errors(read_run, path) == [
        f"{p}: the run has several stages (cand, ctx); choose one with --stage NAME (stage=...)"
    ]
    assert _errors(read_run, path, stage="rerank") == [
        f"{p}: no stage 'rerank' in the run; its stages are cand, ctx"
    ]


def test_jsonl_dedup_first_abstentions_and_every_stage(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        "pipe.jsonl",
        [
            {"query": "a", "stages": {"cand": ["x", "y", "x", "y", "z"], "ctx": ["y", "y"]}},
            {"query": "n", "abstain": True},
            {"query": "b", "stages": {"cand": ["w"], "ctx": []}},
        ],
    )

    cand = read_run(path, stage="cand", dedup="first")
    stages = read_run_stages(path, dedup="first")

    # By hand: a keeps x, y, z (2 repeats dropped); n abstains with an empty ranking.
    assert cand.to_mapping() == {"a": ["x", "y", "z"], "n": [], "b": ["w"]}
    assert (cand.duplicates_removed, cand.stage, cand.stages) == (2, "cand", ("cand", "ctx"))
    assert (cand.order, cand.dedup, cand.source) == ("list", "first", str(path))
    assert cand.abstained == frozenset({"n"})
    assert [s.stage for s in stages] == ["cand", "ctx"]
    assert [s.to_mapping() for s in stages] == [
        {"a": ["x", "y", "z"], "n": [], "b": ["w"]},
        {"a": ["y"], "n": [], "b": []},
    ]
    assert [s.duplicates_removed for s in stages] == [2, 1]
    assert all(s.abstained == frozenset({"n"}) and s.stages == ("cand", "ctx") for s in stages)
    with pytest.raises(InvalidParameterError, match="dedup must be one of error, first"):
        read_run_stages(path, dedup="last")


def test_a_single_ranking_run_and_a_trec_run_have_one_stage_named_default(tmp_path) -> None:
    jsonl = _file(tmp_path, "r.json", [{"query": "q", "ranking": ["b", "a"]}])
    only_abstentions = _file(tmp_path, "n.jsonl", [{"query": "q", "abstain": True}])
    trec = _file(tmp_path, "r.trec", "q Q0 a 1 1.0 t\nq Q0 b 2 2.0 t\n")

    (one,) = read_run_stages(jsonl)
    (none,) = read_run_stages(only_abstentions)
    (from_trec,) = read_run_stages(trec, order="rank")

    assert (one.stage, one.to_mapping()) == ("default", {"q": ["b", "a"]})
    assert (none.stage, none.to_mapping(), none.abstained) == ("default", {"q": []}, {"q"})
    assert (from_trec.stage, from_trec.order) == ("default", "rank")
    assert from_trec.to_mapping() == {"q": ["a", "b"]}
    assert read_run_stages(trec)[0].to_mapping() == {"q": ["b", "a"]}  # by score
    assert _errors(read_run, _file(tmp_path, "e.jsonl", "# nothing\n\n")) == [
        f"{tmp_path / 'e.jsonl'} line 1: file is empty (no data lines); expected one JSON "
        'object per line, e.g. {"query": "q1", "ranking": [...]}'
    ]


def test_run_format_and_parameters_are_checked(tmp_path: Path) -> None:
    trec = _file(tmp_path, "r.txt", "q Q0 a 1 1.0 t\n")
    with pytest.raises(InvalidParameterError, match="run format must be 'trec' or 'jsonl'"):
        read_run(trec, fmt="csv")
    with pytest.raises(InvalidParameterError, match="order must be 'score' or 'rank'"):
        read_run(trec, order="list")
    assert read_run(_file(tmp_path, "r.data", '  {"query": "q", "ranking": ["a"]}\n')).order == (
        "list"
    )


# -- statuses, evidence and mappings ------------------------------------------------------------


def test_statuses_file_reports_every_defective_line(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        "st.jsonl",
        [
            ["q"],
            {"query": 7, "status": "relevant"},
            {"query": "a", "status": "relevant"},
            {"query": "a", "status": "no_answer"},
            {"query": "b", "status": "done"},
            {"query": "c", "status": "relevant", "evidence": []},
            {"query": "d", "status": "relevant", "evidence": [["x"], []]},
            {"query": "e", "status": "relevant", "evidence": [["x", 3]]},
            {"query": "f", "status": "relevant", "evidence": [["x", "y"], ["z"]]},
        ],
    )
    p = str(path)
    assert _errors(read_statuses, path) == [
        f"{p} line 1: expected a JSON object with 'query' and 'status'",
        f"{p} line 2: 'query' must be a non-empty string",
        f"{p} line 4: query 'a' already given at line 3",
        f"{p} line 5: status 'done' is not one of relevant, no_answer, unreviewed",
        f"{p} line 6: evidence for query 'c' must be a non-empty list of groups, e.g. "
        '[["a", "b"], ["c"]] for (a AND b) OR c',
        f"{p} line 7: evidence group [] of query 'd' must be a non-empty list of item ids",
        f"{p} line 8: evidence group ['x', 3] of query 'e' must be a non-empty list of item ids",
    ]
    good = _file(
        tmp_path,
        "ok.jsonl",
        [
            {"query": "f", "status": "relevant", "evidence": [["x", "y"], ["z"]]},
            {"query": "g", "status": "unreviewed", "evidence": None},
        ],
    )
    st = read_statuses(good)
    assert (st.statuses, st.evidence, st.source) == (
        {"f": "relevant", "g": "unreviewed"},
        {"f": [["x", "y"], ["z"]]},
        str(good),
    )
    assert _errors(read_statuses, _file(tmp_path, "none.jsonl", "\n# x\n")) == [
        f"{tmp_path / 'none.jsonl'} line 1: file is empty (no data lines); expected lines "
        'like {"query": "q1", "status": "relevant"}'
    ]


def test_in_memory_evidence_and_statuses_are_checked_like_the_files() -> None:
    qrels, run = {"q": {"a": 1}, "r": {"b": 1}}, {"q": ["a"], "r": ["b"]}
    with pytest.raises(EngineInputError) as info:
        evaluate(qrels, run, EvalParams(ks=(1,)), evidence={"q": [], "r": [["b", ""]]})
    assert info.value.errors == [
        "evidence: evidence for query 'q' must be a non-empty list of groups, e.g. "
        '[["a", "b"], ["c"]] for (a AND b) OR c',
        "evidence: evidence group ['b', ''] of query 'r' must be a non-empty list of item ids",
    ]
    with pytest.raises(EngineInputError) as info:
        evaluate(qrels, run, EvalParams(ks=(1,)), statuses={"q": "done", "r": "maybe"})
    assert info.value.errors == [
        "statuses: query 'q': status 'done' is not one of relevant, no_answer, unreviewed",
        "statuses: query 'r': status 'maybe' is not one of relevant, no_answer, unreviewed",
    ]
    # Tuples are accepted as groups, and an evidence condition is met as with lists.
    r = evaluate(qrels, run, EvalParams(ks=(1,)), evidence={"q": (("a",),), "r": [("x",)]})
    assert r.per_query["q"]["Evidence@1"] == 1.0 and r.per_query["r"]["Evidence@1"] == 0.0


def test_mapping_file_reports_every_defective_line(tmp_path: Path) -> None:
    # Line 3 holds only blanks: skipped, like an empty line.
    path = _file(tmp_path, "m.tsv", "c1\td1\nc2 d1\n \t \nc1\td2\nc3\td2\textra\n# note\nc4\td2\n")
    p = str(path)
    assert _errors(read_mapping, path) == [
        f"{p} line 2: expected 'fine<TAB>coarse', found 1 tab-separated field(s); separate "
        "the two ids with one tab",
        f"{p} line 4: fine id 'c1' already mapped at line 1; map each fine id once",
        f"{p} line 5: expected 'fine<TAB>coarse', found 3 tab-separated field(s); separate "
        "the two ids with one tab",
    ]
    ok = _file(tmp_path, "ok.tsv", " c1 \t d1 \nc2\td1\n")
    assert read_mapping(ok) == {"c1": "d1", "c2": "d1"}
    assert _errors(read_mapping, _file(tmp_path, "e.tsv", "# only\n")) == [
        f"{tmp_path / 'e.tsv'} line 1: file is empty (no data lines); expected lines "
        "'fine<TAB>coarse'"
    ]
    many = _file(tmp_path, "many.tsv", "".join(f"c{i}\n" for i in range(30)))
    with pytest.raises(EngineInputError) as info:
        read_mapping(many)
    assert len(info.value.errors) == 25 and info.value.truncated


# -- the engine pieces the Django side uses ------------------------------------------------------


def test_iter_rankings_batches_and_len() -> None:
    run = Run.from_mapping({f"q{i}": [f"d{j}" for j in range(i)] for i in range(7)})
    assert len(run) == sum(range(7))
    for batch in (1, 2, 3, 500):
        got = list(run.iter_rankings(batch=batch))
        assert got == [(f"q{i}", [f"d{j}" for j in range(i)]) for i in range(7)], batch
    assert run.ranking("q3") == ["d0", "d1", "d2"] and run.ranking("nope") == []


def test_params_to_dict_records_every_parameter() -> None:
    params = EvalParams(ks=(10, 5, 10), rel_level=2, unjudged="bounds", dedup="first",
                        order="rank", stage="ctx")  # fmt: skip
    assert params.to_dict() == {
        "ks": [5, 10],
        "rel_level": 2,
        "unjudged": "bounds",
        "dedup": "first",
        "order": "rank",
        "stage": "ctx",
    }


def test_the_exact_join_gives_the_same_grades_as_the_keyed_one(monkeypatch) -> None:
    qrels = Qrels.from_mapping(
        {"q1": {"a": 2, "b": 0, "c": -1}, "q2": {"a": 1, "z": 3}, "q3": {"x": 1}}
    )
    run = Run.from_mapping({"q2": ["z", "a", "b"], "q1": ["c", "a", "u", "b"], "q9": ["a"]})
    run_to_qrels = np.array([1, 0, -1])  # q2 -> qrels row 1, q1 -> 0, q9 not joined

    keyed = tables.qrels_grades_for_run(run, qrels, run_to_qrels)
    monkeypatch.setattr(tables, "MAX_KEYED_QUERIES", 1)  # forces the string-by-string join
    exact = tables.qrels_grades_for_run(run, qrels, run_to_qrels)

    # Physical rows: q2 z a b | q1 c a u b | q9 a. Unjudged (-1) for c (graded -1), u,
    # b under q2, and every row of q9.
    assert keyed.tolist() == exact.tolist() == [3, 1, -1, -1, 2, -1, 0, -1]


@pytest.mark.parametrize(
    ("ranked", "gold", "k", "expected"),
    [
        (["a", "x", "b"], {"a", "b", "c"}, 2, (1, 3, 1 / 3, 2 / 3, 1, 0)),
        (["x", "y"], {"a"}, 2, (0, 1, 0.0, 1.0, 0, 0)),
        (["a", "b"], {"a", "b"}, 1, (1, 2, 0.5, 0.5, 1, 0)),
        (["a", "b"], {"a", "b"}, 5, (2, 2, 1.0, 1.0, 1, 1)),
        ([], {"a"}, 3, (0, 1, 0.0, 1.0, 0, 0)),
    ],
    ids=["founding-A", "miss", "cut", "all", "empty"],
)
def test_score_query_every_field_by_hand(ranked, gold, k, expected) -> None:
    fields = ("hits", "relevant", "recall", "ceiling", "any_hit", "all_hit")
    assert score_query(ranked, gold, k) == dict(zip(fields, expected, strict=True))


def test_score_query_refusals_say_why() -> None:
    with pytest.raises(EngineInputError) as info:
        score_query(["a", "b", "a", "b"], {"a"}, 2)
    assert info.value.errors == [
        "duplicate id 'a' in the ranking; deduplicate stable ids before scoring"
    ]
    with pytest.raises(InvalidParameterError) as refused:
        score_query(["a"], set(), 1)
    assert str(refused.value) == (
        "empty relevance set: a query needs reviewed, non-empty relevance labels to be "
        "scored (unreviewed and no-answer queries are excluded, not scored)"
    )
    with pytest.raises(InvalidParameterError) as refused:
        score_query("ab", {"a"}, 1)
    assert str(refused.value) == "ranked must be a sequence of ids, not one string"
    with pytest.raises(InvalidParameterError) as refused:
        score_query(["a"], {"a"}, 0)
    assert str(refused.value) == "k must be a positive integer, got 0"


# -- parameters ----------------------------------------------------------------------------------

KNOWN = "R, Ceiling, AnyHit, AllHit, P, nDCG, Judged, Evidence, RR, AP, Rprec, bpref"


@pytest.mark.parametrize(
    ("measures", "message"),
    [
        (("Recall@10",), f"unknown measure 'Recall@10'; known measures: {KNOWN} (cutoff "
         "measures take '@k', e.g. 'nDCG@10', or expand over --k when given bare)"),
        (("MRR",), f"unknown measure 'MRR'; known measures: {KNOWN} (cutoff measures take "
         "'@k', e.g. 'nDCG@10', or expand over --k when given bare)"),
        (("R@0",), "measure 'R@0': cutoff '0' is not a positive integer; write e.g. 'R@10'"),
        (("R@1@0",), "measure 'R@1@0': cutoff '1@0' is not a positive integer; write e.g. "
         "'R@10'"),
        (("P_07",), "measure 'P_07': cutoff '07' is not a positive integer; write e.g. 'R@10'"),
        (("",), "measure names must be non-empty strings: ''"),
        ((), "measures is empty; pass None for every measure"),
        ("R", "measures must be a tuple of names, not one string; e.g. ('R', 'nDCG@10')"),
    ],
    ids=["unknown-family", "unknown", "zero", "two-ats", "alias-zero", "blank", "empty", "str"],
)  # fmt: skip
def test_bad_measure_names_say_how_to_fix_them(measures, message) -> None:
    with pytest.raises(InvalidParameterError) as refused:
        EvalParams(ks=(5,), measures=measures)
    assert str(refused.value) == message


def test_every_trec_eval_alias_and_case() -> None:
    params = EvalParams(
        ks=(3,),
        measures=("recall_5", "P_10", "ndcg_cut_20", "success_1", "recip_rank", "map",
                  "Rprec", "bpref", "ap", "NDCG", "judged@2", " AllHit@4 "),
    )  # fmt: skip
    assert params.measure_names(with_evidence=False) == (
        "AnyHit@1", "Judged@2", "nDCG@3", "AllHit@4", "R@5", "P@10", "nDCG@20",
        "RR", "AP", "Rprec", "bpref",
    )  # fmt: skip
    # trec_eval's cutoff families, bare, run over --k like Verity's (P always did).
    bare = EvalParams(ks=(3, 7), measures=("recall", "ndcg_cut", "success", "P"))
    assert bare.measure_names(with_evidence=False) == (
        "R@3", "AnyHit@3", "P@3", "nDCG@3", "R@7", "AnyHit@7", "P@7", "nDCG@7",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ndcg", "measure 'ndcg' is trec_eval's nDCG over the whole ranking, with no cutoff, "
         "not one of Verity's measures: for nDCG at a cutoff write nDCG@k (or nDCG over --k; "
         "trec_eval's ndcg_cut_k); verity-trec-eval -m ndcg computes trec_eval's"),
        ("map_cut_10", "measure 'map_cut_10' is trec_eval's AP cut at k (divided by all "
         "relevant documents), not one of Verity's measures: verity-eval does not compute it; "
         "verity-trec-eval -m map_cut computes trec_eval's"),
        ("gm_map", "measure 'gm_map' is trec_eval's the geometric mean of AP, not one of "
         "Verity's measures: verity-eval does not compute it; verity-trec-eval -m gm_map "
         "computes trec_eval's"),
        ("iprec_at_recall_0.10", "measure 'iprec_at_recall_0.10' is trec_eval's interpolated "
         "precision at recall levels, not one of Verity's measures: verity-eval does not "
         "compute it; verity-trec-eval -m iprec_at_recall computes trec_eval's"),
        ("num_rel_ret", "measure 'num_rel_ret' is trec_eval's the relevant retrieved count, not "
         "one of Verity's measures: the counts are printed by --format trec_eval; "
         "verity-trec-eval -m num_rel_ret computes trec_eval's"),
    ],
    ids=["ndcg", "map_cut_10", "gm_map", "iprec", "num_rel_ret"],
)  # fmt: skip
def test_trec_eval_names_that_mean_something_else_are_refused_with_a_pointer(name, message):
    """Before: 'ndcg' silently meant nDCG@k (trec_eval's ndcg_cut), not trec_eval's ndcg."""
    with pytest.raises(InvalidParameterError) as refused:
        EvalParams(ks=(5,), measures=(name,))
    assert str(refused.value) == message
    every = EvalParams(ks=(2,)).measure_names(with_evidence=True)
    assert every == (*(f"{f}@2" for f in KNOWN.split(", ")[:8]), "RR", "AP", "Rprec", "bpref")
    assert "Evidence@2" not in EvalParams(ks=(2,)).measure_names(with_evidence=False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ks": (5, 0)}, "every cutoff k must be a positive integer, got 0"),
        ({"ks": (2.0,)}, "every cutoff k must be a positive integer, got 2.0"),
        ({"ks": "5"}, "ks must be a non-empty tuple of cutoffs, got '5'"),
        ({"rel_level": 0}, "rel_level must be an integer >= 1 (the lowest grade counted as "
         "relevant), got 0"),
        ({"unjudged": "ignore"}, "unjudged must be one of nonrel, judged-only, bounds; got "
         "'ignore'"),
        ({"dedup": "last"}, "dedup must be one of error, first; got 'last'"),
        ({"order": "random"}, "order must be one of score, rank, list; got 'random'"),
        ({"stage": ""}, "stage must be a non-empty string, got ''"),
    ],
    ids=["zero-k", "float-k", "str-ks", "rel-level", "unjudged", "dedup", "order", "stage"],
)  # fmt: skip
def test_bad_parameters_say_what_is_allowed(kwargs, message) -> None:
    with pytest.raises(InvalidParameterError) as refused:
        EvalParams(**kwargs)
    assert str(refused.value) == message
    assert EvalParams(ks=7).ks == (7,)


# -- hash collisions cost time, never a wrong number -------------------------------------------


def test_colliding_hashes_still_give_exact_duplicates_joins_and_mappings(monkeypatch) -> None:
    """Every id hashed to 0: every key of a query collides, and every answer must still be
    the one the strings give."""
    qrels = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"a": 1}}
    rankings = {"q1": ["c", "x", "a", "b"], "q2": ["b", "a"]}
    honest = evaluate(qrels, rankings, EvalParams(ks=(2, 4), dedup="first"))
    mapping = {"x": "a", "b": "c"}
    honest_mapped = evaluate(qrels, rankings, EvalParams(ks=(2, 4)), mapping=mapping)

    monkeypatch.setattr(tables, "_hash_chunk", lambda arr: np.zeros(len(arr), dtype=np.uint64))
    collided = evaluate(qrels, rankings, EvalParams(ks=(2, 4), dedup="first"))
    collided_mapped = evaluate(qrels, rankings, EvalParams(ks=(2, 4)), mapping=mapping)

    assert collided.per_query == honest.per_query
    assert collided_mapped.per_query == honest_mapped.per_query
    # By hand: q1 maps to [c, a, a(x), c(b)] -> [c, a]; q2 to [c(b), a]: 2 rows collapse.
    assert collided_mapped.params["mapping"]["collapsed"] == 2
    assert collided_mapped.per_query["q1"]["R@2"] == 1.0
    assert collided_mapped.per_query["q2"]["R@2"] == 1.0
    run = Run.from_mapping({"q": ["a", "b", "c", "d"]})
    keys = run.keys()
    assert not tables.later_duplicates(run.qcodes, run.docids, keys, run.final_positions).any()


# -- TREC qrels and runs, read line by line -------------------------------------------------------


def test_qrels_report_every_defective_line(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        "qrels.txt",
        "1 0 a 1\n1 0 b\n# 1 0 c 9\n1 0 c x\n1 0 a 2\n1 0 d 1 extra\n\n2 Q0 \xe9 -1\n",
    )
    p = str(path)
    assert _errors(read_qrels, path) == [
        f"{p} line 2: expected 4 fields 'qid 0 docid grade', found 3; put one judgment per line",
        f"{p} line 4: grade 'x' is not an integer; use whole-number grades (-1 = pooled but "
        "unjudged)",
        f"{p} line 5: duplicate judgment for query '1', docid 'a' (first at line 1); keep one "
        "line per pair",
        f"{p} line 6: expected 4 fields 'qid 0 docid grade', found 5; put one judgment per line",
    ]
    bad_utf8 = tmp_path / "latin1.txt"
    bad_utf8.write_bytes(b"1 0 a 1\n1 0 caf\xe9 1\n\xff 0 b 1\n")
    assert _errors(read_qrels, bad_utf8) == [
        f"{bad_utf8} line 2: invalid UTF-8 (byte 0xe9 at column 4); save the file as UTF-8",
        f"{bad_utf8} line 3: invalid UTF-8 (byte 0xff at column 1); save the file as UTF-8",
    ]


def test_qrels_fast_and_careful_paths_read_the_same(tmp_path: Path) -> None:
    text = "q2 0 b 1\nq1 0 a 2\nq2 0 a -1\nq1 Q0 c 0\n"
    fast = read_qrels(_file(tmp_path, "fast.txt", text))
    careful = read_qrels(_file(tmp_path, "careful.txt", text.replace(" 0 a 2", "  0 a 2")))
    expected = {"q2": {"b": 1, "a": -1}, "q1": {"a": 2, "c": 0}}
    assert fast.to_mapping() == careful.to_mapping() == expected
    assert fast.qids == careful.qids == ("q2", "q1")
    assert fast.offsets.tolist() == careful.offsets.tolist() == [0, 2, 4]
    assert fast.grades.dtype == np.int64 and len(fast) == 4 and fast.source.endswith("fast.txt")
    # A '#' starting a query id is a comment line: the careful path handles it.
    commented = read_qrels(_file(tmp_path, "c.txt", "#q 0 a 1\nq 0 a 1\n"))
    assert commented.to_mapping() == {"q": {"a": 1}}


def test_trec_run_reports_every_defective_line(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        "run.trec",
        "1 Q0 a 1 2.0 t\n1 Q0 b 2\n1 Q0 c two 1.0 t\n1 Q0 d 4 high t\n1 Q0 e 5 nan t\n"
        "1 Q0 a 6 0.5 t\n",
    )
    p = str(path)
    assert _errors(read_run, path) == [
        f"{p} line 2: expected 6 fields 'qid Q0 docid rank score tag', found 4; put one ranked "
        "item per line",
        f"{p} line 3: rank 'two' is not an integer; the 4th field must be the rank (1, 2, ...)",
        f"{p} line 4: score 'high' is not a number; the 5th field must be the retrieval score",
        f"{p} line 5: score 'nan' is not a number; the 5th field must be the retrieval score",
    ]
    dup = _file(tmp_path, "dup.trec", "1 Q0 a 1 3 t\n1 Q0 b 2 2 t\n1 Q0 a 3 1 t\n2 Q0 c 1 1 t\n"
                "2 Q0 c 2 0 t\n")  # fmt: skip
    assert _errors(read_run, dup) == [
        f"{dup} line 3: duplicate docid 'a' for query '1' (first at line 1); pass --dedup "
        "first to keep the first occurrence",
        f"{dup} line 5: duplicate docid 'c' for query '2' (first at line 4); pass --dedup "
        "first to keep the first occurrence",
    ]
    kept = read_run(dup, dedup="first")
    assert kept.to_mapping() == {"1": ["a", "b"], "2": ["c"]} and kept.duplicates_removed == 2
    ranks = _file(tmp_path, "ranks.trec", "1 Q0 a 2 1 t\n1 Q0 b 2 2 t\n1 Q0 c 1 3 t\n"
                  "1 Q0 d 1 4 t\n")  # fmt: skip
    assert _errors(read_run, ranks, order="rank") == [
        # in rank order
        f"{ranks} line 4: rank 1 for query '1' repeats line 3; with --order rank every rank "
        "must be distinct within a query (or use --order score)",
        f"{ranks} line 2: rank 2 for query '1' repeats line 1; with --order rank every rank "
        "must be distinct within a query (or use --order score)",
    ]
    assert _errors(read_run, _file(tmp_path, "e.trec", "# none\n")) == [
        f"{tmp_path / 'e.trec'} line 1: file is empty (no data lines); expected lines "
        "'qid Q0 docid rank score tag'"
    ]


@pytest.mark.parametrize("sep", [" ", "\t"], ids=["space", "tab"])
def test_ids_that_look_like_nulls_or_quotes_are_read_as_written(tmp_path: Path, sep: str) -> None:
    """The fast (pyarrow) path must read every id as trec_eval does: quotes, backslashes
    and 'NA'/'null'/'' spellings are data."""
    ids = ["NA", "null", '"q"', "a\\b", "N/A", "#x"]
    qrels_text = "".join(f"{q}{sep}0{sep}{d}{sep}1\n" for q in ("NULL", "q1") for d in ids)
    run_text = "".join(
        f"{q}{sep}Q0{sep}{d}{sep}{r}{sep}{10 - r}{sep}t\n"
        for q in ("NULL", "q1")
        for r, d in enumerate(ids, start=1)
    )
    qrels = read_qrels(_file(tmp_path, "q.txt", qrels_text))
    run = read_run(_file(tmp_path, "r.trec", run_text))

    assert qrels.to_mapping() == {q: dict.fromkeys(ids, 1) for q in ("NULL", "q1")}
    assert run.to_mapping() == {q: ids for q in ("NULL", "q1")}


@pytest.mark.parametrize(
    "text",
    ["q 0  a 1\nq 0 b 1\n", "q\t0\ta\t1\t\nq\t0\tb\t1\n", "q 0 a 1\r\nq 0 b 1\r\n",
     "q 0 a 1\nq\t0 b 1\n", "q 0 a 1\nq 0 b\x0b1\n"],
    ids=["doubled-space", "trailing-tab", "crlf", "mixed", "vertical-tab"],
)  # fmt: skip
def test_irregular_separators_read_as_trec_eval_reads_them(tmp_path: Path, text: str) -> None:
    # trec_eval splits on any run of whitespace: both lines are two judgments of q.
    assert read_qrels(_file(tmp_path, "q.txt", text)).to_mapping() == {"q": {"a": 1, "b": 1}}
