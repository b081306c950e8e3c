"""The evaluated queries and their rankings, all at once (trec_eval's form_res_rels.c, for
every query in one pass of numpy instead of once per query).

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

from .inputs import QrelsFile, RunFile

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


def rank(
    qrels: QrelsFile,
    run: RunFile,
    *,
    max_docs: int,
    judged_only: bool,
    complete: bool,
    debug_qid: str | None,
    needs_rankings: bool,
) -> Rankings:
    # The qrels' queries in strcmp order (binary order is strcmp's).
    qrels_qids = pc.unique(qrels.qid)
    qrels_qids = qrels_qids.take(pc.sort_indices(qrels_qids)).to_pylist()
    debug = debug_qid.encode("latin-1") if debug_qid is not None else None
    candidates = [q for q in qrels_qids if debug is None or q == debug]
    run_qids = set(pc.unique(run.qid).to_pylist()) if len(run.qid) else set()

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
    qrel_rows_all = _rows_of(qrels.qid, value_set)
    qkeep = np.flatnonzero(qrel_rows_all >= 0)
    q_rows = qrel_rows_all[qkeep]
    q_docs = qrels.docno.take(qkeep)
    q_grades = qrels.rel[qkeep]

    fast = _rank_numeric(rows, docs, sims, q_rows, q_docs, q_grades, n)
    if fast is not None:
        rows, position, grades = fast
        kept = position < max_docs
        if not kept.all():
            rows, position, grades = rows[kept], position[kept], grades[kept]
        if needs_rankings and n:
            judged_rows = set(q_rows[q_grades >= 0].tolist())
            if 0 not in judged_rows and (stop is None or stop.index > 0):
                stop = StopError(0, [], 4, measure_failure=True)
    else:
        rows, position, grades, stop = _rank_strings(
            rows, docs, sims, q_rows, q_docs, q_grades, n, max_docs, needs_rankings, stop
        )

    if judged_only:
        judged = grades >= 0
        rows, grades = rows[judged], grades[judged]
        starts = np.searchsorted(rows, np.arange(n))
        position = np.arange(len(rows)) - starts[rows] if len(rows) else rows

    num_ret = np.bincount(rows, minlength=n).astype(np.int64) if n else np.zeros(0, np.int64)
    return Rankings(
        qids=[q.decode("latin-1") for q in qids],
        grades=grades,
        num_ret=num_ret,
        bogus=bogus_arr,
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
        judged_rows = set(q_rows[q_grades >= 0].tolist())
        if 0 not in judged_rows and (stop is None or stop.index > 0):
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
    if longest > KEY_BYTES or longest == 0 or size < 8:
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
    last = size - 8
    # Every byte offset viewed as the start of a 64-bit word (no copy).
    words_at = np.ndarray((last + 1,), dtype="<u8", buffer=data, strides=(1,))
    tail = bytes(data[last:]) + bytes(8 * len(out))
    keep = np.empty_like(lengths)
    for w, word in enumerate(out):
        at = starts + 8 * w if w else starts
        past = np.flatnonzero(at > last)  # the last ids' words run past the data's end
        if len(past):
            at = at.copy()
            at[past] = last
        word[:] = words_at[at]  # (np.take would copy the strided view whole)
        word.byteswap(inplace=True)  # big-endian: numeric order is byte order
        for i in past.tolist():
            start = int(starts[i]) + 8 * w - last
            word[i] = int.from_bytes(tail[start : start + 8], "big")
        np.subtract(lengths, 8 * w, out=keep)
        np.clip(keep, 0, 8, out=keep)
        word &= _MASKS[keep]


def _rank_numeric(rows, docs, sims, q_rows, q_docs, q_grades, n):
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
