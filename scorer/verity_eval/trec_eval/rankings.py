"""The evaluated queries and their rankings (trec_eval's form_res_rels.c, with numpy over
many queries at once instead of once per query): a run is ranked a block of lines at a
time as it is read (``read_ranked``, ``read_partitioned``, ``rank_read``: a block's
queries with their qrels, joined by a hash of (query, id) and ordered by radix sorts),
else the whole file at once (``rank``'s numeric and string paths).

Which queries: the qrels' queries, in ``strcmp`` order of their ids; a run-only query is
ignored; a qrels query missing from the run stops trec_eval (exit 4, after the lines of the
queries before it) unless ``-c``, where it is scored on a one-document ranking of a
document no qrels names, then its ``num_ret`` is reset to 0 (trec_eval's "bogus" ranking).

The ranking of a query: by score descending, ties by document id descending (``strcmp``),
cut at ``-M``; a document's value is its qrels grade, ``-1`` when the qrels do not name it,
``-2`` when they name it with a negative grade. ``-J`` keeps only the judged documents.

The result is a padded matrix ``rels[query, rank]``, ``PAD`` past a query's ``num_ret``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .inputs import (
    NotStreamable,
    QrelsFile,
    RunFile,
    _last_line,
    _mapped,
    is_not_data,
    read_run,
    run_blocks,
)

__all__ = ["BOGUS_DOCNO", "NONPOOL", "PAD", "UNJUDGED", "Rankings", "StopError", "rank"]

PAD = np.iinfo(np.int64).min
NONPOOL = -1
UNJUDGED = -2
BOGUS_DOCNO = "ceci_nest_pas_un_docno"


@dataclass
class StopError:
    """Where trec_eval stops: the queries before ``index`` are printed, then ``lines`` go
    to stderr with ``status``. ``measure_failure`` when the message is followed by
    "Can't calculate measure '<first ranking measure>'"."""

    index: int
    lines: list[str]
    status: int
    measure_failure: bool = False


@dataclass
class Rankings:
    qids: list[str]
    num_ret: np.ndarray  # (n,) int64
    bogus: np.ndarray  # (n,) bool
    qrel_row: np.ndarray  # judged qrels of the evaluated queries: their row
    qrel_grade: np.ndarray  # and their grade (negative grades included)
    num_qrels_queries: int
    all_qrels_grades: np.ndarray  # every qrels grade (num_rel under -c)
    runid: str
    stop: StopError | None = None
    # The ranked documents' grades, query by query in rank order (num_ret[q] each).
    grades: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # Where each query's lines start in ``grades`` (None: query after query, in order).
    starts: np.ndarray | None = None

    @property
    def n(self) -> int:
        return len(self.qids)

    @property
    def rels(self) -> np.ndarray:
        return self.matrix(np.arange(self.n))

    def matrix(self, queries: np.ndarray) -> np.ndarray:
        """rels[query, rank] for these queries, PAD past each one's num_ret."""
        counts = self.num_ret[queries]
        width = max(int(counts.max()) if len(counts) else 0, 1)
        out = np.full((len(queries), width), PAD, dtype=np.int64)
        total = int(counts.sum())
        if total:
            offsets = self.starts
            if offsets is None:
                offsets = np.concatenate([[0], np.cumsum(self.num_ret)])
            rows = np.repeat(np.arange(len(queries)), counts)
            rank = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            out[rows, rank] = self.grades[np.repeat(offsets[queries], counts) + rank]
        return out

    def batches(self, budget: int) -> list[np.ndarray]:
        """The queries in groups whose padded matrix (queries x deepest ranking) stays
        within ``budget`` cells, each group of similar depth (one deep ranking does not
        widen the others' rows)."""
        order = np.argsort(self.num_ret, kind="stable")
        groups: list[np.ndarray] = []
        start = 0
        while start < len(order):
            end = start + 1
            while (
                end < len(order)
                and (end + 1 - start) * max(int(self.num_ret[order[end]]), 1) <= budget
            ):
                end += 1
            groups.append(np.sort(order[start:end]))
            start = end
        return groups


