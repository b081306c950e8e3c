"""The evaluated queries and their rankings (trec_eval's form_res_rels.c, with numpy over
many queries at once instead of once per query): a run is ranked a block of lines at a
time as it is read (``blocks``: ``read_ranked``, ``read_partitioned``, ``rank_read``),
else the whole file at once (``rank``'s numeric and string paths); both join the lines
with the qrels and order each query with ``joins`` (a hash of (query, id) and radix
sorts). ``rank`` turns either into the rank matrix the measures read.

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

from .blocks import (
    RankedRun,
    _candidates,
    _qrels_rows,
    _rank_lines,
    rank_read,
    read_partitioned,
    read_ranked,
)
from .inputs import (
    QrelsFile,
    RunFile,
    read_run,
)
from .joins import (
    NONPOOL,
    UNJUDGED,
    _positions,
    _rank_numeric,
    _rows_of,
)

__all__ = [
    "BOGUS_DOCNO",
    "NONPOOL",
    "PAD",
    "UNJUDGED",
    "Rankings",
    "StopError",
    "rank",
    "rank_read",
    "read_partitioned",
    "read_ranked",
]

PAD = np.iinfo(np.int64).min
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
