"""Every reader, given any bytes or any JSON: a result or the project's own refusal with
file and line, never another exception (issue 10, "make the class impossible")."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

import verity_eval as engine
from judgments.formats import (
    parse_bundle,
    parse_docs,
    parse_items,
    parse_judgments,
    parse_qrels,
    parse_queries,
)
from tests.hardening.strategies import NASTY_LINES, PROPERTY, files

ENGINE_READERS = {
    "qrels": lambda p: engine.read_qrels(p),
    "run": lambda p: engine.read_run(p),
    "run-rank-first": lambda p: engine.read_run(p, order="rank", dedup="first"),
    "run-stages": lambda p: engine.read_run_stages(p),
    "mapping": lambda p: engine.read_mapping(p),
    "statuses": lambda p: engine.read_statuses(p),
}
FORMAT_PARSERS = {
    "bundle": parse_bundle,
    "items": parse_items,
    "queries": parse_queries,
    "judgments": parse_judgments,
    "qrels": parse_qrels,
}


def _engine_outcome(read, data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"in{suffix}"
        path.write_bytes(data)
        try:
            read(path)
        except engine.EngineInputError as refused:
            assert refused.errors
            for message in refused.errors:
                assert message.startswith(str(path)), message
                assert len(message) < 2000, "a refusal quotes a bounded part of the input"


@PROPERTY
@given(
    data=files,
    reader=st.sampled_from(sorted(ENGINE_READERS)),
    suffix=st.sampled_from(["", ".jsonl", ".trec", ".tsv"]),
)
@example(data=NASTY_LINES[0].encode(), reader="run-stages", suffix=".jsonl")
@example(data=NASTY_LINES[1].encode(), reader="run", suffix=".jsonl")
@example(data=b"q0\x0001 Q0 d1 1 1.0 t\n", reader="run", suffix="")
def test_engine_readers_return_a_result_or_a_line_numbered_refusal(data, reader, suffix):
    _engine_outcome(ENGINE_READERS[reader], data, suffix)


@PROPERTY
@given(data=files, parser=st.sampled_from(sorted(FORMAT_PARSERS)))
@example(data=b'{"type": "item", "id": "d1", "metadata": {"k": "\\u0000"}}', parser="items")
@example(data=b'{"type": ["item"], "id": "d1"}', parser="bundle")  # found by Hypothesis
def test_format_parsers_never_raise_and_name_file_and_line(data, parser):
    bundle, problems = FORMAT_PARSERS[parser](data, "in.jsonl")
    for problem in problems:
        assert problem.where.file == "in.jsonl"
        assert problem.where.line is not None and problem.where.line >= 1
    if not problems:
        for record in [*bundle.items, *bundle.queries]:
            assert "\x00" not in record.id
            assert len(record.id.encode("utf-8")) <= 2048


@PROPERTY
@given(data=files)
def test_the_corpus_reader_never_raises(data):
    items, problems, _ = parse_docs(data.splitlines(keepends=True), "corpus.jsonl")
    assert all(p.where.line for p in problems)
    for item in items:
        item.id.encode("utf-8")  # no lone surrogate reaches the database
        assert "\x00" not in item.id + item.title + item.text + item.url