def _evaluated(candidates: list[bytes], run_qids: set[bytes], complete: bool):
    """The evaluated queries (a prefix of the candidates), which of them are bogus (not
    in the run, under -c), and where trec_eval stops (a candidate not in the run)."""
    qids: list[bytes] = []
    bogus: list[bool] = []
    stop: StopError | None = None
    for qid in candidates:
        if qid in run_qids:
            qids.append(qid)
            bogus.append(False)
        elif complete:
            qids.append(qid)
            bogus.append(True)
        else:
            text = qid.decode("latin-1")
            stop = StopError(len(qids), [f"trec_eval: result qid '{text}' not found in qrels\n"], 4)
            break
    return qids, bogus, stop


def rank(
    qrels: QrelsFile,
    run: RunFile | RankedRun,
    *,
    max_docs: int,
    judged_only: bool,
    complete: bool,
    debug_qid: str | None,
    needs_rankings: bool,
) -> Rankings:
    qrels_qids, candidates = _candidates(qrels, debug_qid)
    if isinstance(run, RankedRun):
        qids, bogus, stop = _evaluated(candidates, run.run_qids, complete)
        done = _rank_ranked(qrels, qrels_qids, run, qids, bogus, stop, needs_rankings)
        if done is not None:
            return done
        # The whole file at once (the string path decides).
        run = read_run(run.source) if isinstance(run.source, str) else run.source
    run_qids = set(pc.unique(run.qid).to_pylist()) if len(run.qid) else set()
    qids, bogus, stop = _evaluated(candidates, run_qids, complete)
    n = len(qids)
    value_set = pa.array(qids, pa.binary())
    bogus_arr = np.array(bogus, dtype=bool)

    # The run's lines of the evaluated queries, plus the bogus document of missing ones.
    run_rows = _rows_of(run.qid, value_set)
    bogus_rows = np.flatnonzero(bogus_arr)
    if run_rows.min(initial=0) >= 0:  # every line is an evaluated query's: no copies
        rows, docs, sims = run_rows, run.docno, run.sim
    else:
        keep = np.flatnonzero(run_rows >= 0)
        rows, docs, sims = run_rows[keep], run.docno.take(keep), run.sim[keep]
    if len(bogus_rows):
        placeholders = pa.array([BOGUS_DOCNO.encode()] * len(bogus_rows), pa.binary())
        rows = np.concatenate([rows, bogus_rows.astype(rows.dtype)])
        docs = pa.concat_arrays([docs, placeholders])
        sims = np.concatenate([sims, np.ones(len(bogus_rows))])

    # The qrels of the evaluated queries.
    qrel_rows_all = _qrels_rows(qrels, value_set)
    qkeep = np.flatnonzero(qrel_rows_all >= 0)
    q_rows = qrel_rows_all[qkeep]
    q_docs = qrels.docno.take(qkeep)
    q_grades = qrels.rel[qkeep]

    fast = _rank_numeric(rows, docs, sims, q_rows, q_docs, q_grades, n)
    if fast is not None:
        del rows, docs, sims, q_docs
        return _rankings(
            qrels, qrels_qids, run.runid, qids, bogus, stop, *fast,
            max_docs=max_docs, judged_only=judged_only, needs_rankings=needs_rankings,
            qrels_of=(q_rows, q_grades),
        )  # fmt: skip
    rows, position, grades, stop = _rank_strings(
        rows, docs, sims, q_rows, q_docs, q_grades, n, max_docs, needs_rankings, stop
    )
    return _finish(
        qrels, qrels_qids, run.runid, qids, bogus, stop, rows, position, grades,
        q_rows, q_grades, judged_only,
    )  # fmt: skip


