"""Hypothesis strategies for malformed input: arbitrary bytes, arbitrary JSON values in
JSON Lines, TREC-like lines of odd tokens, and a list of known nasty lines (issue 10)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# One place for the budget: the machine is small and shared.
PROPERTY = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
DATABASE_PROPERTY = settings(PROPERTY, max_examples=30)

NASTY_LINES = [
    '{"query": "q1", "ranking": ' + "[" * 5000 + "]" * 5000 + "}",
    '{"query": "q1", "ranking": ["a"], "x": ' + "9" * 5000 + "}",
    '{"query": "\\ud800", "ranking": ["a"]}',
    '{"query": "q1", "ranking": ["a\\u0000b"]}',
    '{"query": "q1", "ranking": ["a"], "query": "q2"}',
    '{"query": "q1", "ranking": ["' + "d" * 3000 + '"]}',
    '{"query": "q1", "stages": {"' + "s" * 300 + '": ["a"]}}',
    '{"query": "q1", "ranking": [NaN, Infinity]}',
    '{"type": "item", "id": "d1", "metadata": {"k": "\\u0000"}}',
    '{"type": "item", "id": "d1", "url": "javascript:alert(1)"}',
    '{"type": "item", "id": "d1", "metadata": {"x": 1e999}}',
    '{"type": "query", "id": "' + "q" * 300 + '", "text": "t"}',
    '{"type": "judgment", "query": "A", "item": "a", "grade": 99999999999, "note": "n"}',
    '{"type": "judgment", "query": "A", "item": "a", "grade": 1, "note": "' + "n" * 2001 + '"}',
    "q1 Q0 " + "d" * 3000 + " 1 1.0 t",
    "q0\x0001 Q0 d1 1 1.0 t",
    "q1 Q0 d1 99999999999999999999 1.0 t",
    "q1 Q0 d1 1 1e999 t",
    "q1 0 d1 99999999999999999999",
    "q1 0 d1 1",
    "=SUM(1+1) Q0 @cmd 1 1.0 t",
    "c1\t" + "x" * 3000,
    "c1\tc\x002",
]

_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
json_values = st.recursive(
    _json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_keys = st.sampled_from(
    ["type", "query", "ranking", "stages", "abstain", "id", "item", "grade", "note", "text",
     "status", "evidence", "metadata", "url", "slug", "scale", "relevant_grade", "tags",
     "title", "placeholder", "source", "rank", "reviewer", "pool_depth"]
)  # fmt: skip
_kinds = st.sampled_from(["collection", "item", "query", "judgment", "unjudged", "status", "x"])
records = st.dictionaries(_keys, json_values | st.text(max_size=6), max_size=6).flatmap(
    lambda d: st.one_of(st.just(d), _kinds.map(lambda k: {**d, "type": k}))
)
_ids = st.text(min_size=1, max_size=6) | st.sampled_from(["A", "B", "C", "a", "b", "x", "y"])
run_records = st.fixed_dictionaries(
    {"query": _ids | json_values},
    optional={
        "ranking": st.lists(_ids, max_size=4) | json_values,
        "stages": st.dictionaries(st.text(max_size=5), st.lists(_ids, max_size=3), max_size=3),
        "abstain": st.booleans() | json_values,
    },
)
_tokens = st.text(min_size=1, max_size=6) | st.sampled_from(["Q0", "0", "1", "-1", "1.5", "A", "a"])
trec_lines = st.lists(_tokens, min_size=1, max_size=7).map(" ".join)


def _jsonl(values: list[object]) -> bytes:
    return "\n".join(json.dumps(v, ensure_ascii=False) for v in values).encode(
        "utf-8", "surrogatepass"
    )


def _lines(lines: list[str]) -> bytes:
    return "\n".join(lines).encode("utf-8", "surrogatepass")


#: A whole file: bytes, JSON Lines of records or runs, TREC-like lines, nasty lines mixed in.
files = st.one_of(
    st.binary(max_size=400),
    st.lists(records | json_values, min_size=1, max_size=5).map(_jsonl),
    st.lists(run_records, min_size=1, max_size=5).map(_jsonl),
    st.lists(trec_lines | st.sampled_from(NASTY_LINES), min_size=1, max_size=6).map(_lines),
    st.lists(st.sampled_from(NASTY_LINES), min_size=1, max_size=3).map(_lines),
)
