"""A run ranked a block of lines at a time as it is read (``read_ranked``,
``read_partitioned``, ``rank_read``): a block's queries with their qrels, joined and
ordered by ``joins``; what ``rankings.rank`` turns into the rank matrix."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .inputs import NotStreamable, QrelsFile, RunFile, _last_line, _mapped, is_not_data, run_blocks
from .joins import UNJUDGED, _digits, _positions, _radix_order, _rank_numeric, _rows_of


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
    opened = _opened(path)
    if opened is None:
        return None
    head, runid = opened
    numbers: dict[bytes, int] = {}
    buckets: list[list[tuple]] = [[] for _ in range(PARTS)]
    try:
        for qid, docno, sim in run_blocks(path, head):
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
            yield from _query_by_query(ids, codes, docs, sims)

    return rank_blocks(
        qrels, blocks(), runid, path,
        debug_qid=debug_qid, max_docs=max_docs, judged_only=judged_only,
    )  # fmt: skip


#: Lines per block when a run read whole is ranked block by block (``rank_read``).
STREAM_LINES = 1 << 16


def _opened(path: str) -> tuple[bytes, str] | None:
    """A run file's first bytes and run id (its last line's sixth field), or None when
    it is not a file read in blocks: standard input, empty, a short last line."""
    if path.startswith("-"):
        return None
    data = _mapped(path)
    if not data:
        return None
    fields = _last_line(data).split()
    if len(fields) < 6:
        return None
    return data[:4096], fields[5].decode("latin-1")


def _query_by_query(ids: pa.Array, codes: np.ndarray, docs: pa.Array, sims: np.ndarray):
    """Lines given as query numbers (``codes`` into ``ids``), put query by query (a
    stable radix sort on the number), as blocks of STREAM_LINES lines for ``rank_blocks``:
    (query ids, document ids, scores)."""
    top = int(codes.max()) if len(codes) else 0
    order = _radix_order(_digits(codes.astype(np.uint64), max(top.bit_length(), 1)))
    if order is None:
        order = np.arange(len(codes))
    size = max(STREAM_LINES, 1)
    for start in range(0, len(order), size):
        lines = order[start : start + size]
        taken = pa.array(lines)
        yield ids.take(pa.array(codes[lines])), docs.take(taken), sims[lines]


def read_ranked(
    path: str, qrels: QrelsFile, *, debug_qid: str | None, max_docs: int, judged_only: bool
) -> RankedRun | None:
    """The run file ranked block by block as it is read (``rank_blocks``), or None when
    it has to be read whole (standard input, an irregular file, queries interleaved)."""
    opened = _opened(path)
    if opened is None:
        return None
    head, runid = opened
    try:
        return rank_blocks(
            qrels, run_blocks(path, head), runid, path,
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
    try:
        return rank_blocks(
            qrels, _query_by_query(names, codes, run.docno, run.sim), run.runid, run,
            debug_qid=debug_qid, max_docs=max_docs, judged_only=judged_only,
        )  # fmt: skip
    except NotStreamable:
        return None