def _rankings(
    qrels, qrels_qids, runid, qids, bogus, stop, rows, position, grades,
    *, max_docs, judged_only, needs_rankings, qrels_of=None,
) -> Rankings:  # fmt: skip
    """The rankings from the numeric path's (query, position, value) lines."""
    n = len(qids)
    if qrels_of is None:
        qrel_rows_all = _qrels_rows(qrels, pa.array(qids, pa.binary()))
        qkeep = np.flatnonzero(qrel_rows_all >= 0)
        qrels_of = (qrel_rows_all[qkeep], qrels.rel[qkeep])
    q_rows, q_grades = qrels_of
    if position is None:
        position = _positions(rows, n)
    kept = position < max_docs
    if not kept.all():
        rows, position, grades = rows[kept], position[kept], grades[kept]
    if needs_rankings and n:
        first_judged = bool((q_rows[q_grades >= 0] == 0).any())
        if not first_judged and (stop is None or stop.index > 0):
            stop = StopError(0, [], 4, measure_failure=True)
    return _finish(
        qrels, qrels_qids, runid, qids, bogus, stop, rows, position, grades,
        q_rows, q_grades, judged_only,
    )  # fmt: skip


def _finish(
    qrels, qrels_qids, runid, qids, bogus, stop, rows, position, grades,
    q_rows, q_grades, judged_only,
) -> Rankings:  # fmt: skip
    n = len(qids)
    if judged_only:
        judged = grades >= 0
        rows, grades = rows[judged], grades[judged]

    num_ret = np.bincount(rows, minlength=n).astype(np.int64) if n else np.zeros(0, np.int64)
    return Rankings(
        qids=[q.decode("latin-1") for q in qids],
        grades=grades,
        num_ret=num_ret,
        bogus=np.array(bogus, dtype=bool),
        qrel_row=q_rows,
        qrel_grade=q_grades,
        num_qrels_queries=len(qrels_qids),
        all_qrels_grades=qrels.rel,
        runid=runid,
        stop=stop,
    )


def _rank_ranked(qrels, qrels_qids, run: RankedRun, qids, bogus, stop, needs_rankings):
    """The rankings of a run ranked block by block; None when the bogus rankings (-c)
    take the string path."""
    n = len(qids)
    grades, seg_rows, seg_counts = run.grades, run.seg_rows, run.seg_counts
    missing = np.flatnonzero(np.array(bogus, dtype=bool)).astype(np.int32)
    if len(missing):
        placeholders = pa.array([BOGUS_DOCNO.encode()] * len(missing), pa.binary())
        lines = (missing, placeholders, np.ones(len(missing)))
        result = _rank_lines(*lines, run.by_row, run.max_docs, run.judged_only)
        if result is None:
            return None
        grades = np.concatenate([grades, result[0]])
        seg_rows = np.concatenate([seg_rows, result[1]])
        seg_counts = np.concatenate([seg_counts, result[2]])
    seg_starts = np.cumsum(seg_counts) - seg_counts
    evaluated = seg_rows < n  # trec_eval stops before the later queries
    num_ret = np.zeros(n, np.int64)
    num_ret[seg_rows[evaluated]] = seg_counts[evaluated]
    starts = np.zeros(n, np.int64)
    starts[seg_rows[evaluated]] = seg_starts[evaluated]
    q_rows = _qrels_rows(qrels, pa.array(qids, pa.binary()))
    q_grades = qrels.rel
    if q_rows.min(initial=0) < 0:  # some qrels queries are not evaluated
        qkeep = np.flatnonzero(q_rows >= 0)
        q_rows, q_grades = q_rows[qkeep], q_grades[qkeep]
    if needs_rankings and n:
        first_judged = bool((q_rows[q_grades >= 0] == 0).any())
        if not first_judged and (stop is None or stop.index > 0):
            stop = StopError(0, [], 4, measure_failure=True)
    return Rankings(
        qids=[q.decode("latin-1") for q in qids],
        grades=grades,
        starts=starts,
        num_ret=num_ret,
        bogus=np.array(bogus, dtype=bool),
        qrel_row=q_rows,
        qrel_grade=q_grades,
        num_qrels_queries=len(qrels_qids),
        all_qrels_grades=qrels.rel,
        runid=run.runid,
        stop=stop,
    )


