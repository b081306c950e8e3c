"""The fast TREC path where it works chunk by chunk and block by block: many CSV chunks
(each with its own query dictionary), tie groups and queries across chunk and block
boundaries, runs not written query by query, duplicates. Every ranking must be the one
the careful reader gives (an independent oracle: pure Python, split on whitespace)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scoring.engine import EngineInputError, EvalParams, evaluate, read_qrels, tables
from scoring.engine.readers import common, trec_run


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
