"""Columnar qrels and runs, and the vectorised joins between them.

Ids stay strings (Arrow string arrays); they are never renumbered. For speed, duplicate
checks and the qrels join go through a 64-bit hash of each id, but every match the hash
proposes is confirmed by comparing the strings, so a hash collision can cost time, never
a wrong number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .errors import ErrorCollector

#: Grade of an item the qrels do not judge: absent from them, or graded below 0
#: ("pooled but unjudged", trec_eval's -1).
UNJUDGED = -1

_U64 = np.uint64
_M1 = _U64(0xBF58476D1CE4E5B9)
_M2 = _U64(0x94D049BB133111EB)
_GOLD = _U64(0x9E3779B97F4A7C15)
# Query index in the top 24 bits, 40 bits of the id hash below: one sortable uint64 key.
_QBITS = 24
_QSHIFT = _U64(40)
_HSHIFT = _U64(24)
MAX_KEYED_QUERIES = 1 << _QBITS
_BITMAP_SIZE = 1 << 24
_BITMAP_MASK = _U64(_BITMAP_SIZE - 1)
# Rows per block where a pass over every row goes block by block through one reused
# buffer (8 MB of uint64) rather than through a fresh 10M-row array, each of whose pages
# the kernel must supply and zero.
_ROW_BLOCK = 1 << 20

# pyarrow ships no type stubs: this is a pa.Array or pa.ChunkedArray of strings.
StrArray: TypeAlias = Any
FinalPos = Callable[[np.ndarray], np.ndarray]


def _mix(x: np.ndarray, tmp: np.ndarray | None = None) -> np.ndarray:
    """splitmix64 finaliser, in place (uint64 arithmetic wraps by design); ``tmp``, of the
    same shape, spares the shifts a temporary array each."""
    if tmp is None:
        tmp = np.empty_like(x)
    for shift, mult in ((_U64(30), _M1), (_U64(27), _M2)):
        np.right_shift(x, shift, out=tmp)
        x ^= tmp
        x *= mult
    np.right_shift(x, _U64(31), out=tmp)
    x ^= tmp
    return x


# Ids are hashed this many at a time, in arrays small enough to stay in cache and reused
# from block to block (10M-row temporaries would each be paged in anew).
_HASH_BLOCK = 1 << 14
# _TAIL[n]: the low n bytes of a word (n >= 8: all of it).
_TAIL = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _hash_chunk(arr: pa.Array) -> np.ndarray:
    """``hash_ids`` of one Arrow string array (any offset, string or large_string)."""
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    if arr.null_count:
        raise ValueError("ids must not be null")
    large = pa.types.is_large_string(arr.type)
    off_type = np.int64 if large else np.int32
    bufs = arr.buffers()
    offsets = np.frombuffer(
        bufs[1], dtype=off_type, count=n + 1, offset=arr.offset * np.dtype(off_type).itemsize
    )
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    out = np.empty(n, dtype=np.uint64)
    scratch = _HashScratch(min(n, _HASH_BLOCK))
    for b0 in range(0, n, _HASH_BLOCK):
        b1 = min(n, b0 + _HASH_BLOCK)
        scratch.hash_block(data, offsets[b0 : b1 + 1].astype(np.int64), out[b0:b1])
    return out


class _HashScratch:
    """Work arrays for hashing one block of ids, reused by every block of a chunk."""

    def __init__(self, size: int) -> None:
        self.padded = np.zeros(0, dtype=np.uint8)
        self.word = np.empty(size, dtype=np.uint64)
        self.tmp = np.empty(size, dtype=np.uint64)
        self.cut = np.empty(size, dtype=np.int64)

    def hash_block(self, data: np.ndarray, offsets: np.ndarray, h: np.ndarray) -> None:
        """Hash the ids ``data[offsets[i]:offsets[i+1]]`` into ``h`` (one per id)."""
        m = h.size
        lo, hi = int(offsets[0]), int(offsets[-1])
        # The ids' bytes with 8 bytes of zero padding, so that an 8-byte word can be read
        # at any id start; the buffer viewed as overlapping little-endian uint64 words.
        if self.padded.size < hi - lo + 8:
            self.padded = np.zeros(2 * (hi - lo) + 8, dtype=np.uint8)
        self.padded[: hi - lo] = data[lo:hi]
        self.padded[hi - lo : hi - lo + 8] = 0
        words = np.ndarray(shape=(hi - lo + 1,), dtype="<u8", buffer=self.padded, strides=(1,))
        pos = offsets[:-1] - lo
        rem = np.diff(offsets)
        np.multiply(rem.astype(np.uint64), _GOLD, out=h)
        word, tmp, cut = self.word[:m], self.tmp[:m], self.cut[:m]
        with np.errstate(over="ignore"):
            # Word j of every id: whole-block operations while every id still has a word j
            # (the common case: ids of similar length), index subsets once some have ended.
            while bool((rem > 0).all()):
                np.take(words, pos, out=word)
                np.minimum(rem, 8, out=cut)
                word &= np.take(_TAIL, cut, out=tmp)
                h ^= word
                h += _GOLD
                _mix(h, tmp)
                rem -= 8
                pos += 8
            idx = np.flatnonzero(rem > 0)
            while idx.size:
                w = words[pos[idx]]
                w &= _TAIL[np.minimum(rem[idx], 8)]
                hv = h[idx]
                hv ^= w
                hv += _GOLD
                h[idx] = _mix(hv)
                rem[idx] -= 8
                pos[idx] += 8
                idx = idx[rem[idx] > 0]


def _chunks(arr: StrArray) -> list[pa.Array]:
    return list(arr.chunks) if isinstance(arr, pa.ChunkedArray) else [arr]


def hash_ids(arr: StrArray) -> np.ndarray:
    """64-bit hash of every string (equal strings -> equal hashes); uint64 array."""
    parts = [_hash_chunk(c) for c in _chunks(arr)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


def _keys(qidx: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Keys from query indices and hashes, built in place in ``hashes``' own buffer."""
    hashes >>= _HSHIFT
    top = qidx.astype(np.uint64)
    top <<= _QSHIFT
    hashes |= top
    return hashes