def _rank_strings(rows, docs, sims, q_rows, q_docs, q_grades, n, max_docs, needs_rankings, stop):
    """The general path: document ids compared as strings (any length, any bytes), and
    trec_eval's duplicate-document stops."""
    # One sort of the run's and the qrels' lines together by query, document id
    # (descending) and source (qrels first) puts each document's lines side by side: the
    # join with the qrels, the duplicate check, and the tie order of the ranking at once.
    n_run, n_q = len(rows), len(q_rows)
    all_rows = np.concatenate([q_rows, rows])
    all_docs = pa.concat_arrays([q_docs, docs])
    source = np.concatenate([np.zeros(n_q, np.int8), np.ones(n_run, np.int8)])
    order = pc.sort_indices(
        pa.table({"row": all_rows, "doc": all_docs, "src": source}),
        sort_keys=[("row", "ascending"), ("doc", "descending"), ("src", "ascending")],
    ).to_numpy()
    order = order.astype(np.int32 if len(order) < 2**31 else np.int64)
    s_rows = all_rows[order]
    s_docs = all_docs.take(order)
    del all_docs, docs, q_docs  # the sorted copy is the one used from here
    s_is_run = order >= n_q
    same = np.zeros(len(order), dtype=bool)  # same (query, document) as the line before
    if len(order) > 1:
        same[1:] = (s_rows[1:] == s_rows[:-1]) & pc.equal(s_docs[1:], s_docs[:-1]).to_numpy(
            zero_copy_only=False
        )
    group = np.cumsum(~same, dtype=order.dtype) - 1
    first_of_group = np.flatnonzero(~same)
    # A group's grade: its first line's, when that line is a qrels line.
    head = order[first_of_group]
    group_grade = np.where(head < n_q, q_grades[np.minimum(head, max(n_q - 1, 0))], PAD)

    # The run's lines in (query, document id descending) order; then a stable sort by
    # (query, score descending) gives trec_eval's ranking, ties by document id descending.
    run_sorted = np.flatnonzero(s_is_run)
    run_index = order[run_sorted] - n_q
    by_score = pc.sort_indices(
        pa.table({"row": rows[run_index], "sim": -sims[run_index]}),
        sort_keys=[("row", "ascending"), ("sim", "ascending")],
    ).to_numpy()
    # Positions in the combined sort, in rank order.
    ranked = run_sorted[by_score].astype(order.dtype)
    rows = s_rows[ranked]
    starts = np.searchsorted(rows, np.arange(n))
    position = np.arange(len(rows)) - starts[rows] if len(rows) else np.zeros(0, np.int64)
    kept = position < max_docs
    g = group_grade[group[ranked]]
    grades = np.where(g == PAD, NONPOOL, np.where(g < 0, UNJUDGED, g))
    if not kept.all():
        rows, position, grades, ranked = rows[kept], position[kept], grades[kept], ranked[kept]

    if needs_rankings and n:
        # A first query whose judgments are all negative has no grade table to count
        # into (form_res_rels gets a NULL buffer): trec_eval stops there, with no message
        # but "Can't calculate". Later such queries reuse the previous query's table.
        first_judged = bool((q_rows[q_grades >= 0] == 0).any())
        if not first_judged and (stop is None or stop.index > 0):
            stop = StopError(0, [], 4, measure_failure=True)
        kept_in_sort = np.zeros(len(order), dtype=bool)
        kept_in_sort[ranked] = True
        stop = _first_duplicate(stop, group, s_rows, s_docs, s_is_run, kept_in_sort)
    return rows, position, grades, stop


def _rows_of(qid: pa.Array, value_set: pa.Array) -> np.ndarray:
    """Each line's evaluated-query row, -1 for the others."""
    if pa.types.is_dictionary(qid.type):
        of_value = _rows_of(qid.dictionary, value_set)
        return of_value[qid.indices.to_numpy(zero_copy_only=False)]
    index = pc.index_in(qid, value_set=value_set)
    return index.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int32)


