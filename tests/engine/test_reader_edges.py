"""The wording of reader errors (file, line, what is wrong, what to do) at their edges: bytes
that are not UTF-8 inside a number, several defects on one line, the 25-error limit, the
format detection, unit maps and JSON Lines details."""

from __future__ import annotations

from pathlib import Path

import pytest

from verity_eval import (
    EngineInputError,
    InvalidParameterError,
    read_mapping,
    read_qrels,
    read_run,
    read_run_stages,
    read_statuses,
    score_query,
)
from verity_eval.errors import MAX_ERRORS, ErrorCollector

STOPPED = f"(stopped after {MAX_ERRORS} errors)"


def _file(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _utf8(path: Path, line: int, byte: int, column: int) -> str:
    where = f"{path} line {line}"
    return f"{where}: invalid UTF-8 (byte 0x{byte:02x} at column {column}); save the file as UTF-8"


def _error(call, *args, **kwargs) -> EngineInputError:
    with pytest.raises(EngineInputError) as info:
        call(*args, **kwargs)
    return info.value


# -- the error type and the collector ------------------------------------------------------------


def test_an_input_error_joins_its_lines_and_says_when_it_stopped() -> None:
    plain = EngineInputError(["a.txt line 1: x", "a.txt line 2: y"])
    assert str(plain) == "a.txt line 1: x\na.txt line 2: y"
    assert plain.errors == ["a.txt line 1: x", "a.txt line 2: y"] and plain.truncated is False
    stopped = EngineInputError(["a", "b"], truncated=True)
    assert str(stopped) == "a\nb\n(stopped after 2 errors)" and stopped.truncated is True


def test_the_collector_keeps_the_first_errors_up_to_its_limit() -> None:
    errors = ErrorCollector(limit=2)
    errors.add("one")
    errors.add("two")
    assert errors.full and errors.truncated is False
    errors.add("three")
    assert errors.errors == ["one", "two"] and errors.truncated is True
    with pytest.raises(EngineInputError) as info:
        errors.raise_if_any()
    assert str(info.value) == "one\ntwo\n(stopped after 2 errors)"
    assert ErrorCollector().limit == MAX_ERRORS == 25
    ErrorCollector().raise_if_any()  # nothing collected: nothing raised


@pytest.mark.parametrize(
    ("reader", "name", "line"),
    [
        (read_run, "run.trec", "q Q0 a x 1 t\n"),
        (read_qrels, "qrels.txt", "q 0 a x\n"),
        (read_run, "run.jsonl", "[]\n"),
        (read_statuses, "s.jsonl", "{\n"),
        (read_mapping, "m.tsv", "a\n"),
    ],
    ids=["trec-run", "qrels", "jsonl-run", "statuses", "mapping"],
)
def test_every_reader_stops_after_25_errors_and_says_so(
    tmp_path: Path, reader, name: str, line: str
) -> None:
    error = _error(reader, _file(tmp_path, name, line * 30))
    assert len(error.errors) == 25 and error.truncated is True
    assert error.errors[-1].startswith(f"{tmp_path / name} line 25: ")
    assert str(error).endswith("\n" + STOPPED)


# -- several defects on one line: one error, the first; the lines after it still read ---------


def test_numbers_that_are_not_utf8_are_shown_with_a_replacement_character(tmp_path: Path) -> None:
    qrels = _file(tmp_path, "qrels.txt", b"q 0 a 1\xff\n")
    assert _error(read_qrels, qrels).errors == [
        f"{qrels} line 1: grade '1\ufffd' is not an integer; use whole-number grades "
        "(-1 = pooled but unjudged)"
    ]
    run = _file(tmp_path, "run.trec", b"q Q0 a 1\xff 2 t\nq Q0 b 2 2\xfe t\n")
    assert _error(read_run, run).errors == [
        f"{run} line 1: rank '1\ufffd' is not an integer; the 4th field must be the rank "
        "(1, 2, ...)",
        f"{run} line 2: score '2\ufffd' is not a number; the 5th field must be the retrieval score",
    ]


def test_a_line_with_several_defects_gets_one_error(tmp_path: Path) -> None:
    qrels = _file(tmp_path, "qrels.txt", b"q 0 \xe9 x\nq 0 a y\n")
    assert _error(read_qrels, qrels).errors == [
        _utf8(qrels, 1, 0xE9, 1),
        f"{qrels} line 2: grade 'y' is not an integer; use whole-number grades (-1 = pooled but "
        "unjudged)",
    ]
    run = _file(tmp_path, "run.trec", b"\xff Q0 \xfe 1 2 t\nq Q0 \xe9 x 2 t\nq Q0 a y 2 t\n")
    assert _error(read_run, run).errors == [
        _utf8(run, 1, 0xFF, 1),
        _utf8(run, 2, 0xE9, 1),
        f"{run} line 3: rank 'y' is not an integer; the 4th field must be the rank (1, 2, ...)",
    ]


def test_every_duplicate_of_a_query_is_reported(tmp_path: Path) -> None:
    run = _file(tmp_path, "run.trec", "q Q0 a 1 3 t extra\nq Q0 a 2 2 t\nq Q0 b 3 1 t\n"
                "q Q0 b 4 0 t\n")  # fmt: skip
    fix = "pass --dedup first to keep the first occurrence"
    assert _error(read_run, run).errors == [
        f"{run} line 2: duplicate docid 'a' for query 'q' (first at line 1); {fix}",
        f"{run} line 4: duplicate docid 'b' for query 'q' (first at line 3); {fix}",
    ]


def test_empty_trec_files_say_what_a_line_looks_like(tmp_path: Path) -> None:
    qrels = _file(tmp_path, "qrels.txt", "# nothing\n\n")
    assert _error(read_qrels, qrels).errors == [
        f"{qrels} line 1: file is empty (no data lines); expected lines 'qid 0 docid grade'"
    ]
    careful = read_qrels(_file(tmp_path, "c.txt", "q  0 a 1\n"))  # the careful path
    assert careful.to_mapping() == {"q": {"a": 1}} and careful.source == str(tmp_path / "c.txt")


# -- run formats and stages ------------------------------------------------------------------


def test_read_run_parameters_are_refused_in_words(tmp_path: Path) -> None:
    trec = _file(tmp_path, "r.trec", "q Q0 a 1 1.0 t\n")
    with pytest.raises(InvalidParameterError) as info:
        read_run(trec, dedup="last")
    assert str(info.value) == "dedup must be one of error, first"
    with pytest.raises(InvalidParameterError) as info:
        read_run(trec, stage="context")
    assert str(info.value) == (
        f"{trec}: stage 'context' given, but a TREC run has a single stage; stages exist in "
        "JSON Lines runs only"
    )


@pytest.mark.parametrize("name", ["run.json", "run.ndjson", "run.JSONL", "RUN.Json"])
def test_a_json_lines_name_is_enough_to_read_it_as_json_lines(tmp_path: Path, name: str) -> None:
    # The first line is a comment, so only the name tells the format.
    path = _file(tmp_path, name, '# made by hand\n{"query": "q", "ranking": ["a", "b"]}\n')
    run = read_run(path)
    assert run.to_mapping() == {"q": ["a", "b"]} and run.order == "list"


def test_trec_stages_follow_the_format_and_dedup_given(tmp_path: Path) -> None:
    # Named .json, but the caller says it is TREC.
    path = _file(tmp_path, "run.json", "q Q0 a 1 3 t\nq Q0 b 2 2 t\nq Q0 a 3 1 t\n")
    (stage,) = read_run_stages(path, fmt="trec", dedup="first")
    assert stage.to_mapping() == {"q": ["a", "b"]} and stage.duplicates_removed == 1
    assert (stage.stage, stage.dedup, stage.order) == ("default", "first", "score")


def test_json_lines_stage_errors_name_the_file(tmp_path: Path) -> None:
    path = _file(tmp_path, "run.jsonl", '{"query": "q", "stages": {"a": ["x"], "b": ["y"]}}\n'
                 '{"query": "r", "stages": {"a": ["x"]}}\n{"query": 3}\n')  # fmt: skip
    assert _error(read_run_stages, path).errors == [
        f"{path} line 3: 'query' must be a non-empty string"
    ]
    path.write_text('{"query": "q", "stages": {"a": ["x"], "c": ["y"]}}\n'
                    '{"query": "r", "stages": {"b": ["x"]}}\n')  # fmt: skip
    with pytest.raises(EngineInputError) as info:
        read_run_stages(path)
    assert info.value.errors == [
        f"{path} line 2: query 'r' has no stage 'a' (it has b); give every query every stage, "
        "an empty list if need be"
    ]
    assert _error(read_run, path, stage="b").errors == [
        f"{path} line 1: query 'q' has no stage 'b' (it has a, c); give every query every "
        "stage, an empty list if need be"
    ]


def test_a_run_with_one_named_stage_is_read_without_naming_it(tmp_path: Path) -> None:
    path = _file(tmp_path, "run.jsonl", '{"query": "q", "stages": {"candidates": ["a"]}}\n')
    run = read_run(path)
    assert run.stage == "candidates" and run.stages == ("candidates",)
    assert run.to_mapping() == {"q": ["a"]}


def test_a_run_where_every_query_abstains_has_one_stage_named_default(tmp_path: Path) -> None:
    path = _file(tmp_path, "run.jsonl", '{"query": "q", "abstain": true}\n'
                 '{"query": "r", "abstain": true}\n')  # fmt: skip
    run = read_run(path)
    assert run.stage == "default" and run.to_mapping() == {"q": [], "r": []}
    assert run.abstained == frozenset({"q", "r"})
    assert _error(read_run, path, stage="context").errors == [
        f"{path}: no stage 'context' in the run; its stages are (none)"
    ]


def test_json_lines_skip_blank_and_indented_comment_lines_anywhere(tmp_path: Path) -> None:
    path = _file(tmp_path, "run.jsonl", '{"query": "q", "ranking": ["a"]}\n\n   # note\n'
                 '{"query": "r", "ranking": ["b"]}\n')  # fmt: skip
    assert read_run(path).to_mapping() == {"q": ["a"], "r": ["b"]}


def test_json_lines_report_bad_bytes_and_go_on(tmp_path: Path) -> None:
    path = _file(tmp_path, "s.jsonl", b'{"query": "\xe9"}\n{"query" 1}\n')
    first, second = _error(read_statuses, path).errors
    assert first == _utf8(path, 1, 0xE9, 12)
    assert second == (
        f"{path} line 2: not valid JSON (Expecting ':' delimiter at column 10); write one JSON "
        "object per line"
    )


# -- unit maps -------------------------------------------------------------------------------


def test_unit_map_lines_at_their_edges(tmp_path: Path) -> None:
    ok = _file(tmp_path, "m.tsv", "  # indented comment\na\tBOX\r\nb\tX\n")
    assert read_mapping(ok) == {"a": "BOX", "b": "X"}
    bad = _file(tmp_path, "bad.tsv", b"a\tb\t\n\xff\tb\nc\t \n \td\n")
    fix = "separate the two ids with one tab"
    assert _error(read_mapping, bad).errors == [
        f"{bad} line 1: expected 'fine<TAB>coarse', found 3 tab-separated field(s); {fix}",
        _utf8(bad, 2, 0xFF, 1),
        f"{bad} line 3: expected 'fine<TAB>coarse', found 2 tab-separated field(s); {fix}",
        f"{bad} line 4: expected 'fine<TAB>coarse', found 2 tab-separated field(s); {fix}",
    ]


# -- the founding text's scorer --------------------------------------------------------------


def test_score_query_names_the_repeated_id() -> None:
    with pytest.raises(EngineInputError) as info:
        score_query(["a", "b", "b"], {"a"}, 2)
    assert info.value.errors == [
        "duplicate id 'b' in the ranking; deduplicate stable ids before scoring"
    ]


@pytest.mark.parametrize("grade", ["32768", "99999999999999999999", "-40000"])
@pytest.mark.parametrize("sep", [" ", "\t"], ids=["careful path", "fast path"])
def test_engine_qrels_refuse_a_grade_past_the_rule(tmp_path, grade, sep):
    # verity_limits.grade_problem, the one grade rule (issue 23, item 12).
    qrels = tmp_path / "q.txt"
    qrels.write_text(
        sep.join(["q", "0", "a", "1"]) + "\n" + sep.join(["q", "0", "b", grade]) + "\n"
    )
    with pytest.raises(EngineInputError) as refused:
        read_qrels(qrels)
    assert (
        f"{qrels} line 2: grade {grade} is out of range; grades are between -32767 and 32767"
        in (str(refused.value))
    )