def take_sorted(arr: StrArray, rows: np.ndarray) -> StrArray:
    """``arr.take(rows)`` for ascending ``rows``, chunk by chunk.

    A ChunkedArray's own ``take`` allocates for the whole array first (on a 10M-row run,
    ~50 MB of fresh pages and ~0.1 s for 100k rows); each chunk's take touches only what
    it returns.
    """
    if not isinstance(arr, pa.ChunkedArray):
        return arr.take(pa.array(rows, type=pa.int64()))
    starts = np.cumsum([0] + [len(chunk) for chunk in arr.chunks])
    cuts = np.searchsorted(rows, starts)
    parts = [
        chunk.take(pa.array(rows[cuts[i] : cuts[i + 1]] - starts[i], type=pa.int64()))
        for i, chunk in enumerate(arr.chunks)
    ]
    return pa.chunked_array(parts, type=arr.type)


def _take_str(arr: StrArray, idx: np.ndarray) -> list[str]:
    values: list[str] = arr.take(pa.array(idx, type=pa.int64())).to_pylist()
    return values


def _equal_pairs(arr_a: StrArray, idx_a: np.ndarray, arr_b: StrArray, idx_b: np.ndarray) -> bool:
    if idx_a.size == 0:
        return True
    a = arr_a.take(pa.array(idx_a, type=pa.int64()))
    b = arr_b.take(pa.array(idx_b, type=pa.int64()))
    return bool(pc.all(pc.equal(a, b)).as_py())


def id_keys(qcodes: np.ndarray, docids: StrArray) -> np.ndarray:
    """One uint64 key per row: query index in the top 24 bits, 40 bits of the id's hash
    below. Equal (query, id) pairs have equal keys; unequal ones rarely do, and every
    use of a key confirms the match on the strings."""
    if qcodes.size and int(qcodes.max()) >= MAX_KEYED_QUERIES:
        raise OverflowError("too many queries for keyed joins")
    keys = np.empty(qcodes.size, dtype=np.uint64)
    start = 0
    # Chunk by chunk, so that the temporaries stay small (and in cache).
    for chunk in _chunks(docids):
        end = start + len(chunk)
        keys[start:end] = _keys(qcodes[start:end], _hash_chunk(chunk))
        start = end
    return keys