def _first_duplicate(stop, group, s_rows, s_docs, s_is_run, kept):
    """The first evaluated query (before any earlier stop) with a document twice in its
    ranking (within -M; checked first) or in its qrels: trec_eval stops there, naming the
    first such document in id order."""
    candidates = []
    for source, lines, template in (
        (0, s_is_run & kept, "trec_eval.form_res_qrels: duplicate docs {}"),  # no newline
        (1, ~s_is_run, "trec_eval.form_res_rels: duplicate docs {}\n"),
    ):
        counts = np.bincount(group[lines], minlength=int(group[-1]) + 1 if len(group) else 0)
        twice = np.flatnonzero(counts >= 2)
        if len(twice):
            at = np.flatnonzero(lines & np.isin(group, twice))
            row = int(s_rows[at].min())
            doc = min(s_docs.take(pa.array(at[s_rows[at] == row])).to_pylist())
            candidates.append((row, source, template.format(doc.decode("latin-1"))))
    if not candidates:
        return stop
    row, _, message = min(candidates)
    if stop is not None and row >= stop.index:
        return stop
    return StopError(row, [message], 4, measure_failure=True)


#: Document ids up to this many bytes are compared as numbers (the fast path).
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


@dataclass
class RankedRun:
    """A run ranked block by block as it was read (``rank_blocks``): for the lines of
    the candidate queries (the qrels' queries, in ``strcmp`` order), each line's
    candidate index, its position in its query's ranking and its value, query by query
    in rank order (the queries in file order)."""

    run_qids: set[bytes]
    candidates: list[bytes]
    by_row: _QrelsByRow
    max_docs: int
    judged_only: bool
    grades: np.ndarray  # the queries' values, query after query, each in rank order
    seg_rows: np.ndarray  # the queries (candidate indexes) in that order
    seg_counts: np.ndarray  # and their number of lines
    runid: str
    source: str | RunFile  # the run file's path, or the run read whole


def _segments(qrels: QrelsFile):
    """The qrels' runs of lines with one query id (one per query when the file is
    written query by query): each run's id (binary), first line and length."""
    if "segments" not in qrels.derived:
        qid = qrels.qid
        n = len(qid)
        starts = np.zeros(min(n, 1), np.int64)
        if n > 1:
            differs = pc.not_equal(qid.slice(1), qid.slice(0, n - 1))
            cut = pc.indices_nonzero(differs).to_numpy().astype(np.int64) + 1
            starts = np.concatenate([starts, cut])
        counts = np.diff(np.append(starts, n))
        qrels.derived["segments"] = (qid.take(pa.array(starts, pa.int64())), starts, counts)
    return qrels.derived["segments"]


def _qrels_rows(qrels: QrelsFile, value_set: pa.Array) -> np.ndarray:
    """Each qrels line's index in ``value_set``, -1 for the others (``_rows_of``)."""
    ids, _, counts = _segments(qrels)
    return np.repeat(_rows_of(ids, value_set), counts)


def _candidates(qrels: QrelsFile, debug_qid: str | None) -> list[bytes]:
    """The qrels' queries in strcmp order (binary order is strcmp's), or the -D one."""
    qrels_qids = sorted(set(_segments(qrels)[0].to_pylist()))
    debug = debug_qid.encode("latin-1") if debug_qid is not None else None
    return qrels_qids, [q for q in qrels_qids if debug is None or q == debug]


