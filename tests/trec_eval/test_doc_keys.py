"""The numeric path of the ranking: document ids as big-endian 64-bit words compare as
``strcmp`` compares them, and ids it cannot take go to the string path."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa

from verity_eval.trec_eval import joins


def _keys(ids: list[bytes]) -> list[tuple[int, ...]]:
    docs = pa.array(ids, pa.binary())
    words = joins._words(docs)
    assert words is not None
    out = [np.empty(len(ids), np.uint64) for _ in range(max(words, 1))]
    joins._doc_keys(docs, out)
    return list(zip(*(o.tolist() for o in out), strict=True))


def test_words_order_as_strcmp_at_every_length_and_at_the_end_of_the_data():
    rnd = random.Random(26)
    alphabet = b"09AZaz_-.\x01\x7f\x80\xff"
    ids = [bytes(rnd.choice(alphabet) for _ in range(rnd.randint(1, 32))) for _ in range(3000)]
    ids += [b"a" * n for n in (1, 7, 8, 9, 15, 16, 17, 24, 31, 32)]  # word boundaries
    ids += [b"ab", b"a", b"abc", b"ab\x01", b"b"]  # prefixes sort first; last ids in the tail
    keys = _keys(ids)
    assert sorted(range(len(ids)), key=lambda i: (keys[i], i)) == sorted(
        range(len(ids)), key=lambda i: (ids[i], i)
    )
    # Equal ids, equal words; different ids, different words.
    assert len(set(keys)) == len(set(ids))
    assert _keys([b"abcdefgh", b"abcdefghi", b"x"]) == [
        (int.from_bytes(b"abcdefgh", "big"), 0),
        (int.from_bytes(b"abcdefgh", "big"), int.from_bytes(b"i" + bytes(7), "big")),
        (int.from_bytes(b"x" + bytes(7), "big"), 0),
    ]


def test_ids_the_numeric_path_refuses():
    assert joins._words(pa.array([b"a" * 33, b"b"], pa.binary())) is None  # too long
    assert joins._words(pa.array([b"a\x00b", b"abcdefgh"], pa.binary())) is None  # NUL
    # Under 8 bytes in all (a small block of a run): read from a padded copy.
    assert _keys([b"a", b"bc"]) == [(int.from_bytes(b"a" + bytes(7), "big"),), (0x6263 << 48,)]
    assert _keys([b"", b"abcdefgh"]) == [(0,), (int.from_bytes(b"abcdefgh", "big"),)]
    assert joins._words(pa.array([b"abcdefgh"] * 2, pa.binary())) == 1
    assert joins._words(pa.array([b"abcdefgh", b"abcdefghi"], pa.binary())) == 2


def test_equal_pairs_finds_every_pair_of_equal_hashes():
    rnd = random.Random(7)
    for _ in range(300):
        size = rnd.randint(0, 60)
        # Few distinct upper halves: groups of two, three and more share them.
        values = [(rnd.randrange(6) << 32) | rnd.randrange(12) for _ in range(size)]
        hashes = np.array(values, np.uint64)
        got = joins._equal_pairs(hashes)
        seen: dict[int, list[int]] = {}
        for i, v in enumerate(values):
            seen.setdefault(v, []).append(i)
        if any(len(lines) > 2 for lines in seen.values()):
            assert got is None
            continue
        want = sorted(tuple(lines) for lines in seen.values() if len(lines) == 2)
        assert got is not None
        first, second = (a.tolist() for a in got)
        pairs = zip(first, second, strict=True)
        assert sorted(tuple(sorted(p)) for p in pairs) == want
