"""Columnar qrels and runs at their edges: empty inputs, one-row runs, queries the join must
leave alone, and hash keys that collide in chosen ways (a collision may cost time, never
change a number)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from verity_eval import EngineInputError, EvalParams, Qrels, Run, evaluate, read_run, tables


def _chosen_hashes(monkeypatch: pytest.MonkeyPatch, hashes: dict[str, int]) -> None:
    """Hash each id to the value given (shifted into the bits the keys keep)."""

    def fake(arr: pa.Array) -> np.ndarray:
        return np.array([hashes[s] << 30 for s in arr.to_pylist()], dtype=np.uint64)

    monkeypatch.setattr(tables, "_hash_chunk", fake)


def test_no_chunks_hash_to_an_empty_key_array() -> None:
    empty = tables.hash_ids(pa.chunked_array([], type=pa.string()))
    assert empty.dtype == np.uint64 and empty.size == 0


def test_string_pairs_are_compared_one_by_one() -> None:
    ids = pa.array(["a", "b", "a", "c"])
    assert tables._equal_pairs(ids, np.array([0]), ids, np.array([2])) is True
    assert tables._equal_pairs(ids, np.array([0]), ids, np.array([1])) is False
    assert tables._equal_pairs(ids, np.array([0, 1]), ids, np.array([2, 3])) is False
    assert tables._equal_pairs(ids, np.array([], dtype=np.int64), ids, np.array([])) is True


def test_colliding_ids_are_not_duplicates(tmp_path: Path, monkeypatch) -> None:
    _chosen_hashes(monkeypatch, {"a": 7, "b": 7, "c": 9})
    path = tmp_path / "run.trec"
    path.write_text("q Q0 a 1 3 t\nq Q0 b 2 2 t\nq Q0 c 3 1 t\n")
    run = read_run(path, dedup="first")
    assert run.to_mapping() == {"q": ["a", "b", "c"]} and run.duplicates_removed == 0
    mapped, collapsed = run.map_units({"z": "y"})
    assert collapsed == 0 and mapped.to_mapping() == {"q": ["a", "b", "c"]}


@pytest.mark.parametrize(
    "hashes",
    [{"a": 7, "b": 7, "x": 1}, {"a": 1, "b": 7, "x": 7}, {"a": 3, "b": 7, "x": 5}],
    ids=["first-pair", "later-pair", "none"],
)
def test_colliding_judgments_still_join_exactly(monkeypatch, hashes: dict[str, int]) -> None:
    _chosen_hashes(monkeypatch, hashes)
    qrels = Qrels.from_mapping({"q": {"a": 1, "b": 2, "x": 3}})
    run = Run.from_mapping({"q": ["b", "a", "x"]})
    grades = tables.qrels_grades_for_run(run, qrels, np.array([0]))
    assert grades.tolist() == [2, 1, 3] and grades.dtype == np.int32


def test_a_one_row_run_is_joined() -> None:
    qrels = Qrels.from_mapping({"q": {"a": 2}})
    grades = tables.qrels_grades_for_run(Run.from_mapping({"q": ["a"]}), qrels, np.array([0]))
    assert grades.tolist() == [2] and grades.dtype == np.int32
    result = evaluate({"q": {"a": 2}}, {"q": ["a"]}, EvalParams(ks=(1,), measures=("P", "nDCG")))
    assert result.per_query["q"]["P@1"] == 1.0 and result.per_query["q"]["nDCG@1"] == 1.0


def test_judgments_of_queries_not_joined_never_reach_a_run_query() -> None:
    qrels = Qrels.from_mapping({"q1": {"a": 1}, "q2": {"c": 1}, "x": {"b": 3}})
    run = Run.from_mapping({"q1": ["a"], "q2": ["b", "c"]})
    grades = tables.qrels_grades_for_run(run, qrels, np.array([0, 1]))
    assert grades.tolist() == [1, -1, 1]  # b is judged for x only, which is not joined


def test_a_unit_map_that_collapses_rows_keeps_the_empty_rankings_after() -> None:
    run = Run.from_mapping({"q1": ["a", "b", "c"], "q2": []})
    mapped, collapsed = run.map_units({"b": "a"})
    assert collapsed == 1
    assert mapped.to_mapping() == {"q1": ["a", "c"], "q2": []}
    assert mapped.offsets.tolist() == [0, 2, 2]


def test_qrels_from_a_mapping_check_every_id_and_keep_their_source() -> None:
    default = Qrels.from_mapping({"q": {}})
    assert default.source == "qrels" and default.docids.type == pa.string() and len(default) == 0
    named = Qrels.from_mapping({"q": {"a": 1}}, source="memory")
    assert named.source == "memory" and named.to_mapping() == {"q": {"a": 1}}
    with pytest.raises(EngineInputError) as info:
        Qrels.from_mapping({"": {"a": 1}, 3: {"a": 1}, "q": {"": 1, "b": True, "c": 1}})
    assert info.value.errors == [
        "qrels: query id '' must be a non-empty string",
        "qrels: query id 3 must be a non-empty string",
        "qrels: query 'q': item id '' must be a non-empty string",
        "qrels: query 'q', item 'b': grade True is not an integer; use whole-number grades "
        "(-1 = pooled but unjudged)",
    ]


def test_runs_from_a_mapping_check_every_id_and_count_what_dedup_removes() -> None:
    plain = Run.from_mapping({"q": ["a"]})
    assert (plain.source, plain.order, plain.dedup) == ("rankings", "list", "error")
    empty = Run.from_mapping({"q": []})  # ids stay a string column even with no id at all
    assert empty.docids.type == pa.string() and empty.to_mapping() == {"q": []}
    with pytest.raises(EngineInputError) as info:
        Run.from_mapping(
            {"": ["a"], 3: ["a"], "s": "ab", "t": 5, "q": ["a", "", 7, "b", "a", "c", "b"]}
        )
    fix = "pass dedup='first' (--dedup first) to keep the first occurrence"
    assert info.value.errors == [
        "rankings: query id '' must be a non-empty string",
        "rankings: query id 3 must be a non-empty string",
        "rankings: ranking of query 's' must be a list of ids",
        "rankings: ranking of query 't' must be a list of ids",
        "rankings: query 'q', position 2: id '' must be a non-empty string",
        "rankings: query 'q', position 3: id 7 must be a non-empty string",
        f"rankings: query 'q', position 5: duplicate id 'a' (first at position 1); {fix}",
        f"rankings: query 'q', position 7: duplicate id 'b' (first at position 4); {fix}",
    ]
    kept = Run.from_mapping({"q": ["a", "b", "a", "c", "b"], "r": ["a", "a"]}, dedup="first")
    assert kept.to_mapping() == {"q": ["a", "b", "c"], "r": ["a"]}
    assert kept.duplicates_removed == 3 and kept.dedup == "first"


def test_a_run_id_colliding_with_a_judged_id_is_told_apart_by_its_string(monkeypatch) -> None:
    # y hashes as a does, but is not judged: the keyed join proposes it, the string
    # comparison turns it down; the judgments' own keys are distinct (no exact fallback).
    _chosen_hashes(monkeypatch, {"a": 7, "b": 3, "x": 5, "y": 7})
    qrels = Qrels.from_mapping({"q": {"a": 1, "b": 2, "x": 3}})
    run = Run.from_mapping({"q": ["y", "b", "a", "x"]})
    grades = tables.qrels_grades_for_run(run, qrels, np.array([0]))
    assert grades.tolist() == [tables.UNJUDGED, 2, 1, 3]


def test_a_pooled_but_unjudged_grade_joins_as_unjudged() -> None:
    # Grade -1 (trec_eval's "pooled, not judged"), and any grade below 0, joins as
    # unjudged (-1), never as a grade of its own.
    qrels = Qrels.from_mapping({"q": {"a": -1, "b": 0, "c": 2, "e": -3}})
    run = Run.from_mapping({"q": ["a", "b", "c", "d", "e"]})
    grades = tables.qrels_grades_for_run(run, qrels, np.array([0]))
    assert grades.tolist() == [tables.UNJUDGED, 0, 2, tables.UNJUDGED, tables.UNJUDGED]


@pytest.mark.parametrize("judged", [["a", "b"], ["a", "b", "c", "d"]], ids=["two", "four"])
def test_judgments_whose_keys_all_collide_still_join_exactly(monkeypatch, judged) -> None:
    # Every judged id of the query hashes alike (two, the fewest that can collide): the
    # keyed join could find only one of them, so the exact pass must decide.
    _chosen_hashes(monkeypatch, {**dict.fromkeys(judged, 7), "y": 3})
    qrels = Qrels.from_mapping({"q": {d: g for g, d in enumerate(judged, start=1)}})
    run = Run.from_mapping({"q": ["y", *reversed(judged)]})
    grades = tables.qrels_grades_for_run(run, qrels, np.array([0]))
    assert grades.tolist() == [tables.UNJUDGED, *range(len(judged), 0, -1)]