class _QrelsByRow:
    """The qrels lines of the candidate queries, grouped by candidate index."""

    def __init__(self, qrels: QrelsFile, value_set: pa.Array):
        ids, seg_starts, seg_counts = _segments(qrels)
        seg_rows = _rows_of(ids, value_set)
        keep = np.flatnonzero(seg_rows >= 0)
        # The kept runs of lines by row (file order within a row), then their lines.
        keep = keep[np.argsort(seg_rows[keep], kind="stable")]
        sizes = seg_counts[keep]
        total = int(sizes.sum())
        order = np.repeat(seg_starts[keep] - (np.cumsum(sizes) - sizes), sizes)
        order += np.arange(total)
        counts = np.bincount(np.repeat(seg_rows[keep], sizes), minlength=len(value_set)).astype(
            np.int64
        )
        self.counts = counts
        self.starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        self.docs = qrels.docno.take(order)
        self.grades = qrels.rel[order]
        # The ranked values kept in the narrowest integers that hold them (the padded
        # matrices are int64 again): a 10M-line run's values in 10 MB, not 80.
        low = min(int(self.grades.min(initial=0)), UNJUDGED)
        high = int(self.grades.max(initial=0))
        self.value_type = next(
            t for t in (np.int8, np.int16, np.int32, np.int64)
            if np.iinfo(t).min <= low and high <= np.iinfo(t).max
        )  # fmt: skip

    def of(self, rows: np.ndarray):
        """Local row (index into ``rows``), documents and grades of these rows' qrels."""
        counts = self.counts[rows]
        total = int(counts.sum())
        local = np.repeat(np.arange(len(rows), dtype=np.int32), counts)
        first = np.cumsum(counts) - counts
        index = np.repeat(self.starts[rows] - first, counts) + np.arange(total)
        return local, self.docs.take(index), self.grades[index]


def rank_blocks(
    qrels: QrelsFile,
    blocks,
    runid: str,
    source: str | RunFile,
    *,
    debug_qid: str | None,
    max_docs: int,
    judged_only: bool,
) -> RankedRun | None:
    """The run ranked a block of lines at a time (``_rank_numeric`` on each), when its
    lines come grouped by query, each query's lines together (as runs are written): the
    peak memory is one block's, not the whole file's. None when a query's lines are
    apart, or a block would take the string path (a long id, a duplicate): then the
    whole file is read and ranked at once, as before. The qrels' duplicates are checked
    for the queries in the run; ``rank`` checks the others'."""
    _, candidates = _candidates(qrels, debug_qid)
    value_set = pa.array(candidates, pa.binary())
    by_row = _QrelsByRow(qrels, value_set)
    seen: set[bytes] = set()  # queries whose lines have ended
    out: list[tuple] = []
    pieces: list[tuple] = []  # the lines so far of the query the last block ended with
    open_qid = None
    for qid, docno, sim in blocks:
        n_lines = len(qid)
        if n_lines == 0:
            continue
        differs = pc.not_equal(qid.slice(1), qid.slice(0, n_lines - 1))
        cut = pc.indices_nonzero(differs).to_numpy().astype(np.int64) + 1
        starts = np.concatenate([np.zeros(1, np.int64), cut])
        queries = qid.take(pa.array(starts))
        order = queries.to_pylist()
        if len(set(order)) != len(order):
            return None  # a query's lines apart within the block
        if any(is_not_data(q) for q in order):
            return None  # a comment line, a blank one: the whole-file readers decide
        counts = np.diff(np.append(starts, n_lines))
        line_rows = np.repeat(_rows_of(queries, value_set), counts)
        begin = 0
        if order[0] == open_qid:  # the query goes on
            end = int(starts[1]) if len(starts) > 1 else n_lines
            pieces.append((line_rows[:end], docno.slice(0, end), sim[:end]))
            if len(starts) == 1:
                continue
            begin, order, starts = end, order[1:], starts[1:]
        if pieces:  # the open query ended with the last block
            seen.add(open_qid)
        if seen.intersection(order):
            return None  # a query's lines apart across blocks
        split = int(starts[-1])
        if split > begin:  # the queries that end in this block, with the open one
            body = docno.slice(begin, split - begin)
            pieces.append((line_rows[begin:split], body, sim[begin:split]))
        if pieces and not _rank_into(out, _joined(pieces), by_row, max_docs, judged_only):
            return None
        seen.update(order[:-1])
        pieces = [(line_rows[split:], docno.slice(split), sim[split:])]
        open_qid = order[-1]
    if not pieces:
        return None  # no line: the whole-file reader words trec_eval's refusal
    if not _rank_into(out, _joined(pieces), by_row, max_docs, judged_only):
        return None
    seen.add(open_qid)
    return RankedRun(
        run_qids=seen,
        candidates=candidates,
        by_row=by_row,
        max_docs=max_docs,
        judged_only=judged_only,
        grades=np.concatenate([o[0] for o in out]),
        seg_rows=np.concatenate([o[1] for o in out]),
        seg_counts=np.concatenate([o[2] for o in out]),
        runid=runid,
        source=source,
    )