def query_offsets(qcodes: np.ndarray, nq: int) -> np.ndarray:
    """``offsets`` of rows grouped by query: query j's rows are ``offsets[j]:offsets[j+1]``.

    Counted a block at a time: ``np.bincount`` first copies int32 codes into an int64
    array, which for the whole of a 10M-row run is 80 MB of fresh pages.
    """
    counts = np.zeros(nq, dtype=np.int64)
    for a in range(0, qcodes.size, _ROW_BLOCK):
        counts += np.bincount(qcodes[a : a + _ROW_BLOCK], minlength=nq)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def later_duplicates(
    qcodes: np.ndarray, docids: StrArray, keys: np.ndarray, final_pos: FinalPos
) -> np.ndarray:
    """Mask of rows whose (query, id) already occurs at an earlier final position.

    ``qcodes``, ``keys`` (from ``id_keys``) are per physical row; ``final_pos(rows)`` gives
    the rank-order position of rows (called only when there are candidate duplicates).
    Exact: key groups are confirmed by comparing strings, with a pure-Python pass if a
    collision shows up.
    """
    n = qcodes.size
    later = np.zeros(n, dtype=bool)
    if n < 2:
        return later
    dup_keys = _repeated_keys(qcodes, keys)
    if dup_keys.size == 0:
        return later
    cand = np.flatnonzero(np.isin(keys, dup_keys))
    pos = final_pos(cand)
    order = np.lexsort((pos, keys[cand]))
    rows = cand[order]
    ks = keys[rows]
    first = np.ones(rows.size, dtype=bool)
    first[1:] = ks[1:] != ks[:-1]
    head = rows[np.maximum.accumulate(np.where(first, np.arange(rows.size), 0))]
    if _equal_pairs(docids, rows, docids, head):
        later[rows[~first]] = True
        return later
    return _later_duplicates_exact(cand, pos, qcodes, docids, later)


