"""The hashed keys used for duplicate checks and the qrels join cannot change a result."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from verity_eval import EvalParams, Qrels, Run, evaluate
from verity_eval.tables import hash_ids, id_keys, later_duplicates, qrels_grades_for_run

IDS = ["", "a", "ab", "abcdefg", "abcdefgh", "abcdefghi", "x" * 40, "x" * 41, "é€", "D123"]


def test_equal_strings_hash_equal_whatever_the_chunking() -> None:
    whole = hash_ids(pa.array(IDS))
    chunked = hash_ids(pa.chunked_array([pa.array(IDS[:3]), pa.array(IDS[3:])]))
    sliced = hash_ids(pa.array(["pad", *IDS])[1:])
    assert (whole == chunked).all() and (whole == sliced).all()
    assert len(set(whole.tolist())) == len(IDS)


def test_duplicate_check_survives_key_collisions() -> None:
    # Every row gets the same key, as if all hashes collided: the exact pass decides.
    docids = pa.array(["a", "b", "a", "c", "b"])
    qcodes = np.array([0, 0, 0, 0, 1], dtype=np.int32)
    keys = np.zeros(5, dtype=np.uint64)
    final_pos = np.array([4, 0, 1, 2, 3])
    later = later_duplicates(qcodes, docids, keys, lambda rows: final_pos[rows])
    # query 0: "a" at positions 4 and 1 -> the row at position 4 (row 0) is the later one.
    assert later.tolist() == [True, False, False, False, False]


def test_join_confirms_matches_on_strings() -> None:
    qrels = Qrels.from_mapping({"q": {"a": 2, "b": 0, "p": -1}})
    run = Run.from_mapping({"q": ["b", "zz", "a", "p"]})
    grades = qrels_grades_for_run(run, qrels, np.array([0]))
    assert grades.tolist() == [0, -1, 2, -1]


def test_in_memory_and_run_objects_agree() -> None:
    qrels = {"q": {"a": 1, "b": 2}}
    ranking = {"q": ["b", "x", "a"]}
    a = evaluate(qrels, ranking, EvalParams(ks=(2,)))
    b = evaluate(Qrels.from_mapping(qrels), Run.from_mapping(ranking), EvalParams(ks=(2,)))
    assert a.per_query == b.per_query


def test_keys_of_a_chunked_id_column_equal_those_of_one_chunk() -> None:
    # Large files arrive in several chunks: each chunk's keys go to its own rows.
    ids = ["a", "bb", "a", "ccc", "bb", "a"]
    qcodes = np.array([0, 0, 1, 1, 2, 2], dtype=np.int32)
    whole = id_keys(qcodes, pa.array(ids))
    chunked = id_keys(
        qcodes, pa.chunked_array([pa.array(ids[:2]), pa.array(ids[2:5]), pa.array(ids[5:])])
    )
    assert chunked.tolist() == whole.tolist()
    assert whole[0] != whole[2] and whole[2] != whole[5]  # the same id in other queries
    assert whole[1] >> np.uint64(40) == 0 and whole[4] >> np.uint64(40) == 2  # query on top