def _joined(pieces: list[tuple]) -> tuple:
    if len(pieces) == 1:
        return pieces[0]
    return (
        np.concatenate([p[0] for p in pieces]),
        pa.concat_arrays([p[1] for p in pieces]),
        np.concatenate([p[2] for p in pieces]),
    )


def _rank_into(out: list[tuple], lines: tuple, by_row, max_docs, judged_only) -> bool:
    result = _rank_lines(*lines, by_row, max_docs, judged_only)
    if result is None:
        return False
    out.append(result)
    return True


def _rank_lines(line_rows, docs, sims, by_row: _QrelsByRow, max_docs: int, judged_only: bool):
    """``_rank_numeric`` on some queries' lines (candidate indexes in ``line_rows``, -1
    for a run-only query's line, dropped), cut at -M, then the unjudged dropped under
    -J: the values in rank order query by query, the queries and their line counts; or
    None for the string path."""
    empty = (np.zeros(0, by_row.value_type), np.zeros(0, np.int32), np.zeros(0, np.int64))
    if len(line_rows) == 0:
        return empty
    keep = line_rows >= 0
    if not keep.all():
        kept = np.flatnonzero(keep)
        if len(kept) == 0:
            return empty
        line_rows, docs, sims = line_rows[kept], docs.take(kept), sims[kept]
    # The block's queries (each one's lines together).
    present = np.unique(line_rows[np.flatnonzero(np.diff(line_rows, prepend=-2))])
    local_of = np.full(int(present[-1]) + 1, -1, np.int32)
    local_of[present] = np.arange(len(present), dtype=np.int32)
    q_local, q_docs, q_grades = by_row.of(present)
    result = _rank_numeric(local_of[line_rows], docs, sims, q_local, q_docs, q_grades, len(present))
    if result is None:
        return None
    ranked, position, grades = result
    if judged_only or max_docs < len(ranked):
        if position is None:
            position = _positions(ranked, len(present))
        kept = position < max_docs
        if judged_only:
            kept &= grades >= 0
        if not kept.all():
            ranked, grades = ranked[kept], grades[kept]
    counts = np.bincount(ranked, minlength=len(present)).astype(np.int64)
    return grades.astype(by_row.value_type), present.astype(np.int32), counts


#: Buckets of queries a run whose queries interleave is split into (``read_partitioned``).
PARTS = 16


