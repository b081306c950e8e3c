"""Every engine reader refuses an id that cannot be stored (``verity_limits.id_problem``:
longer than ``ID_MAX`` bytes, or holding NUL), naming the file, the line, which id, its
first 40 characters and the limit; it carries on to the next line, so that every bad line
of a file is listed in one refusal; and an id of exactly ``ID_MAX`` bytes is read.

The messages are written out in full here (not built from the code's helpers), so a
changed field name, line, quote or limit fails a test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verity_eval import EngineInputError, read_mapping, read_qrels, read_run, read_statuses
from verity_eval.readers import qrels as qrels_reader
from verity_eval.readers import runs as run_reader
from verity_eval.readers.common import _shown
from verity_limits import ID_MAX, STAGE_MAX

LONG = "u" * (ID_MAX + 1)  # 2,049 bytes
LONG_SHOWN = "'" + "u" * 40 + "…'"
TOO_LONG = f"is {ID_MAX + 1:,} bytes long; ids have at most {ID_MAX:,} bytes"
NUL = "q\x00x"
HAS_NUL = "contains a NUL character, which cannot be stored; remove it"
EDGE = "e" * ID_MAX  # exactly the limit: stored
WIDE = "é" * 1025  # 1,025 characters, 2,050 bytes: the limit is in bytes
WIDE_SHOWN = "'" + "é" * 40 + "…'"
WIDE_TOO_LONG = f"is 2,050 bytes long; ids have at most {ID_MAX:,} bytes"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # files are named as given: "q.qrels line 2: ..."


def _file(tmp_path: Path, name: str, lines: list[str]) -> Path:
    (tmp_path / name).write_bytes(("\n".join(lines) + "\n").encode())
    return Path(name)


def _errors(call, *args, **kwargs) -> list[str]:
    with pytest.raises(EngineInputError) as refused:
        call(*args, **kwargs)
    return refused.value.errors


@pytest.fixture(params=["fast", "careful"])
def path_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """TREC files: read once as they come (a regular file takes the pyarrow path, which
    must send a file with a bad id to the careful reader) and once with the fast path off."""
    if request.param == "careful":
        for module in (run_reader, qrels_reader):
            monkeypatch.setattr(module, "_sniff_delimiter", lambda path, fields: None)
    return request.param


# -- TREC qrels and runs ----------------------------------------------------------------------


def test_qrels_name_every_bad_id_by_line_and_read_one_at_the_limit(tmp_path, path_kind):
    path = _file(
        tmp_path,
        "q.qrels",
        [f"q1 0 {EDGE} 1", f"q1 0 {LONG} 1", f"{NUL} 0 d1 1", f"{LONG} 0 {LONG} 2", "q2 0 d2 1"],
    )

    assert _errors(read_qrels, path) == [
        f"q.qrels line 2: docid {LONG_SHOWN} {TOO_LONG}",
        f"q.qrels line 3: query id 'q\\x00x' {HAS_NUL}",
        # one refusal per line: the query id is named, the docid not looked at
        f"q.qrels line 4: query id {LONG_SHOWN} {TOO_LONG}",
    ]


def test_qrels_at_the_limit_are_read_on_the_fast_path(tmp_path, monkeypatch):
    monkeypatch.setattr(qrels_reader, "_read_qrels_slow", None)  # calling it would fail
    path = _file(tmp_path, "q.qrels", [f"q1 0 {EDGE} 1", f"{'k' * ID_MAX} 0 d 2"])

    qrels = read_qrels(path)

    assert qrels.to_mapping() == {"q1": {EDGE: 1}, "k" * ID_MAX: {"d": 2}}


@pytest.mark.parametrize("column", ["query", "docid"])
def test_a_long_id_in_either_column_of_a_regular_qrels_file_is_refused(tmp_path, column):
    qid, docid = (LONG, "d1") if column == "query" else ("q1", LONG)
    path = _file(tmp_path, "q.qrels", ["q0 0 d0 1", f"{qid} 0 {docid} 1"])

    what = "query id" if column == "query" else "docid"
    assert _errors(read_qrels, path) == [f"q.qrels line 2: {what} {LONG_SHOWN} {TOO_LONG}"]


def test_run_names_every_bad_id_by_line(tmp_path, path_kind):
    path = _file(
        tmp_path,
        "r.run",
        [
            f"q1 Q0 {EDGE} 1 3.0 t",
            f"q1 Q0 {LONG} 2 2.0 t",
            f"{NUL} Q0 d1 1 1.0 t",
            f"{LONG} Q0 {NUL} 1 1.0 t",
            "q2 Q0 d2 1 1.0 t",
        ],
    )

    assert _errors(read_run, path) == [
        f"r.run line 2: docid {LONG_SHOWN} {TOO_LONG}",
        f"r.run line 3: query id 'q\\x00x' {HAS_NUL}",
        f"r.run line 4: query id {LONG_SHOWN} {TOO_LONG}",
    ]


@pytest.mark.parametrize("column", ["query", "docid"])
def test_a_long_id_in_either_column_of_a_regular_run_is_refused(tmp_path, column):
    qid, docid = (LONG, "d1") if column == "query" else ("q1", LONG)
    path = _file(tmp_path, "r.run", ["q0 Q0 d0 1 1.0 t", f"{qid} Q0 {docid} 1 1.0 t"])

    what = "query id" if column == "query" else "docid"
    assert _errors(read_run, path) == [f"r.run line 2: {what} {LONG_SHOWN} {TOO_LONG}"]


def test_a_run_at_the_limit_is_read_on_the_fast_path(tmp_path, monkeypatch):
    monkeypatch.setattr(run_reader, "_read_trec_run_slow", None)
    path = _file(tmp_path, "r.run", [f"q1 Q0 {EDGE} 1 2.0 t", "q1 Q0 d 2 1.0 t"])

    run = read_run(path)

    assert run.to_mapping() == {"q1": [EDGE, "d"]}


# -- JSON Lines runs, statuses, unit maps ------------------------------------------------------


# JSON Lines refuse \u0000 in any string before an id is looked at
# (tests/hardening/test_reader_properties.py), so
# only length is an id's problem here.


def test_jsonl_run_names_bad_query_ids_and_bad_items_by_line_and_position(tmp_path):
    path = _file(
        tmp_path,
        "r.jsonl",
        [
            json.dumps({"query": WIDE, "ranking": ["a"]}),
            json.dumps({"query": "q1", "ranking": ["a", LONG]}),
            json.dumps({"query": "q2", "stages": {"bm25": [EDGE, WIDE]}}),
            json.dumps({"query": LONG, "ranking": ["a"]}),
            json.dumps({"query": "q3", "ranking": ["a"]}),
        ],
    )

    assert _errors(read_run, path) == [
        f"r.jsonl line 1: query id {WIDE_SHOWN} {WIDE_TOO_LONG}",
        f"r.jsonl line 2: 'ranking', position 2: id {LONG_SHOWN} {TOO_LONG}",
        f"r.jsonl line 3: stage 'bm25', position 2: id {WIDE_SHOWN} {WIDE_TOO_LONG}",
        f"r.jsonl line 4: query id {LONG_SHOWN} {TOO_LONG}",
    ]


def test_jsonl_run_reads_ids_at_the_limit(tmp_path):
    path = _file(tmp_path, "r.jsonl", [json.dumps({"query": EDGE, "ranking": [EDGE, "b"]})])

    assert read_run(path).to_mapping() == {EDGE: [EDGE, "b"]}


@pytest.mark.parametrize("length", [0, STAGE_MAX + 1])
def test_jsonl_stage_names_have_1_to_stage_max_characters(tmp_path, length):
    name = "s" * length
    path = _file(
        tmp_path,
        "r.jsonl",
        [
            json.dumps({"query": "q1", "stages": {name: ["a"], "ok": ["b"]}}),
            json.dumps({"query": "q2", "stages": {name: ["a"]}}),
        ],
    )

    shown = repr(name[:40])
    assert _errors(read_run, path) == [
        f"r.jsonl line {n}: stage name {shown} must have 1 to {STAGE_MAX} characters"
        for n in (1, 2)
    ]


def test_a_stage_name_of_stage_max_characters_is_read(tmp_path):
    name = "s" * STAGE_MAX
    path = _file(tmp_path, "r.jsonl", [json.dumps({"query": "q1", "stages": {name: ["a"]}})])

    assert read_run(path, stage=name).to_mapping() == {"q1": ["a"]}


def test_statuses_name_every_bad_query_id_by_line(tmp_path):
    path = _file(
        tmp_path,
        "s.jsonl",
        [
            json.dumps({"query": WIDE, "status": "relevant"}),
            json.dumps({"query": LONG, "status": "relevant"}),
            json.dumps({"query": EDGE, "status": "no_answer"}),
        ],
    )

    assert _errors(read_statuses, path) == [
        f"s.jsonl line 1: query id {WIDE_SHOWN} {WIDE_TOO_LONG}",
        f"s.jsonl line 2: query id {LONG_SHOWN} {TOO_LONG}",
    ]


def test_statuses_read_a_query_id_at_the_limit(tmp_path):
    path = _file(tmp_path, "s.jsonl", [json.dumps({"query": EDGE, "status": "no_answer"})])

    assert read_statuses(path).statuses == {EDGE: "no_answer"}


def test_unit_maps_name_every_bad_fine_or_coarse_id_by_line(tmp_path):
    path = _file(
        tmp_path,
        "m.tsv",
        [f"{NUL}\tdoc1", f"p2\t{LONG}", f"{LONG}\t{NUL}", f"{EDGE}\t{EDGE}"],
    )

    assert _errors(read_mapping, path) == [
        f"m.tsv line 1: fine id 'q\\x00x' {HAS_NUL}",
        f"m.tsv line 2: coarse id {LONG_SHOWN} {TOO_LONG}",
        f"m.tsv line 3: fine id {LONG_SHOWN} {TOO_LONG}",
    ]


def test_unit_maps_read_ids_at_the_limit(tmp_path):
    path = _file(tmp_path, "m.tsv", [f"{EDGE}\t{EDGE}", "p\td"])

    assert read_mapping(path) == {EDGE: EDGE, "p": "d"}


# -- how a field is quoted ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,shown",
    [
        ("a" * 40, "a" * 40),
        ("a" * 41, "a" * 40 + "…"),
        ("a" * 39 + "é", "a" * 39 + "é"),  # 40 characters, 41 bytes: whole
        (b"\xff" + b"b" * 39, "\ufffd" + "b" * 39),  # bytes are decoded, bad ones replaced
        (b"c" * 41, "c" * 40 + "…"),
    ],
)
def test_a_field_is_quoted_by_its_first_40_characters(value, shown):
    assert _shown(value) == shown


@pytest.mark.parametrize(
    "read,name,line,what",
    [
        (read_qrels, "q.qrels", "q1 0 d\x00x 1", "docid"),
        (read_run, "r.run", "q1 Q0 d\x00x 2 1.0 t", "docid"),
        (read_run, "r.run", "q\x00x Q0 d2 2 1.0 t", "query id"),
    ],
)
def test_a_nul_is_refused_in_an_otherwise_regular_file(tmp_path, read, name, line, what):
    # No other irregularity: only the scan for NUL keeps this file off the fast path.
    first = "q1 0 d1 1" if read is read_qrels else "q1 Q0 d1 1 2.0 t"
    path = _file(tmp_path, name, [first, line])

    shown = "'q\\x00x'" if what == "query id" else "'d\\x00x'"
    assert _errors(read, path) == [f"{name} line 2: {what} {shown} {HAS_NUL}"]


def test_every_bad_stage_name_of_a_line_is_listed(tmp_path):
    long = "s" * (STAGE_MAX + 1)
    path = _file(
        tmp_path, "r.jsonl", [json.dumps({"query": "q1", "stages": {"": ["a"], long: ["b"]}})]
    )

    assert _errors(read_run, path) == [
        f"r.jsonl line 1: stage name '' must have 1 to {STAGE_MAX} characters",
        f"r.jsonl line 1: stage name {long[:40]!r} must have 1 to {STAGE_MAX} characters",
    ]
