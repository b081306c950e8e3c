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
    rels: np.ndarray  # (n, width) int64, PAD past num_ret
    num_ret: np.ndarray  # (n,) int64
    bogus: np.ndarray  # (n,) bool
    qrel_row: np.ndarray  # judged qrels of the evaluated queries: their row
    qrel_grade: np.ndarray  # and their grade (negative grades included)
    num_qrels_queries: int
    all_qrels_grades: np.ndarray  # every qrels grade (num_rel under -c)
    runid: str
    stop: StopError | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return len(self.qids)


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
    run_qids = set(pc.unique(run.qid).to_pylist())

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
    keep = np.flatnonzero(run_rows >= 0)
    bogus_rows = np.flatnonzero(bogus_arr)
    rows = np.concatenate([run_rows[keep], bogus_rows])
    docs = pa.concat_arrays(
        [run.docno.take(keep), pa.array([BOGUS_DOCNO.encode()] * len(bogus_rows), pa.binary())]
    )
    sims = np.concatenate([run.sim[keep], np.ones(len(bogus_rows))])

    # The qrels of the evaluated queries.
    qrel_rows_all = _rows_of(qrels.qid, value_set)
    qkeep = np.flatnonzero(qrel_rows_all >= 0)
    q_rows = qrel_rows_all[qkeep]
    q_docs = qrels.docno.take(qkeep)
    q_grades = qrels.rel[qkeep]

    # Rank: query, score descending, document id descending.
    order = pc.sort_indices(
        pa.table({"row": rows, "sim": sims, "doc": docs}),
        sort_keys=[("row", "ascending"), ("sim", "descending"), ("doc", "descending")],
    ).to_numpy()
    rows = rows[order]
    docs = docs.take(order)
    starts = np.searchsorted(rows, np.arange(n))
    position = np.arange(len(rows)) - starts[rows] if len(rows) else np.zeros(0, np.int64)
    cut = np.flatnonzero(position < max_docs)
    if len(cut) < len(rows):
        rows, position, docs = rows[cut], position[cut], docs.take(cut)

    encoded = pc.dictionary_encode(pa.chunked_array([docs, q_docs], pa.binary()))
    codes = np.concatenate(
        [np.zeros(0, np.int64)] + [c.indices.to_numpy(zero_copy_only=False) for c in encoded.chunks]
    )
    vocabulary = encoded.chunks[0].dictionary if encoded.num_chunks else pa.array([], pa.binary())
    codes = codes.astype(np.int64)
    doc_codes, q_doc_codes = codes[: len(docs)], codes[len(docs) :]
    width_key = len(vocabulary) + 1

    keys = rows * width_key + doc_codes
    q_keys = q_rows * width_key + q_doc_codes
    q_order = np.argsort(q_keys, kind="stable")
    q_keys_sorted = q_keys[q_order]

    if needs_rankings and n:
        # A first query whose judgments are all negative has no grade table to count
        # into (form_res_rels gets a NULL buffer): trec_eval stops there, with no message
        # but "Can't calculate". Later such queries reuse the previous query's table.
        judged_rows = set(q_rows[q_grades >= 0].tolist())
        if 0 not in judged_rows and (stop is None or stop.index > 0):
            stop = StopError(0, [], 4, measure_failure=True)
        stop = _first_duplicate(stop, keys, q_keys_sorted, vocabulary, width_key)

    found = np.searchsorted(q_keys_sorted, keys)
    grades = np.full(len(keys), NONPOOL, dtype=np.int64)
    if len(q_keys_sorted):
        found_clipped = np.minimum(found, len(q_keys_sorted) - 1)
        hit = q_keys_sorted[found_clipped] == keys
        g = q_grades[q_order][found_clipped]
        grades = np.where(hit, np.where(g < 0, UNJUDGED, g), NONPOOL)

    if judged_only:
        judged = grades >= 0
        rows, grades = rows[judged], grades[judged]
        starts = np.searchsorted(rows, np.arange(n))
        position = np.arange(len(rows)) - starts[rows] if len(rows) else rows

    num_ret = np.bincount(rows, minlength=n).astype(np.int64) if n else np.zeros(0, np.int64)
    width = max(int(num_ret.max()) if n else 0, 1)
    rels = np.full((n, width), PAD, dtype=np.int64)
    rels[rows, position] = grades
    return Rankings(
        qids=[q.decode("latin-1") for q in qids],
        rels=rels,
        num_ret=num_ret,
        bogus=bogus_arr,
        qrel_row=q_rows,
        qrel_grade=q_grades,
        num_qrels_queries=len(qrels_qids),
        all_qrels_grades=qrels.rel,
        runid=run.runid,
        stop=stop,
    )


def _rows_of(qid: pa.Array, value_set: pa.Array) -> np.ndarray:
    """Each line's evaluated-query row, -1 for the others."""
    index = pc.index_in(qid, value_set=value_set)
    return index.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _first_duplicate(stop, keys, q_keys_sorted, vocabulary, width_key):
    """The first evaluated query (before any earlier stop) with a document twice in its
    ranking (checked first) or in its qrels: trec_eval stops there, naming the first
    such document in id order."""
    candidates = []
    for source, sorted_keys, template in (
        (0, np.sort(keys), "trec_eval.form_res_qrels: duplicate docs {}"),  # no newline
        (1, q_keys_sorted, "trec_eval.form_res_rels: duplicate docs {}\n"),
    ):
        dup = sorted_keys[1:][sorted_keys[1:] == sorted_keys[:-1]]
        if len(dup):
            row = int(dup.min() // width_key)
            in_row = dup[dup // width_key == row] % width_key
            doc = min(vocabulary.take(pa.array(in_row)).to_pylist())
            candidates.append((row, source, template.format(doc.decode("latin-1"))))
    if not candidates:
        return stop
    row, _, message = min(candidates)
    if stop is not None and row >= stop.index:
        return stop
    return StopError(row, [message], 4, measure_failure=True)