def _repeated_keys(qcodes: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The keys that occur more than once (sorted, each once).

    Equal keys have equal query bits, so they belong to one query. When the rows come
    query by query (``qcodes`` never decreasing, as in a run written that way), blocks of
    about ``_ROW_BLOCK`` rows, cut between queries, are sorted one at a time in a reused
    buffer: no 10M-row copy to page in. Otherwise all the keys are sorted at once.
    """
    n = keys.size
    found: list[np.ndarray] = []
    scratch = np.empty(0, dtype=np.uint64)
    a = 0
    while a < n:
        b = min(n, a + _ROW_BLOCK)
        if b < n:
            # Move the cut back to the first row of row b's query, or, when one query
            # fills the block, forward to its last row.
            b = a + int(np.searchsorted(qcodes[a:b], qcodes[b], side="left"))
            if b == a:
                b = a + int(np.searchsorted(qcodes[a:], qcodes[a], side="right"))
        block = qcodes[a:b]
        grouped = bool((block[1:] >= block[:-1]).all()) and (b == n or qcodes[b] > qcodes[b - 1])
        if not grouped:
            return _repeated(np.sort(keys))
        if scratch.size < b - a:
            scratch = np.empty(b - a, dtype=np.uint64)
        sorted_block = scratch[: b - a]
        sorted_block[:] = keys[a:b]
        sorted_block.sort()
        repeated = _repeated(sorted_block)
        if repeated.size:
            found.append(repeated)
        a = b
    return np.concatenate(found) if found else np.zeros(0, dtype=np.uint64)


def _repeated(sorted_keys: np.ndarray) -> np.ndarray:
    rep = sorted_keys[1:] == sorted_keys[:-1]
    return np.unique(sorted_keys[1:][rep]) if rep.any() else np.zeros(0, dtype=np.uint64)


def _later_duplicates_exact(
    cand: np.ndarray,
    pos: np.ndarray,
    qcodes: np.ndarray,
    docids: StrArray,
    later: np.ndarray,
) -> np.ndarray:
    rows = cand[np.argsort(pos, kind="stable")]
    seen: set[tuple[int, str]] = set()
    for row, q, d in zip(
        rows.tolist(), qcodes[rows].tolist(), _take_str(docids, rows), strict=True
    ):
        if (q, d) in seen:
            later[row] = True
        else:
            seen.add((q, d))
    return later


@dataclass(frozen=True, eq=False)
class Qrels:
    """Judgments for many queries, stored by column.

    Invariants: the rows of query ``qids[i]`` are ``offsets[i]:offsets[i+1]``; no (query,
    docid) pair occurs twice; ``grades`` are integers, a negative grade meaning "pooled but
    unjudged" (trec_eval's -1).
    """

    qids: tuple[str, ...]
    offsets: np.ndarray
    docids: StrArray
    grades: np.ndarray
    source: str = "qrels"

    @classmethod
    def from_mapping(cls, data: Mapping[str, Mapping[str, int]], source: str = "qrels") -> Qrels:
        """Build from ``{qid: {docid: grade}}``; grades must be ``int`` (bools refused)."""
        errors = ErrorCollector()
        qids: list[str] = []
        docs: list[str] = []
        grades: list[int] = []
        offsets = [0]
        for qid, judged in data.items():
            if not isinstance(qid, str) or not qid:
                errors.add(f"{source}: query id {qid!r} must be a non-empty string")
                continue
            for docid, grade in judged.items():
                if not isinstance(docid, str) or not docid:
                    errors.add(
                        f"{source}: query {qid!r}: item id {docid!r} must be a non-empty string"
                    )
                elif type(grade) is not int:
                    errors.add(
                        f"{source}: query {qid!r}, item {docid!r}: grade {grade!r} is not an "
                        "integer; use whole-number grades (-1 = pooled but unjudged)"
                    )
                else:
                    docs.append(docid)
                    grades.append(grade)
            qids.append(qid)
            offsets.append(len(docs))
        errors.raise_if_any()
        return cls(
            qids=tuple(qids),
            offsets=np.asarray(offsets, dtype=np.int64),
            docids=pa.array(docs, type=pa.string()),
            grades=np.asarray(grades, dtype=np.int64),
            source=source,
        )

    def row_queries(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.qids), dtype=np.int64), np.diff(self.offsets))

    def to_mapping(self) -> dict[str, dict[str, int]]:
        docs = self.docids.to_pylist()
        grades = self.grades.tolist()
        out: dict[str, dict[str, int]] = {}
        for i, qid in enumerate(self.qids):
            a, b = int(self.offsets[i]), int(self.offsets[i + 1])
            out[qid] = dict(zip(docs[a:b], grades[a:b], strict=True))
        return out

    def __len__(self) -> int:
        return int(self.grades.size)


@dataclass(frozen=True, eq=False)
class Run:
    """Rankings of one run stage for many queries, stored by column.

    Invariants: the ranking of query ``qids[j]``, best first, is
    ``docids[perm[offsets[j]:offsets[j+1]]]`` (``docids``/``qcodes`` are in the physical
    order they were read; ``perm`` puts them in rank order); no id occurs twice within a
    query (duplicates were refused, or removed under ``dedup="first"``). ``order``,
    ``dedup`` and ``stage`` record the rules that produced this ranking.
    """

    qids: tuple[str, ...]
    offsets: np.ndarray
    docids: StrArray
    qcodes: np.ndarray
    perm: np.ndarray
    order: str
    dedup: str
    source: str = "run"
    stage: str | None = None
    stages: tuple[str, ...] = ()
    duplicates_removed: int = 0
    abstained: frozenset[str] = frozenset()
    _keys: list[np.ndarray] = field(default_factory=list, repr=False)

    @classmethod
    def from_mapping(
        cls,
        rankings: Mapping[str, Sequence[str]],
        *,
        dedup: str = "error",
        source: str = "rankings",
        abstained: frozenset[str] = frozenset(),
    ) -> Run:
        """Build from ``{qid: [id, ...]}`` taken in list order; duplicates per ``dedup``."""
        errors = ErrorCollector()
        qids: list[str] = []
        flat: list[str] = []
        offsets = [0]
        removed = 0
        for qid, ranking in rankings.items():
            if not isinstance(qid, str) or not qid:
                errors.add(f"{source}: query id {qid!r} must be a non-empty string")
                continue
            if isinstance(ranking, str | bytes) or not isinstance(ranking, Sequence):
                errors.add(f"{source}: ranking of query {qid!r} must be a list of ids")
                continue
            first_at: dict[str, int] = {}
            for pos, docid in enumerate(ranking, start=1):
                if not isinstance(docid, str) or not docid:
                    errors.add(
                        f"{source}: query {qid!r}, position {pos}: id {docid!r} must be a "
                        "non-empty string"
                    )
                    continue
                if docid in first_at:
                    if dedup == "first":
                        removed += 1
                        continue
                    errors.add(
                        f"{source}: query {qid!r}, position {pos}: duplicate id {docid!r} "
                        f"(first at position {first_at[docid]}); pass dedup='first' "
                        "(--dedup first) to keep the first occurrence"
                    )
                    continue
                first_at[docid] = pos
                flat.append(docid)
            qids.append(qid)
            offsets.append(len(flat))
        errors.raise_if_any()
        off = np.asarray(offsets, dtype=np.int64)
        return cls(
            qids=tuple(qids),
            offsets=off,
            docids=pa.array(flat, type=pa.string()),
            qcodes=np.repeat(np.arange(len(qids), dtype=np.int32), np.diff(off)),
            perm=np.arange(len(flat), dtype=np.int64),
            order="list",
            dedup=dedup,
            source=source,
            duplicates_removed=removed,
            abstained=abstained,
        )

    def keys(self) -> np.ndarray:
        """``id_keys`` of every physical row (computed once)."""
        if not self._keys:
            self._keys.append(id_keys(self.qcodes, self.docids))
        return self._keys[0]

    def final_positions(self, rows: np.ndarray) -> np.ndarray:
        """Rank-order position of the given physical rows."""
        inverse = np.empty(self.perm.size, dtype=np.int64)
        inverse[self.perm] = np.arange(self.perm.size, dtype=np.int64)
        positions: np.ndarray = inverse[rows]
        return positions

    def ranking(self, qid: str) -> list[str]:
        """The ranking of one query, best first (empty if the run lacks it)."""
        try:
            j = self.qids.index(qid)
        except ValueError:
            return []
        rows = self.perm[self.offsets[j] : self.offsets[j + 1]]
        return _take_str(self.docids, rows)

    def iter_rankings(self, batch: int = 500) -> Iterator[tuple[str, list[str]]]:
        """Yield (qid, ranking) in query order, building at most ``batch`` rankings' worth
        of Python strings at a time (bounded memory for 10M-line runs)."""
        for j0 in range(0, len(self.qids), batch):
            j1 = min(j0 + batch, len(self.qids))
            lo, hi = int(self.offsets[j0]), int(self.offsets[j1])
            ids = _take_str(self.docids, self.perm[lo:hi])
            for j in range(j0, j1):
                yield self.qids[j], ids[int(self.offsets[j]) - lo : int(self.offsets[j + 1]) - lo]

    def to_mapping(self) -> dict[str, list[str]]:
        ordered = _take_str(self.docids, self.perm)
        return {
            qid: ordered[int(self.offsets[j]) : int(self.offsets[j + 1])]
            for j, qid in enumerate(self.qids)
        }

    def __len__(self) -> int:
        return int(self.perm.size)

    def map_units(self, mapping: Mapping[str, str]) -> tuple[Run, int]:
        """Apply a fine -> coarse id map; ids it lacks stay as they are.

        Ids that collapse onto one coarse id keep the first (best) rank: dedup after
        mapping is always ``first``. Returns the new run and how many rows collapsed.
        """
        keys = pa.array(list(mapping.keys()), type=pa.string())
        values = pa.array(list(mapping.values()), type=pa.string())
        docids = self.docids
        if isinstance(docids, pa.ChunkedArray):
            docids = docids.combine_chunks()
        idx = pc.index_in(docids, value_set=keys)
        mapped = pc.coalesce(values.take(idx), docids)
        keys = id_keys(self.qcodes, mapped)
        later = later_duplicates(self.qcodes, mapped, keys, self.final_positions)
        collapsed = int(later.sum())
        perm = self.perm
        offsets = self.offsets
        if collapsed:
            keep_final = ~later[perm]
            perm = perm[keep_final]
            nq = len(self.qids)
            query_of_final = np.repeat(np.arange(nq, dtype=np.int64), np.diff(offsets))
            kept_per_query = np.bincount(query_of_final[keep_final], minlength=nq)
            offsets = np.concatenate([[0], np.cumsum(kept_per_query)]).astype(np.int64)
        return (
            replace(self, docids=mapped, perm=perm, offsets=offsets, _keys=[keys]),
            collapsed,
        )


def qrels_grades_for_run(run: Run, qrels: Qrels, run_to_qrels: np.ndarray) -> np.ndarray:
    """Grade of every physical run row (int32; ``UNJUDGED`` when the qrels lack the pair or
    grade it below 0). ``run_to_qrels[j]`` is the qrels query index of run query j, or -1
    for queries not to be joined."""
    n = run.qcodes.size
    grades = np.full(n, UNJUDGED, dtype=np.int32)
    if n == 0 or len(qrels) == 0 or not bool((run_to_qrels >= 0).any()):
        return grades
    if len(run.qids) >= MAX_KEYED_QUERIES:
        return _grades_exact(run, qrels, run_to_qrels, grades)
    # Key the judgments with the run's query codes so that they compare with run.keys().
    qrels_to_run = np.full(len(qrels.qids), -1, dtype=np.int64)
    joined = np.flatnonzero(run_to_qrels >= 0)
    qrels_to_run[run_to_qrels[joined]] = joined
    jq = qrels_to_run[qrels.row_queries()]
    jrows = np.flatnonzero(jq >= 0)
    if jrows.size == 0:
        return grades
    jdocs = qrels.docids.take(pa.array(jrows, type=pa.int64()))
    qkey = _keys(jq[jrows], hash_ids(jdocs))
    qorder = np.argsort(qkey, kind="stable")
    qsorted = qkey[qorder]
    if qsorted.size > 1 and bool((qsorted[1:] == qsorted[:-1]).any()):
        # Two different ids of one query share a key: the keyed join could miss one.
        return _grades_exact(run, qrels, run_to_qrels, grades)
    rkey = run.keys()
    # A bitmap of the judgments' low key bits discards most run rows before the binary
    # search (a 10M-row run has ~2% of rows judged); block by block, in one reused buffer.
    bitmap = np.zeros(_BITMAP_SIZE, dtype=bool)
    bitmap[(qsorted & _BITMAP_MASK).astype(np.int64)] = True
    low = np.empty(min(n, _ROW_BLOCK), dtype=np.uint64)
    found = []
    for a in range(0, n, _ROW_BLOCK):
        block = low[: min(n - a, _ROW_BLOCK)]
        np.bitwise_and(rkey[a : a + block.size], _BITMAP_MASK, out=block)
        found.append(np.flatnonzero(bitmap.take(block.view(np.int64))) + a)
    del low
    cand = np.concatenate(found)
    ck = rkey[cand]
    pos = np.searchsorted(qsorted, ck)
    pos[pos >= qsorted.size] = 0
    hit = qsorted[pos] == ck
    rows = cand[hit]
    jsel = jrows[qorder[pos[hit]]]
    if rows.size:
        same = pc.equal(
            take_sorted(run.docids, rows), qrels.docids.take(pa.array(jsel, type=pa.int64()))
        )
        ok = np.asarray(same.to_numpy(zero_copy_only=False), dtype=bool)
        g = qrels.grades[jsel[ok]]
        grades[rows[ok]] = np.where(g < 0, UNJUDGED, g)
    return grades


def _grades_exact(
    run: Run, qrels: Qrels, run_to_qrels: np.ndarray, grades: np.ndarray
) -> np.ndarray:
    table = qrels.to_mapping()
    docs = run.docids.to_pylist()
    for row, (code, doc) in enumerate(zip(run.qcodes.tolist(), docs, strict=True)):
        qi = int(run_to_qrels[code])
        if qi >= 0:
            g = table[qrels.qids[qi]].get(doc)
            if g is not None and g >= 0:
                grades[row] = g
    return grades
