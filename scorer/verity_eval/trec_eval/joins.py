"""The join of a run's lines with the qrels and each query's order (``rankings``' engine):
document ids packed into 64-bit words, a 64-bit hash of (query, id) sorted by numpy's
radix sort, and a radix sort on (query, score) with ties by id descending; each query's
lines with their values, positions and grades for ``rankings`` and ``blocks``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

NONPOOL = -1
UNJUDGED = -2


def _rows_of(qid: pa.Array, value_set: pa.Array) -> np.ndarray:
    """Each line's evaluated-query row, -1 for the others."""
    if pa.types.is_dictionary(qid.type):
        of_value = _rows_of(qid.dictionary, value_set)
        return of_value[qid.indices.to_numpy(zero_copy_only=False)]
    index = pc.index_in(qid, value_set=value_set)
    return index.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)


KEY_BYTES = 32


_MASKS = np.array([0] + [((1 << (8 * k)) - 1) << (64 - 8 * k) for k in range(1, 9)], np.uint64)


def _words(docs: pa.Array) -> int | None:
    """How many 64-bit words the longest id needs; None when an id is longer than
    KEY_BYTES, empty, or holds a NUL byte, or the array is not plain binary (the string
    path takes those)."""
    if docs.type != pa.binary():
        return None
    if len(docs) == 0:
        return 0
    offsets = _offsets(docs)
    longest = int(np.diff(offsets).max())
    size = int(offsets[-1]) - int(offsets[0])
    if longest > KEY_BYTES or longest == 0:
        return None
    data = np.frombuffer(docs.buffers()[2], np.uint8, size, offset=int(offsets[0]))
    if not data.all():
        return None
    return (longest + 7) // 8


def _offsets(docs: pa.Array) -> np.ndarray:
    return np.frombuffer(docs.buffers()[1], np.int32, len(docs) + 1, offset=4 * docs.offset)


def _doc_keys(docs: pa.Array, out: list[np.ndarray]) -> None:
    """Each document id (``_words`` accepted them) as big-endian 64-bit words into
    ``out``, zero-padded: the words compare as ``strcmp`` compares the ids."""
    if len(docs) == 0:
        return
    offsets = _offsets(docs)
    starts = offsets[:-1]
    lengths = np.diff(offsets)
    size = int(offsets[-1])
    data = np.frombuffer(docs.buffers()[2], np.uint8, size)
    if size < 8:  # fewer bytes than one word: a padded copy
        data = np.concatenate([data, np.zeros(8, np.uint8)])
    last = len(data) - 8
    # Every byte offset viewed as the start of a 64-bit word (no copy).
    words_at = np.ndarray((last + 1,), dtype="<u8", buffer=data, strides=(1,))
    tail = bytes(data[last:]) + bytes(8 * len(out))
    keep = np.empty_like(lengths)
    shortest = int(lengths.min())
    for w, word in enumerate(out):
        at = starts + 8 * w if w else starts
        # The last ids' words may run past the data's end (starts ascend: a suffix).
        first_past = int(np.searchsorted(starts, last - 8 * w, side="right"))
        past = np.arange(first_past, len(starts))
        if len(past):
            at = at.copy()
            at[past] = last
        word[:] = words_at[at]  # (np.take would copy the strided view whole)
        word.byteswap(inplace=True)  # big-endian: numeric order is byte order
        for i in past.tolist():
            start = int(starts[i]) + 8 * w - last
            word[i] = int.from_bytes(tail[start : start + 8], "big")
        if shortest >= 8 * (w + 1):
            continue  # every id fills this word: nothing to mask
        np.subtract(lengths, 8 * w, out=keep)
        np.clip(keep, 0, 8, out=keep)
        word &= _MASKS[keep]


def _rank_numeric(rows, docs, sims, q_rows, q_docs, q_grades, n):
    """The rankings with document ids as numbers (``_rank_hashed``, else
    ``_rank_sorted``); None (the string path decides) when an id does not fit, or when a
    query has a document twice in its ranking or its qrels (trec_eval's stops, which the
    string path words)."""
    if len(rows) == 0:
        return None
    q_words, run_words = _words(q_docs), _words(docs)
    if q_words is None or run_words is None:
        return None
    words = max(q_words, run_words, 1)
    q_keys = [np.empty(len(q_rows), np.uint64) for _ in range(words)]
    run_keys = [np.empty(len(rows), np.uint64) for _ in range(words)]
    _doc_keys(q_docs, q_keys)
    _doc_keys(docs, run_keys)
    done = _rank_hashed(rows, run_keys, sims, q_rows, q_keys, q_grades, n)
    if done is not False:
        return done
    return _rank_sorted(rows, docs, sims, q_rows, q_docs, q_grades, n)


_MIX = np.uint64(0x9E3779B97F4A7C15)
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


