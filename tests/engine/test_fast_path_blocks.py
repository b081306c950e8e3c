"""The fast TREC path where it works chunk by chunk and block by block: many CSV chunks
(each with its own query dictionary), tie groups and queries across chunk and block
boundaries, runs not written query by query, duplicates. Every ranking must be the one
the careful reader gives (an independent oracle: pure Python, split on whitespace)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verity_eval import EngineInputError, EvalParams, evaluate, read_qrels, tables
from verity_eval.readers import common, trec_run


def _lines(seed: int, *, grouped: bool, duplicates: bool) -> list[str]:
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(12):
        depth = int(rng.integers(1, 120))
        docs = [f"d{d}" for d in rng.choice(300, size=depth, replace=False)]
        if duplicates and depth > 3:
            docs[-1] = docs[0]
        # Few distinct scores, written best first: long tie groups, in random docid order.
        scores = np.sort(rng.choice([0.0, -0.0, 0.5, 1.0, 2.0, 1e300], size=depth))[::-1]
        for rank, (doc, score) in enumerate(zip(docs, scores, strict=True), start=1):
            lines.append(f"q{q} Q0 {doc} {rank} {float(score)!r} t")
    if not grouped:
        rng.shuffle(lines)
    return lines


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "_CSV_BLOCK", 512)  # a chunk every ~20 lines
    monkeypatch.setattr(tables, "_ROW_BLOCK", 7)  # blocks smaller than most queries
    monkeypatch.setattr(tables, "_HASH_BLOCK", 5)


@pytest.mark.parametrize("grouped", [True, False], ids=["query-by-query", "shuffled"])
@pytest.mark.parametrize("dedup", ["error", "first"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_chunked_fast_reader_matches_the_careful_one(
    tmp_path: Path, small_blocks: None, grouped: bool, dedup: str, seed: int
) -> None:
    path = tmp_path / "run.trec"
    path.write_text("\n".join(_lines(seed, grouped=grouped, duplicates=True)) + "\n")
    fast = trec_run._read_trec_run_fast(path, "r", " ", order="score", dedup=dedup)
    if dedup == "error":
        # Duplicates: the fast path declines, and the careful reader names each one.
        assert fast is None
        with pytest.raises(EngineInputError, match="duplicate docid"):
            trec_run._read_trec_run_slow(path, "r", order="score", dedup=dedup)
        return
    careful = trec_run._read_trec_run_slow(path, "r", order="score", dedup=dedup)
    assert fast is not None and fast.docids.num_chunks > 5
    assert fast.duplicates_removed > 0
    assert fast.to_mapping() == careful.to_mapping()
    assert fast.duplicates_removed == careful.duplicates_removed


@pytest.mark.parametrize("grouped", [True, False], ids=["query-by-query", "shuffled"])
def test_chunked_join_gives_the_careful_numbers(
    tmp_path: Path, small_blocks: None, grouped: bool
) -> None:
    run_path = tmp_path / "run.trec"
    run_path.write_text("\n".join(_lines(5, grouped=grouped, duplicates=False)) + "\n")
    qrels_path = tmp_path / "qrels"
    rng = np.random.default_rng(9)
    qrels_path.write_text(
        "".join(
            f"q{q} 0 d{d} {int(rng.integers(-1, 3))}\n"
            for q in range(14)
            for d in rng.choice(300, size=40, replace=False)
        )
    )
    fast = trec_run._read_trec_run_fast(run_path, "r", " ", order="score", dedup="error")
    careful = trec_run._read_trec_run_slow(run_path, "r", order="score", dedup="error")
    assert fast is not None
    qrels = read_qrels(qrels_path)
    params = EvalParams(ks=(5, 20), dedup="error")
    assert evaluate(qrels, fast, params).per_query == evaluate(qrels, careful, params).per_query


# --- The duplicate check's block path, against a plain count (an independent oracle) ---


def _layout(rng: np.random.Generator, kind: str) -> np.ndarray:
    """Query codes of one run, physical row order. Codes start at 10,000 so that keys are
    past 2**53 (exact only as uint64, as real keys of a run with that many queries)."""
    sizes = rng.integers(1, 12, size=int(rng.integers(1, 9)))
    codes = np.repeat(np.arange(sizes.size), sizes)  # query by query, some queries long
    if kind == "row-moved" and codes.size > 2:
        row = int(rng.integers(codes.size))
        codes = np.insert(np.delete(codes, row), int(rng.integers(codes.size)), codes[row])
    elif kind == "query-returns":
        codes = np.concatenate([codes, codes[: int(rng.integers(1, codes.size + 1))]])
    elif kind == "shuffled":
        rng.shuffle(codes)
    return (codes + 10_000).astype(np.int32)


@pytest.mark.parametrize("row_block", [1, 2, 3, 5, 8, 1 << 20])
@pytest.mark.parametrize("kind", ["query-by-query", "row-moved", "query-returns", "shuffled"])
def test_repeated_keys_are_exactly_the_keys_seen_twice(
    monkeypatch: pytest.MonkeyPatch, row_block: int, kind: str
) -> None:
    from collections import Counter

    monkeypatch.setattr(tables, "_ROW_BLOCK", row_block)
    rng = np.random.default_rng(row_block * 31 + len(kind))
    for _ in range(60):
        codes = _layout(rng, kind)
        # Ids drawn from few values (duplicates within a query) and adjacent large
        # values (keys one apart, which only uint64 keeps apart).
        ids = rng.choice(np.array([1, 2, 3, (1 << 39) + 1, (1 << 39) + 2]), size=codes.size)
        keys = (codes.astype(np.uint64) << np.uint64(40)) | ids.astype(np.uint64)
        count = Counter(keys.tolist())
        expected = sorted(k for k, c in count.items() if c > 1)
        found = tables._repeated_keys(codes, keys)
        assert sorted(found.tolist()) == expected, (kind, codes.tolist(), ids.tolist())
        assert all(type(k) is int for k in found.tolist())  # keys, not floats near them


def test_a_run_not_grouped_by_query_has_its_duplicates_found_across_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # q1's rows are interrupted by q2's, and the repeated d1 lies in two different blocks:
    # only a sort of all the rows finds it, on the fast path as on the careful one.
    monkeypatch.setattr(tables, "_ROW_BLOCK", 2)
    rows = [("q1", "d1"), ("q1", "d2"), ("q2", "d9"), ("q1", "d3"), ("q2", "d8"), ("q1", "d1")]
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{q} Q0 {d} {i} {9 - i} t\n" for i, (q, d) in enumerate(rows, 1)))
    fast = trec_run._read_trec_run_fast(path, "r", " ", order="score", dedup="first")
    careful = trec_run._read_trec_run_slow(path, "r", order="score", dedup="first")
    assert fast is not None
    assert fast.duplicates_removed == careful.duplicates_removed == 1
    assert fast.to_mapping() == careful.to_mapping()
    assert trec_run._read_trec_run_fast(path, "r", " ", order="score", dedup="error") is None


def test_the_block_path_keeps_its_memory_to_a_block(monkeypatch: pytest.MonkeyPatch) -> None:
    # The point of the block path (a run written query by query): no copy of all the
    # keys. A full sort would allocate len(keys) * 8 bytes; the blocks, about one block.
    import tracemalloc

    monkeypatch.setattr(tables, "_ROW_BLOCK", 1000)
    # 100,000 rows, 50 per query, then one query of 1,500 rows: a block larger than any
    # before it, which must not make the reused buffer grow with the rows already read.
    sizes = np.array([50] * 2000 + [1500])
    codes = np.repeat(np.arange(sizes.size, dtype=np.int32), sizes)
    keys = (codes.astype(np.uint64) << np.uint64(40)) | np.uint64(7)  # every row repeats
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    keys[starts] += np.uint64(1)  # but each query's first
    tables._repeated_keys(codes[:3000], keys[:3000])  # first call's lazy imports: not counted
    tracemalloc.start()
    try:
        found = tables._repeated_keys(codes, keys)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found.tolist() == sorted({int(k) for k in keys[starts + 1]})
    assert peak < keys.nbytes // 4, peak


def test_an_empty_docid_in_an_early_chunk_sends_the_run_to_the_careful_reader(
    tmp_path: Path, small_blocks: None
) -> None:
    # A doubled separator gives pyarrow an empty docid; trec_eval sees five fields. The
    # empty value sits in the first of many chunks, not the last.
    lines = _lines(4, grouped=True, duplicates=False)
    lines[1] = "q0 Q0  1 2.0 t"
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    assert trec_run._read_trec_run_fast(path, "r", " ", order="score", dedup="first") is None
    with pytest.raises(EngineInputError, match="line 2"):
        trec_run._read_trec_run_slow(path, "r", order="score", dedup="first")


def test_reading_a_run_on_the_fast_path_warns_of_nothing(tmp_path: Path) -> None:
    import warnings

    from verity_eval import read_run

    path = tmp_path / "run.trec"
    path.write_text("\n".join(_lines(6, grouped=True, duplicates=False)) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert common._sniff_delimiter(path, 6) == " "
        run = read_run(path)
    assert run.duplicates_removed == 0 and len(run.qids) == 12
