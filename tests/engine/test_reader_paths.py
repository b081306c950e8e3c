"""The two ways a TREC file is read.

The fast (pyarrow) path must be taken on every regular file, and must read it exactly as
the careful (line-by-line) reader does; every irregular file must go to the careful
reader, which splits on runs of whitespace as trec_eval does. Under ``fast_only`` the
careful readers fail, so a test that passes there was read by the fast path; ``either``
runs a test once that way and once with the fast path switched off, so both paths are
held to the same expected values, attribute by attribute.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from verity_eval import EngineInputError, read_qrels, read_run
from verity_eval.readers import qrels as qrels_reader
from verity_eval.readers import runs as run_reader


def _file(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError("the careful reader was used on a file the fast path should read")


def _refuse_careful(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_reader, "_read_trec_run_slow", _refuse)
    monkeypatch.setattr(qrels_reader, "_read_qrels_slow", _refuse)


@pytest.fixture
def fast_only(monkeypatch: pytest.MonkeyPatch) -> None:
    _refuse_careful(monkeypatch)


@pytest.fixture(params=["fast", "careful"])
def either(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fast":
        _refuse_careful(monkeypatch)
    else:
        for module in (run_reader, qrels_reader):
            monkeypatch.setattr(module, "_sniff_delimiter", lambda path, fields: None)
    return request.param


def _errors(call, *args, **kwargs) -> list[str]:
    with pytest.raises(EngineInputError) as info:
        call(*args, **kwargs)
    return info.value.errors


# -- the same values on both paths ------------------------------------------------------------


@pytest.mark.parametrize("sep", [" ", "\t"], ids=["space", "tab"])
def test_qrels_read_the_same_on_both_paths(tmp_path: Path, either: str, sep: str) -> None:
    rows = [("q2", "0", "b", "1"), ("q1", "0", "a", "2"), ("q2", "0", "a", "-1"),
            ("q1", "Q0", "c", "0"), ("q3", "0", "x", "3")]  # fmt: skip
    path = _file(tmp_path, "qrels.txt", "".join(sep.join(r) + "\n" for r in rows))
    qrels = read_qrels(path)
    assert qrels.to_mapping() == {"q2": {"b": 1, "a": -1}, "q1": {"a": 2, "c": 0}, "q3": {"x": 3}}
    assert qrels.qids == ("q2", "q1", "q3")
    assert qrels.offsets.tolist() == [0, 2, 4, 5]
    assert qrels.grades.dtype == np.int64 and len(qrels) == 5
    assert qrels.source == str(path)
    one = read_qrels(_file(tmp_path, "one.txt", f"q{sep}0{sep}a{sep}7\n"))
    assert one.to_mapping() == {"q": {"a": 7}} and one.offsets.tolist() == [0, 1]


@pytest.mark.parametrize("sep", [" ", "\t"], ids=["space", "tab"])
def test_runs_in_score_order_read_the_same_on_both_paths(
    tmp_path: Path, either: str, sep: str
) -> None:
    rows = [
        ("q1", "a", 1, "1.0"),
        ("q1", "c", 2, "2.0"),
        ("q1", "b", 3, "2.0"),  # ties with c: docid descending puts c first
        ("q2", "z", 1, "0.5"),
        ("q2", "y", 2, "0.5"),
        ("q2", "x", 3, "0.75"),
        ("q1", "d", 4, "-3e-2"),  # q1 again after q2: rows of a query need not be together
    ]
    text = "".join(sep.join([q, "Q0", d, str(r), s, "tag"]) + "\n" for q, d, r, s in rows)
    run = read_run(_file(tmp_path, "run.trec", text))
    assert run.to_mapping() == {"q1": ["c", "b", "a", "d"], "q2": ["x", "z", "y"]}
    assert run.qids == ("q1", "q2")
    assert (run.order, run.dedup, run.stage, run.duplicates_removed) == ("score", "error", None, 0)
    assert run.source == str(tmp_path / "run.trec")
    one = read_run(_file(tmp_path, "one.trec", sep.join(["q", "Q0", "a", "1", "1", "t"]) + "\n"))
    assert one.to_mapping() == {"q": ["a"]}


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        # Already in trec_eval's order (query by query, scores falling): kept as read.
        ([("q1", "a", 3), ("q1", "b", 2), ("q2", "c", 9), ("q2", "d", 1)],
         {"q1": ["a", "b"], "q2": ["c", "d"]}),
        # Falling scores, but the queries interleave: must still be grouped.
        ([("q1", "a", 3), ("q2", "b", 2), ("q1", "c", 1)], {"q1": ["a", "c"], "q2": ["b"]}),
        # The first query in order, the second one rising.
        ([("q1", "a", 2), ("q1", "b", 1), ("q2", "c", 1), ("q2", "d", 2)],
         {"q1": ["a", "b"], "q2": ["d", "c"]}),
        # Equal scores: the docid order decides (descending), not the file order.
        ([("q", "a", 1), ("q", "b", 1)], {"q": ["b", "a"]}),
    ],
    ids=["sorted", "interleaved", "second-query-rising", "tie"],
)  # fmt: skip
def test_rows_already_in_order_or_nearly_so(
    tmp_path: Path, either: str, rows: list, expected: dict
) -> None:
    text = "".join(f"{q} Q0 {d} {i} {s} t\n" for i, (q, d, s) in enumerate(rows, start=1))
    assert read_run(_file(tmp_path, "run.trec", text)).to_mapping() == expected


def test_qrels_keep_the_files_order_within_a_query_on_both_paths(
    tmp_path: Path, either: str
) -> None:
    # 300 interleaved lines: numpy's default sort is not stable beyond a handful of equal
    # keys, so only a stable grouping keeps each query's docids in file order.
    rows = [(f"q{i % 3}", f"d{(i * 7919) % 1000:03d}") for i in range(300)]
    path = _file(tmp_path, "qrels.txt", "".join(f"{q} 0 {d} 1\n" for q, d in rows))
    qrels = read_qrels(path)
    assert qrels.qids == ("q0", "q1", "q2")
    assert qrels.docids.to_pylist() == [d for q in ("q0", "q1", "q2") for r, d in rows if r == q]
    assert qrels.offsets.tolist() == [0, 100, 200, 300]


def test_a_presorted_run_with_ties_reads_as_trec_eval_orders_it(
    tmp_path: Path, either: str
) -> None:
    # Rows query by query, scores never rising: only ties (equal query and score) can be
    # out of trec_eval's order, which breaks them by docid descending. Ties at the start,
    # middle and end of a query, two ties in a row, and one score shared across queries
    # (a different query: not a tie).
    rows = [
        ("q1", "a", "9"), ("q1", "c", "9"), ("q1", "b", "9"),
        ("q1", "x", "5"),
        ("q1", "d", "4"), ("q1", "f", "4"),
        ("q1", "e", "3"), ("q1", "g", "3"),
        ("q2", "m", "3"), ("q2", "k", "3"), ("q2", "z", "2"),
        ("q3", "p", "1"),
        ("q4", "s", "1"), ("q4", "t", "0"), ("q4", "u", "0"),
    ]  # fmt: skip
    text = "".join(f"{q} Q0 {d} {i} {s} t\n" for i, (q, d, s) in enumerate(rows, start=1))
    run = read_run(_file(tmp_path, "run.trec", text))
    assert run.to_mapping() == {
        "q1": ["c", "b", "a", "x", "f", "d", "g", "e"],
        "q2": ["m", "k", "z"],
        "q3": ["p"],
        "q4": ["s", "u", "t"],
    }
    assert run.offsets.tolist() == [0, 8, 11, 12, 15]


def test_runs_in_rank_order_read_the_same_on_both_paths(tmp_path: Path, either: str) -> None:
    text = (
        "q1 Q0 a 3 9 t\nq1 Q0 b 1 1 t\nq2 Q0 c 5 0 t\nq2 Q0 d 2 0 t\nq1 Q0 e 2 5 t\n"
        "q3 Q0 x 5 1 t\nq4 Q0 y 3 1 t\nq4 Q0 z 5 2 t\n"  # the same ranks in other queries
    )
    run = read_run(_file(tmp_path, "run.trec", text), order="rank")
    assert run.to_mapping() == {"q1": ["b", "e", "a"], "q2": ["d", "c"], "q3": ["x"],
                                "q4": ["y", "z"]}  # fmt: skip
    assert (run.order, run.dedup, run.duplicates_removed) == ("rank", "error", 0)
    # The first query's best rank (5) recurs in a later query after another rank.
    again = read_run(_file(tmp_path, "again.trec", "p Q0 x 5 1 t\nr Q0 y 3 1 t\nr Q0 z 5 2 t\n"),
                     order="rank")  # fmt: skip
    assert again.to_mapping() == {"p": ["x"], "r": ["y", "z"]}


def test_dedup_first_reads_the_same_on_both_paths(tmp_path: Path, either: str) -> None:
    text = (
        "q Q0 a 1 3 t\nq Q0 b 2 2 t\nq Q0 a 3 1 t\nq Q0 c 4 0.5 t\nq Q0 b 5 0.1 t\n"
        "r Q0 a 1 1 t\nr Q0 e 2 0 t\n"
    )
    run = read_run(_file(tmp_path, "run.trec", text), dedup="first")
    assert run.to_mapping() == {"q": ["a", "b", "c"], "r": ["a", "e"]}
    assert (run.order, run.dedup, run.duplicates_removed) == ("score", "first", 2)
    assert run.source == str(tmp_path / "run.trec")
    # The same id repeated in two queries: each query keeps its own first copy.
    text = "q Q0 a 1 3 t\nq Q0 b 2 2 t\nq Q0 a 3 1 t\nr Q0 a 1 3 t\nr Q0 e 2 2 t\nr Q0 a 3 1 t\n"
    twice = read_run(_file(tmp_path, "twice.trec", text), dedup="first")
    assert twice.to_mapping() == {"q": ["a", "b"], "r": ["a", "e"]}
    assert twice.duplicates_removed == 2


# -- irregular files: the careful reader reads them as trec_eval does --------------------------


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("q 0 a 1\rq 0 b 1\n", "line 1: expected 4 fields 'qid 0 docid grade', found 8"),
        ("q 0 c 1\nq 0 a 1\rq 0 b 1\n", "line 2: expected 4 fields 'qid 0 docid grade', found 8"),
        ("q\t0\ta\t1\nq\t0\tb c\t1\n", "line 2: expected 4 fields 'qid 0 docid grade', found 5"),
        ("q 0 a 1\nq 0 b\tc 1\n", "line 2: expected 4 fields 'qid 0 docid grade', found 5"),
        ("q 0 a 1\nq 0 b\x0bc 1\n", "line 2: expected 4 fields 'qid 0 docid grade', found 5"),
        ("q 0 a 1\nq 0 b\x0cc 1\n", "line 2: expected 4 fields 'qid 0 docid grade', found 5"),
        ("q 0 a 1\n 0 b 1\n", "line 2: expected 4 fields 'qid 0 docid grade', found 3"),
        ("q 0 a 1\nq  b 1\n", "line 2: expected 4 fields 'qid 0 docid grade', found 3"),
        ("q 0 a 1\nq 0  1\n", "line 2: expected 4 fields 'qid 0 docid grade', found 3"),
    ],
    ids=["lone-cr", "lone-cr-later", "space-in-tab-file", "tab-in-space-file", "vertical-tab",
         "form-feed", "empty-qid", "empty-second-field", "empty-docid"],
)  # fmt: skip
def test_qrels_separators_that_only_trec_eval_splits_on(
    tmp_path: Path, text: str, found: str
) -> None:
    path = _file(tmp_path, "qrels.txt", text)
    assert _errors(read_qrels, path) == [f"{path} {found}; put one judgment per line"]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("q Q0 a 1 2 t\n Q0 b 2 1 t\n", "line 2: expected 6 fields 'qid Q0 docid rank score tag', "
         "found 5"),
        ("q Q0 a 1 2 t\nq  b 2 1 t\n", "line 2: expected 6 fields 'qid Q0 docid rank score tag', "
         "found 5"),
        ("q Q0 a 1 2 t\nq Q0  2 1 t\n", "line 2: expected 6 fields 'qid Q0 docid rank score tag', "
         "found 5"),
        ("q Q0 a 1 2 t\nq Q0 b 2 1 \n", "line 2: expected 6 fields 'qid Q0 docid rank score tag', "
         "found 5"),
        ("q\tQ0\ta\t1\t2\tt\nq\tQ0\tb c\t2\t1\tt\n", "line 2: rank 'c' is not an integer"),
        ("q Q0 a 1 2 t\nq Q0 b 2 1_0 t\n", "line 2: score '1_0' is not a number"),
    ],
    ids=["empty-qid", "empty-q0", "empty-docid", "empty-tag", "space-in-tab-file",
         "underscore-in-score"],
)  # fmt: skip
def test_run_lines_that_only_the_careful_reader_reads_right(
    tmp_path: Path, text: str, found: str
) -> None:
    path = _file(tmp_path, "run.trec", text)
    (error,) = _errors(read_run, path)
    assert error.startswith(f"{path} {found}")


def test_whitespace_that_pyarrow_would_keep_is_a_separator(tmp_path: Path) -> None:
    # A lone CR is whitespace inside a line: the second record is trailing fields, ignored.
    run = read_run(_file(tmp_path, "cr.trec", "q Q0 a 1 2 t\rq Q0 b 2 1 t\n"))
    assert run.to_mapping() == {"q": ["a"]}
    # Leading whitespace that trec_eval skips is not part of the query id.
    for lead in ("\x0b", "\x0c"):
        qrels = read_qrels(_file(tmp_path, "lead.txt", f"{lead}q 0 a 1\nq 0 b 2\n"))
        assert qrels.to_mapping() == {"q": {"a": 1, "b": 2}}
        run = read_run(_file(tmp_path, "lead.trec", f"{lead}q Q0 a 1 2 t\nq Q0 b 2 1 t\n"))
        assert run.to_mapping() == {"q": ["a", "b"]}


def test_a_hash_starting_a_later_line_is_a_comment(tmp_path: Path) -> None:
    run = read_run(_file(tmp_path, "run.trec", "q Q0 a 1 2 t\n#c Q0 b 2 1 t\nq Q0 c 3 0 t\n"))
    assert run.to_mapping() == {"q": ["a", "c"]}
    qrels = read_qrels(_file(tmp_path, "qrels.txt", "q 0 a 1\n#c 0 b 1\nq 0 c 2\n"))
    assert qrels.to_mapping() == {"q": {"a": 1, "c": 2}}


def test_a_judgment_listed_twice_in_a_regular_file_is_reported(tmp_path: Path) -> None:
    path = _file(tmp_path, "qrels.txt", "q 0 a 1\nq 0 b 1\nr 0 a 1\nq 0 a 2\n")
    assert _errors(read_qrels, path) == [
        f"{path} line 4: duplicate judgment for query 'q', docid 'a' (first at line 1); keep one "
        "line per pair"
    ]


def test_equal_ranks_are_refused_in_any_query(tmp_path: Path) -> None:
    path = _file(tmp_path, "run.trec", "q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\nq2 Q0 c 1 2 t\n"
                 "q2 Q0 d 1 1 t\n")  # fmt: skip
    assert _errors(read_run, path, order="rank") == [
        f"{path} line 4: rank 1 for query 'q2' repeats line 3; with --order rank every rank "
        "must be distinct within a query (or use --order score)"
    ]


def test_numeric_looking_ids_stay_strings_on_the_fast_path(tmp_path: Path, fast_only) -> None:
    qrels = read_qrels(_file(tmp_path, "qrels.txt", "007 0 0042 1\n007 0 1e3 2\n10 0 0042 0\n"))
    assert qrels.to_mapping() == {"007": {"0042": 1, "1e3": 2}, "10": {"0042": 0}}
    run = read_run(_file(tmp_path, "run.trec", "007 0 0042 1 2 1\n007 0 1e3 2 1 1\n"))
    assert run.to_mapping() == {"007": ["0042", "1e3"]}


def test_query_ids_are_coded_in_first_seen_order_from_any_column() -> None:
    from verity_eval.readers.common import _DICT, _encode_qids

    plain = pa.chunked_array([pa.array(["b", "a"]), pa.array(["a", "c"])])
    encoded = pa.chunked_array([c.dictionary_encode() for c in plain.chunks])
    for column in (plain, encoded):
        qids, codes = _encode_qids(column)
        assert qids == ["b", "a", "c"] and codes.tolist() == [0, 1, 1, 2]
        assert codes.dtype == np.int32
    qids, codes = _encode_qids(pa.chunked_array([], type=_DICT))
    assert qids == [] and codes.size == 0 and codes.dtype == np.int32


def test_the_format_is_told_from_the_first_4_kib(tmp_path: Path) -> None:
    """A run is JSON Lines when its name says so or its first non-blank byte within the first
    4 KiB is '{'; past that, the file is taken as TREC (name it .jsonl)."""
    line = '{"query": "q", "ranking": ["a"]}\n'
    near = read_run(_file(tmp_path, "near.run", " " * 4095 + line))
    assert near.to_mapping() == {"q": ["a"]} and near.order == "list"
    far = _file(tmp_path, "far.run", " " * 4096 + line)
    assert _errors(read_run, far)[0].startswith(f"{far} line 1: expected 6 fields")
    assert read_run(_file(tmp_path, "far.jsonl", " " * 4096 + line)).to_mapping() == {"q": ["a"]}