def _hash(rows: np.ndarray, keys: list[np.ndarray]) -> np.ndarray:
    """A 64-bit hash of each (query, id words); equal keys hash equal, and the rare
    unequal keys that do too are told apart by the exact comparison after."""
    h = rows.astype(np.uint64)
    h *= _MIX
    for key in keys:
        h ^= key
        h *= _MIX
        h ^= h >> np.uint64(29)
    return h


def _radix_order(digits: list[np.ndarray]) -> np.ndarray:
    """The stable order by ``digits`` (uint16 each, most significant first): numpy's
    radix sort, one pass per digit from the least significant."""
    order = None
    for digit in reversed(digits):
        if order is None:
            order = np.argsort(digit, kind="stable")
        else:
            order = order[np.argsort(digit[order], kind="stable")]
    return order


def _digits(values: np.ndarray, bits: int) -> list[np.ndarray]:
    """The 16-bit digits of unsigned ``values`` below 2**bits, most significant first,
    leaving out the digits every value shares (they do not change the order)."""
    out = []
    for shift in range(((bits + 15) // 16 - 1) * 16, -1, -16):
        digit = (values >> np.uint64(shift) if shift else values).astype(np.uint16)
        if len(digit) and digit.min() != digit.max():
            out.append(digit)
    return out


def _equal_pairs(hashes: np.ndarray):
    """The pairs of lines (first, second) whose hashes are equal; None when three or
    more lines share one. A radix sort on the hashes' upper 32 bits puts lines with
    equal hashes together; a pair of neighbours is compared whole, and the rare groups
    of three or more upper halves alike are sorted by whole hash."""
    high = hashes >> np.uint64(32)
    order = _radix_order(_digits(high, 32))
    if order is None:
        order = np.arange(len(hashes))
    high = high[order]
    alike = high[1:] == high[:-1]  # neighbours i, i + 1 share their upper bits
    del high
    before = np.zeros_like(alike)
    before[1:] = alike[:-1]
    after = np.zeros_like(alike)
    after[:-1] = alike[1:]
    at = np.flatnonzero(alike & ~before & ~after)  # groups of two
    first, second = order[at], order[at + 1]
    equal = hashes[first] == hashes[second]
    first, second = first[equal], second[equal]
    larger = alike & (before | after)
    if larger.any():
        in_group = np.zeros(len(hashes), dtype=bool)
        in_group[:-1] = larger
        in_group[1:] |= larger
        lines = order[np.flatnonzero(in_group)]
        lines = lines[np.argsort(hashes[lines], kind="stable")]
        whole = hashes[lines]
        more = np.flatnonzero(whole[1:] == whole[:-1])
        if len(more) > 1 and (more[1:] == more[:-1] + 1).any():
            return None
        first = np.concatenate([first, lines[more]])
        second = np.concatenate([second, lines[more + 1]])
    return first, second


def _rank_hashed(rows, run_keys, sims, q_rows, q_keys, q_grades, n):
    """The join by a hash of (query, id) (``_equal_pairs``: a document's qrels line and
    its run line share a hash), and the ranking by a radix sort on (query,
    score descending), its ties by id descending. False when the sort path must decide
    (a score NaN, a hash shared by unequal keys); None for the string path (a document
    twice in one query's run lines or qrels lines)."""
    n_run, n_q = len(rows), len(q_rows)
    if np.isnan(sims).any():
        return False
    hashes = np.concatenate([_hash(q_rows, q_keys), _hash(rows, run_keys)])
    pairs = _equal_pairs(hashes)
    if pairs is None:
        return None  # three lines share a hash: a document twice in one query's lines
    first, second = pairs
    del hashes, pairs
    first_qrels = first < n_q
    if (first_qrels == (second < n_q)).any():
        return None  # two run lines, or two qrels lines, share a hash
    judged = np.where(first_qrels, first, second)
    matched = np.where(first_qrels, second, first) - n_q
    del first, second, first_qrels
    same = rows[matched] == q_rows[judged]
    for run_key, q_key in zip(run_keys, q_keys, strict=True):
        same &= run_key[matched] == q_key[judged]
    if not same.all():
        return False  # a hash shared by a different (query, id)
    # A run line's value: its qrels grade, UNJUDGED for a negative one, NONPOOL unnamed.
    grade = np.full(n_run, NONPOOL, dtype=np.int64)
    g = q_grades[judged]
    grade[matched] = np.where(g < 0, UNJUDGED, g)
    del matched, judged, same, g

    # Scores as integers in the same order, descending (-0.0 and 0.0 alike).
    bits = (sims + 0.0).view(np.int64)
    key = bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))
    desc = (~key).view(np.uint64) ^ np.uint64(1 << 63)
    del bits, key
    row_bits = max(int(n - 1).bit_length(), 1)
    # Radix passes on the query and the upper 32 bits of the score key; lines alike in
    # both (ties, and scores within a few millionths of each other) are then ordered by
    # the lower 32 bits, and the ties by id descending.
    upper = desc >> np.uint64(32)
    order = _radix_order(_digits(rows.astype(np.uint64), row_bits) + _digits(upper, 32))
    if order is None:
        order = np.arange(n_run)
    s_rows, s_upper = rows[order], upper[order]
    del upper
    alike = (s_rows[1:] == s_rows[:-1]) & (s_upper[1:] == s_upper[:-1])  # i alike i + 1
    del s_upper
    if alike.any():
        in_group = np.zeros(n_run, dtype=bool)
        in_group[:-1] = alike
        in_group[1:] |= alike
        at = np.flatnonzero(in_group)
        # A group starts at a line not alike the line before it.
        group = np.cumsum(~alike[np.maximum(at - 1, 0)] | (at == 0))
        lines = order[at]
        lower = desc[lines] & np.uint64(0xFFFFFFFF)
        by_id = np.lexsort([~k[lines] for k in reversed(run_keys)] + [lower, group])
        order[at] = lines[by_id]
    del desc
    return s_rows, None, grade[order]  # positions: ``_positions`` when needed