def read_partitioned(
    path: str, qrels: QrelsFile, *, debug_qid: str | None, max_docs: int, judged_only: bool
) -> RankedRun | None:
    """A run file whose queries interleave, read in blocks again and split as it is read
    into PARTS buckets of whole queries (a query's number modulo PARTS); each bucket is
    then put query by query and ranked as ``read_ranked`` ranks a file. Memory holds the
    lines once (not the whole-file reader's chunks and their combined copy). None where
    ``read_ranked`` returns None for another reason than interleaving."""
    if path.startswith("-"):
        return None
    data = _mapped(path)
    if not data:
        return None
    fields = _last_line(data).split()
    if len(fields) < 6:
        return None
    numbers: dict[bytes, int] = {}
    buckets: list[list[tuple]] = [[] for _ in range(PARTS)]
    try:
        for qid, docno, sim in run_blocks(path, data[:4096]):
            if len(qid) == 0:
                continue
            encoded = pc.dictionary_encode(qid)
            names = encoded.dictionary.to_pylist()
            if any(is_not_data(q) for q in names):
                return None
            lut = np.array([numbers.setdefault(q, len(numbers)) for q in names], np.int64)
            codes = lut[encoded.indices.to_numpy(zero_copy_only=False)]
            part = (codes % PARTS).astype(np.uint8)
            order = np.argsort(part, kind="stable")
            bounds = np.searchsorted(part[order], np.arange(PARTS + 1))
            for p in range(PARTS):
                lines = order[bounds[p] : bounds[p + 1]]
                if len(lines):
                    taken = pa.array(lines)
                    buckets[p].append((codes[lines], docno.take(taken), sim[lines]))
    except NotStreamable:
        return None
    if not numbers:
        return None
    ids = pa.array(list(numbers), pa.binary())

    def blocks():
        for p in range(PARTS):
            pieces, buckets[p] = buckets[p], []
            if not pieces:
                continue
            codes = np.concatenate([piece[0] for piece in pieces])
            docs = pa.concat_arrays([piece[1] for piece in pieces])
            sims = np.concatenate([piece[2] for piece in pieces])
            del pieces
            bits = max(int(codes.max()).bit_length(), 1)
            order = _radix_order(_digits(codes.astype(np.uint64), bits))
            if order is None:
                order = np.arange(len(codes))
            for start in range(0, len(order), STREAM_LINES):
                lines = order[start : start + STREAM_LINES]
                taken = pa.array(lines)
                yield ids.take(pa.array(codes[lines])), docs.take(taken), sims[lines]

    return rank_blocks(
        qrels, blocks(), fields[5].decode("latin-1"), path,
        debug_qid=debug_qid, max_docs=max_docs, judged_only=judged_only,
    )  # fmt: skip


#: Lines per block when a run read whole is ranked block by block (``rank_read``).
STREAM_LINES = 1 << 16


def read_ranked(
    path: str, qrels: QrelsFile, *, debug_qid: str | None, max_docs: int, judged_only: bool
) -> RankedRun | None:
    """The run file ranked block by block as it is read (``rank_blocks``), or None when
    it has to be read whole (standard input, an irregular file, queries interleaved)."""
    if path.startswith("-"):
        return None
    data = _mapped(path)
    if not data:
        return None
    fields = _last_line(data).split()
    if len(fields) < 6:
        return None
    try:
        blocks = run_blocks(path, data[:4096])
        runid = fields[5].decode("latin-1")
        return rank_blocks(
            qrels, blocks, runid, path,
            debug_qid=debug_qid, max_docs=max_docs, judged_only=judged_only,
        )  # fmt: skip
    except NotStreamable:
        return None


def rank_read(
    run: RunFile, qrels: QrelsFile, *, debug_qid: str | None, max_docs: int, judged_only: bool
) -> RankedRun | None:
    """A run read whole (standard input, queries interleaved, an irregular file) ranked
    as ``read_ranked`` ranks a file: its lines put query by query (a stable radix sort
    on the query), then handed to ``rank_blocks`` a block at a time. None where
    ``rank_blocks`` is (a duplicate, a long id: the whole-file path decides)."""
    n = len(run.qid)
    if n == 0:
        return None
    if pa.types.is_dictionary(run.qid.type):
        names, codes = run.qid.dictionary, run.qid.indices.to_numpy(zero_copy_only=False)
    else:
        encoded = pc.dictionary_encode(run.qid)
        names, codes = encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False)
    bits = max(int(len(names) - 1).bit_length(), 1)
    order = _radix_order(_digits(codes.astype(np.uint64), bits))
    if order is None:
        order = np.arange(n)
    size = max(STREAM_LINES, 1)

    def blocks():
        for start in range(0, n, size):
            lines = order[start : start + size]
            taken = pa.array(lines)
            yield names.take(pa.array(codes[lines])), run.docno.take(taken), run.sim[lines]

    try:
        return rank_blocks(
            qrels, blocks(), run.runid, run,
            debug_qid=debug_qid, max_docs=max_docs, judged_only=judged_only,
        )  # fmt: skip
    except NotStreamable:
        return None
