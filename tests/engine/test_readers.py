"""Readers: every defect is reported with file, line, what is wrong and how to fix it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verity_eval import (
    EngineInputError,
    InvalidParameterError,
    read_mapping,
    read_qrels,
    read_run,
    read_statuses,
    readers,
)


def _file(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _errors(call, *args, **kwargs) -> list[str]:
    with pytest.raises(EngineInputError) as info:
        call(*args, **kwargs)
    assert isinstance(info.value, ValueError)
    return info.value.errors


# ------------------------------------------------------------------ qrels


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 0 d1 1\n1 0 d2\n", "line 2: expected 4 fields"),
        ("1 0 d1 1\n1 0 d2 high\n", "line 2: grade 'high' is not an integer"),
        ("1 0 d1 1\n1 0 d2 1.5\n", "line 2: grade '1.5' is not an integer"),
        (
            "1 0 d1 1\n# note\n1 0 d1 2\n",
            "line 3: duplicate judgment for query '1', docid 'd1' (first at line 1)",
        ),
        ("", "line 1: file is empty"),
        ("# only a comment\n\n", "line 1: file is empty"),
    ],
    ids=["field-count", "non-numeric-grade", "float-grade", "duplicate", "empty", "comments-only"],
)
def test_qrels_errors_name_file_and_line(tmp_path: Path, text: str, expected: str) -> None:
    path = _file(tmp_path, "qrels.txt", text)
    errors = _errors(read_qrels, path)
    assert len(errors) == 1
    assert errors[0].startswith(f"{path} ")
    assert expected in errors[0]


def test_bad_utf8_is_reported_with_its_line(tmp_path: Path) -> None:
    path = _file(tmp_path, "qrels.txt", b"1 0 d1 1\n1 0 d\xff2 1\n")
    (error,) = _errors(read_qrels, path)
    assert "line 2: invalid UTF-8" in error and "save the file as UTF-8" in error


def test_up_to_25_errors_are_collected(tmp_path: Path) -> None:
    path = _file(tmp_path, "qrels.txt", "".join(f"1 0 d{i} x\n" for i in range(40)))
    with pytest.raises(EngineInputError) as info:
        read_qrels(path)
    assert len(info.value.errors) == 25 and info.value.truncated
    assert "line 25:" in info.value.errors[-1]
    assert "stopped after 25 errors" in str(info.value)


def test_second_column_ignored_and_negative_grades_kept(tmp_path: Path) -> None:
    path = _file(tmp_path, "qrels.txt", "1 Q0 a 2\n1 0 b -1\n2 iter7 c 0\n")
    assert read_qrels(path).to_mapping() == {"1": {"a": 2, "b": -1}, "2": {"c": 0}}


# ------------------------------------------------------------------ TREC runs


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0\n", "line 2: expected 6 fields"),
        ("1 Q0 d1 1 2.0 t\n1 Q0 d2 2 high t\n", "line 2: score 'high' is not a number"),
        ("1 Q0 d1 1 2.0 t\n1 Q0 d2 two 1.0 t\n", "line 2: rank 'two' is not an integer"),
        ("1 Q0 d1 1 nan t\n", "line 1: score 'nan' is not a number"),
        ("", "line 1: file is empty"),
    ],
    ids=["field-count", "non-numeric-score", "non-numeric-rank", "nan-score", "empty"],
)
def test_run_errors_name_file_and_line(tmp_path: Path, text: str, expected: str) -> None:
    path = _file(tmp_path, "run.trec", text)
    (error,) = _errors(read_run, path)
    assert error.startswith(f"{path} ") and expected in error


def test_duplicate_docid_error_says_how_to_fix(tmp_path: Path) -> None:
    lines = [f"3 Q0 d{i} {i} {10 - i} t\n" for i in range(1, 14)] + ["3 Q0 d7 14 -1 t\n"]
    path = _file(tmp_path, "run.trec", "".join(lines))
    (error,) = _errors(read_run, path)
    assert error == (
        f"{path} line 14: duplicate docid 'd7' for query '3' (first at line 7); "
        "pass --dedup first to keep the first occurrence"
    )


def test_dedup_first_keeps_the_first_in_final_order(tmp_path: Path) -> None:
    # d1 appears twice; the copy with the higher score (line 3) ranks first and is kept.
    path = _file(tmp_path, "run.trec", "q Q0 d1 1 1.0 t\nq Q0 d2 2 2.0 t\nq Q0 d1 3 3.0 t\n")
    run = read_run(path, dedup="first")
    assert run.ranking("q") == ["d1", "d2"] and run.duplicates_removed == 1


def test_score_order_breaks_ties_by_docid_descending_byte_order(tmp_path: Path) -> None:
    # Equal scores: trec_eval orders docids by strcmp descending: "b" > "a" > "B" > "A10" >
    # "A1"; the rank column is ignored. Extra trailing fields are ignored too.
    text = "".join(
        f"q Q0 {d} {r} {s} t extra junk\n"
        for d, r, s in [
            ("A1", 1, 1.0),
            ("b", 2, 1.0),
            ("A10", 3, 1.0),
            ("B", 4, 1.0),
            ("a", 5, 1.0),
            ("top", 6, 1.5),
            ("low", 7, -2e-9),
        ]
    )
    path = _file(tmp_path, "run.trec", text)
    assert read_run(path).ranking("q") == ["top", "b", "a", "B", "A10", "A1", "low"]


def test_scores_compare_as_64_bit_floats(tmp_path: Path) -> None:
    # 1.00000001 and 1.00000002 are equal as 32-bit floats, distinct as 64-bit.
    path = _file(tmp_path, "run.trec", "q Q0 a 1 1.00000001 t\nq Q0 b 2 1.00000002 t\n")
    assert read_run(path).ranking("q") == ["b", "a"]


def test_rank_order_uses_the_rank_column(tmp_path: Path) -> None:
    path = _file(tmp_path, "run.trec", "q Q0 a 2 9.0 t\nq Q0 b 1 1.0 t\nq Q0 c 3 5.0 t\n")
    run = read_run(path, order="rank")
    assert run.ranking("q") == ["b", "a", "c"] and run.order == "rank"
    assert read_run(path).ranking("q") == ["a", "c", "b"]


def test_rank_order_refuses_equal_ranks(tmp_path: Path) -> None:
    path = _file(tmp_path, "run.trec", "q Q0 a 1 9.0 t\nq Q0 b 2 1.0 t\nq Q0 c 1 5.0 t\n")
    (error,) = _errors(read_run, path, order="rank")
    assert "line 3: rank 1 for query 'q' repeats line 1" in error and "--order score" in error


def test_irregular_whitespace_and_comments(tmp_path: Path) -> None:
    text = "# a comment\n1\tQ0  d#1\t1   2.5 tag\n\n  1 Q0 d2 2 1.5 tag  \r\n"
    run = read_run(_file(tmp_path, "run.trec", text))
    assert run.ranking("1") == ["d#1", "d2"]


@pytest.mark.parametrize("sep", [" ", "\t"], ids=["space", "tab"])
def test_fast_and_careful_readers_agree(tmp_path: Path, sep: str) -> None:
    rng = np.random.default_rng(3)
    lines = []
    for q in range(20):
        docs = rng.choice(200, size=50, replace=False)
        for rank, d in enumerate(docs, start=1):
            score = float(rng.choice([0.5, 1.0, 2.0])) if q % 2 else float(rng.random())
            lines.append(sep.join([f"q{q}", "Q0", f"d{d}", str(rank), repr(score), "t"]))
    path = _file(tmp_path, "run.trec", "\n".join(lines) + "\n")
    assert readers._sniff_delimiter(path, 6) == sep
    fast = readers._read_trec_run_fast(path, str(path), sep, order="score", dedup="error")
    careful = readers._read_trec_run_slow(path, str(path), order="score", dedup="error")
    assert fast is not None
    assert fast.to_mapping() == careful.to_mapping()


def test_fast_reader_defers_to_careful_one_on_duplicates(tmp_path: Path) -> None:
    path = _file(tmp_path, "run.trec", "q Q0 a 1 2.0 t\nq Q0 b 2 1.0 t\nq Q0 a 3 0.5 t\n")
    assert readers._read_trec_run_fast(path, "x", " ", order="score", dedup="error") is None
    fast = readers._read_trec_run_fast(path, "x", " ", order="score", dedup="first")
    assert fast is not None and fast.ranking("q") == ["a", "b"]


def test_stage_is_refused_for_trec_runs(tmp_path: Path) -> None:
    path = _file(tmp_path, "run.trec", "q Q0 a 1 2.0 t\n")
    with pytest.raises(InvalidParameterError, match="stages exist in JSON Lines runs only"):
        read_run(path, stage="context")


# ------------------------------------------------------------------ JSON Lines runs

JSONL = (
    '{"query": "q1", "stages": {"candidates": ["a", "b", "c"], "context": ["b"]}}\n'
    '{"query": "q2", "stages": {"candidates": ["d"], "context": []}, "abstain": true}\n'
)


def test_jsonl_multi_stage_needs_a_stage(tmp_path: Path) -> None:
    path = _file(tmp_path, "run.jsonl", JSONL)
    (error,) = _errors(read_run, path)
    assert "several stages (candidates, context)" in error and "--stage" in error
    run = read_run(path, stage="context")
    assert run.to_mapping() == {"q1": ["b"], "q2": []}
    assert run.stage == "context" and run.order == "list" and run.abstained == {"q2"}
    (error,) = _errors(read_run, path, stage="reranked")
    assert "no stage 'reranked'" in error and "candidates, context" in error


def test_jsonl_single_ranking_is_stage_default(tmp_path: Path) -> None:
    path = _file(tmp_path, "run.jsonl", '{"query": "q1", "ranking": ["z", "a"]}\n')
    run = read_run(path)
    assert run.stage == "default" and run.ranking("q1") == ["z", "a"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"query": "q1", "ranking": ["a", "b", "a"]}\n', "line 1: duplicate id 'a' at position 3"),
        (
            '{"query": "q1", "ranking": ["a"]}\n{"query": "q1", "ranking": ["b"]}\n',
            "line 2: query 'q1' already given at line 1",
        ),
        ('{"query": "q1", "ranking": ["a", 3]}\n', "position 2: 3 is not an item id"),
        ('{"query": "q1", "ranking": ["a"]\n', "line 1: not valid JSON"),
        ('{"ranking": ["a"]}\n', "line 1: 'query' must be a non-empty string"),
    ],
    ids=["duplicate-id", "duplicate-query", "non-string-id", "bad-json", "no-query"],
)
def test_jsonl_errors(tmp_path: Path, text: str, expected: str) -> None:
    path = _file(tmp_path, "run.jsonl", text)
    (error,) = _errors(read_run, path)
    assert error.startswith(f"{path} ") and expected in error


# ------------------------------------------------------------------ statuses, mapping


def test_statuses_file(tmp_path: Path) -> None:
    path = _file(
        tmp_path,
        "statuses.jsonl",
        '{"query": "q1", "status": "relevant", "evidence": [["a", "b"], ["c"]]}\n'
        '{"query": "q2", "status": "no_answer"}\n',
    )
    st = read_statuses(path)
    assert st.statuses == {"q1": "relevant", "q2": "no_answer"}
    assert st.evidence == {"q1": [["a", "b"], ["c"]]}
    bad = _file(tmp_path, "bad.jsonl", '{"query": "q1", "status": "maybe"}\n')
    (error,) = _errors(read_statuses, bad)
    assert "line 1: status 'maybe' is not one of relevant, no_answer, unreviewed" in error


def test_mapping_file(tmp_path: Path) -> None:
    path = _file(tmp_path, "map.tsv", "# fine\tcoarse\nc1\tD1\nc2\tD1\n")
    assert read_mapping(path) == {"c1": "D1", "c2": "D1"}
    bad = _file(tmp_path, "bad.tsv", "c1\tD1\nc1\tD2\nc3 D3\n")
    errors = _errors(read_mapping, bad)
    assert "line 2: fine id 'c1' already mapped at line 1" in errors[0]
    assert "line 3: expected 'fine<TAB>coarse'" in errors[1]
