"""The id hash against a plain-Python model of its definition (an independent oracle).

Definition (``scorer/verity_eval/tables.py``): an id's UTF-8 bytes are read as little-endian
64-bit words, the last one zero-padded; h starts at len(bytes) * GOLD, and for each word
h ^= word, h += GOLD, h = splitmix64_finaliser(h), all modulo 2^64. A key is the query
index in the top 24 bits and the hash's top 40 bits below.

The vectorised code must give exactly these numbers for every id length (0 to past 3
words, so that the whole-array and the ragged loops both run), for ids spread over
chunks and slices, and for ids in any position: equal ids hash equally wherever they are.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from verity_eval import tables

MASK = (1 << 64) - 1
GOLD = 0x9E3779B97F4A7C15


def splitmix64_finaliser(x: int) -> int:
    # Steele, Lea and Flood's SplitMix64 output function (as in java.util.SplittableRandom).
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    x ^= x >> 31
    return x


def model_hash(text: str) -> int:
    data = text.encode("utf-8")
    h = (len(data) * GOLD) & MASK
    for start in range(0, len(data), 8):
        word = int.from_bytes(data[start : start + 8].ljust(8, b"\0"), "little")
        h ^= word
        h = (h + GOLD) & MASK
        h = splitmix64_finaliser(h)
    return h


def _ids(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = "abcxyz0189-_/.é中"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30))) for _ in range(n)]


def test_the_finaliser_is_splitmix64s():
    values = np.array([0, 1, 2**63, MASK, 0x0123456789ABCDEF], dtype=np.uint64)
    with np.errstate(over="ignore"):
        mixed = tables._mix(values.copy())
    assert mixed.tolist() == [splitmix64_finaliser(int(v)) for v in values]


def test_hashes_equal_the_model_for_ids_of_every_length():
    ids = ["", "a", "abcdefg", "abcdefgh", "abcdefghi", "x" * 16, "y" * 17, "z" * 25]
    ids += _ids(1, 300)
    assert tables.hash_ids(pa.array(ids)).tolist() == [model_hash(s) for s in ids]


def test_hashes_of_equal_length_ids_equal_the_model():
    # All ids 8 bytes or longer at first: the whole-array loop runs before the ragged one.
    ids = ["abcdefgh", "abcdefghij", "0123456789abcdef-", "ABCDEFGH"]
    assert tables.hash_ids(pa.array(ids)).tolist() == [model_hash(s) for s in ids]


def test_chunks_and_slices_hash_as_one_array():
    ids = _ids(2, 60)
    sliced = pa.array(["pad", "padding!", *ids, "tail"])[2:-1]
    chunked = pa.chunked_array([pa.array(ids[:7]), pa.array(ids[7:40]), pa.array(ids[40:])])
    expected = [model_hash(s) for s in ids]
    assert tables.hash_ids(sliced).tolist() == expected
    assert tables.hash_ids(chunked).tolist() == expected
    assert tables.hash_ids(pa.array(ids, type=pa.large_string())).tolist() == expected


def test_an_empty_chunk_hashes_to_nothing():
    empty = tables._hash_chunk(pa.array([], type=pa.string()))
    assert empty.dtype == np.uint64 and empty.shape == (0,)


def test_keys_put_the_query_on_top_of_the_hash():
    ids = _ids(3, 20)
    qcodes = np.arange(20, dtype=np.int32) % 5
    keys = tables.id_keys(qcodes, pa.array(ids))
    assert keys.tolist() == [
        (int(q) << 40) | (model_hash(s) >> 24) for q, s in zip(qcodes, ids, strict=True)
    ]


def test_a_null_id_is_refused_by_the_hash():
    with pytest.raises(ValueError, match=r"^ids must not be null$"):
        tables._hash_chunk(pa.array(["a", None]))


def test_query_indices_past_the_keys_top_bits_are_refused():
    # 2^24 queries fit the keys' top 24 bits; index 2^24 would not (evaluate joins such
    # runs by the exact pass instead).
    ok = tables.id_keys(np.array([tables.MAX_KEYED_QUERIES - 1]), pa.array(["a"]))
    assert int(ok[0]) >> 40 == tables.MAX_KEYED_QUERIES - 1
    with pytest.raises(OverflowError, match=r"^too many queries for keyed joins$"):
        tables.id_keys(np.array([tables.MAX_KEYED_QUERIES]), pa.array(["a"]))


@pytest.mark.parametrize("block", [1, 2, 3, 5])
def test_hashes_in_tiny_blocks_equal_the_model(monkeypatch: pytest.MonkeyPatch, block: int):
    # Blocks of a few ids: the scratch buffer is reused, outgrown (ids getting longer,
    # a block of empty ids, a block exactly twice as long as the one that sized it) and
    # reused again, and every hash must still be the model's.
    monkeypatch.setattr(tables, "_HASH_BLOCK", block)
    ids = ["", "", "a", "bb", "cccc", "", "x" * 9, "y" * 18, "ab", "z" * 40, ""]
    ids += _ids(4, 200) + sorted(_ids(5, 100), key=len)
    expected = [model_hash(s) for s in ids]
    assert tables.hash_ids(pa.array(ids)).tolist() == expected
    sliced = pa.array(["pad" * 5, *ids])[1:]
    assert tables.hash_ids(sliced).tolist() == expected


def test_the_hash_scratch_grows_with_a_block_not_with_the_chunk(monkeypatch: pytest.MonkeyPatch):
    # 20,000 short ids, then a block of long ones: the padded copy of a block's bytes is
    # resized for that block only (a few KB), not for all the bytes before it.
    import tracemalloc

    monkeypatch.setattr(tables, "_HASH_BLOCK", 100)
    ids = ["abcd"] * 20_000 + ["x" * 40] * 100
    arr = pa.array(ids)
    tables._hash_chunk(arr[:300])  # a first call's lazy imports are not counted
    tracemalloc.start()
    try:
        out = tables._hash_chunk(arr)  # one chunk (hash_ids would add a concatenated copy)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out.tolist() == [model_hash("abcd")] * 20_000 + [model_hash("x" * 40)] * 100
    assert peak - out.nbytes < 100_000, peak  # ~50 KB here; ~220 KB if it grew with the chunk


def test_a_chunk_of_many_default_blocks_hashes_like_the_model():
    # 40 default blocks (16,384 ids each) and a partial one in one chunk: each id is
    # hashed once, in its own block (hashing every block again from each row would take
    # minutes here, quadratic in the block size).
    distinct = _ids(6, 97)
    model = {s: model_hash(s) for s in distinct}
    ids = [distinct[i % 97] for i in range(40 * tables._HASH_BLOCK + 5)]
    assert tables.hash_ids(pa.array(ids)).tolist() == [model[s] for s in ids]