def _positions(ranked_rows: np.ndarray, n: int) -> np.ndarray:
    """Each line's position in its query's ranking (lines query by query)."""
    index_type = np.int32 if len(ranked_rows) < 2**31 else np.int64
    counts = np.bincount(ranked_rows, minlength=n)
    position = np.arange(len(ranked_rows), dtype=index_type)
    position -= np.repeat((np.cumsum(counts) - counts).astype(index_type), counts)
    return position


def _rank_sorted(rows, docs, sims, q_rows, q_docs, q_grades, n):
    """The rankings with document ids as numbers: one sort of the run's and qrels' lines
    by (query, id) for the join, one by (query, score descending, id descending) for the
    ranking. None (the string path decides) when an id does not fit, or when a query has a
    document twice in its ranking or its qrels (trec_eval's stops, which the string path
    words)."""
    n_run, n_q = len(rows), len(q_rows)
    if n_run == 0:
        return None
    q_words, run_words = _words(q_docs), _words(docs)
    if q_words is None or run_words is None:
        return None
    # Qrels lines first, then run lines: the ids' words, zero past an id's end.
    all_keys = [np.empty(n_q + n_run, np.uint64) for _ in range(max(q_words, run_words, 1))]
    _doc_keys(q_docs, [k[:n_q] for k in all_keys])
    _doc_keys(docs, [k[n_q:] for k in all_keys])
    index_type = np.int32 if n_run + n_q < 2**31 else np.int64
    all_rows = np.concatenate([q_rows, rows]).astype(index_type, copy=False)
    names = [f"k{w}" for w in range(len(all_keys))]
    source = np.concatenate([np.zeros(n_q, np.int8), np.ones(n_run, np.int8)])
    columns = {"row": all_rows, **dict(zip(names, all_keys, strict=True)), "src": source}
    order = pc.sort_indices(
        pa.table(columns),
        sort_keys=[("row", "ascending"), *[(k, "ascending") for k in names], ("src", "ascending")],
    ).to_numpy()
    del source
    order = order.astype(index_type)
    a, b = order[:-1], order[1:]
    s_rows = all_rows[order]
    same = s_rows[1:] == s_rows[:-1]  # same (query, document) as the next line
    del s_rows
    for key in all_keys:
        s_key = key[order]
        same &= s_key[1:] == s_key[:-1]
        del s_key
    a_qrels, b_qrels = a < n_q, b < n_q
    if (same & (a_qrels == b_qrels)).any():
        return None  # a document twice in one query's run lines or qrels lines
    # A document's qrels line sorts just before its run line.
    pair = np.flatnonzero(same & a_qrels & ~b_qrels)
    # A run line's value: its qrels grade, UNJUDGED for a negative one, NONPOOL unnamed.
    grade = np.full(n_run, NONPOOL, dtype=np.int64)
    if len(pair):
        judged = q_grades[a[pair]]
        grade[b[pair] - n_q] = np.where(judged < 0, UNJUDGED, judged)
    del order, a, b, same, a_qrels, b_qrels
    all_keys = [k[n_q:] for k in all_keys]
    run_keys = all_keys
    by_score = pc.sort_indices(
        pa.table(
            {
                "row": all_rows[n_q:],
                "sim": -sims,
                **{k: v for k, v in zip(names, run_keys, strict=True)},
            }
        ),
        sort_keys=[("row", "ascending"), ("sim", "ascending")] + [(k, "descending") for k in names],
    ).to_numpy()
    ranked_rows = rows[by_score]
    counts = np.bincount(ranked_rows, minlength=n)
    position = np.arange(n_run, dtype=index_type)
    position -= np.repeat((np.cumsum(counts) - counts).astype(index_type), counts)
    return ranked_rows, position, grade[by_score]
