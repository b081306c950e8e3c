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
    qrels_qids = np.unique(qrels.qid) if len(qrels.qid) else np.array([], dtype=object)
    candidates = [q for q in qrels_qids.tolist() if debug_qid is None or q == debug_qid]
    run_qids = set(np.unique(run.qid).tolist()) if len(run.qid) else set()

    qids: list[str] = []
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
            stop = StopError(len(qids), [f"trec_eval: result qid '{qid}' not found in qrels\n"], 4)
            break
    n = len(qids)
    row_of = {qid: i for i, qid in enumerate(qids)}
    bogus_arr = np.array(bogus, dtype=bool)

    # The run's lines of the evaluated queries, plus the bogus document of missing ones.
    run_rows = np.fromiter((row_of.get(q, -1) for q in run.qid), dtype=np.int64, count=len(run.qid))
    keep = run_rows >= 0
    bogus_rows = np.flatnonzero(bogus_arr)
    rows = np.concatenate([run_rows[keep], bogus_rows])
    docs = np.concatenate([run.docno[keep], np.full(len(bogus_rows), BOGUS_DOCNO, dtype=object)])
    sims = np.concatenate([run.sim[keep], np.ones(len(bogus_rows))])

    # The qrels of the evaluated queries.
    qrel_rows_all = np.fromiter(
        (row_of.get(q, -1) for q in qrels.qid), dtype=np.int64, count=len(qrels.qid)
    )
    qkeep = qrel_rows_all >= 0
    q_rows = qrel_rows_all[qkeep]
    q_docs = qrels.docno[qkeep]
    q_grades = qrels.rel[qkeep]

    vocabulary, codes = np.unique(np.concatenate([docs, q_docs]), return_inverse=True)
    codes = codes.astype(np.int64)
    doc_codes, q_doc_codes = codes[: len(docs)], codes[len(docs) :]
    width_key = len(vocabulary) + 1

    # Rank: query, score descending, document id descending.
    order = np.lexsort((-doc_codes, -sims, rows))
    rows, doc_codes = rows[order], doc_codes[order]
    starts = np.searchsorted(rows, np.arange(n))
    position = np.arange(len(rows)) - starts[rows] if len(rows) else np.zeros(0, np.int64)
    cut = position < max_docs
    rows, doc_codes, position = rows[cut], doc_codes[cut], position[cut]

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
        stop = _first_duplicate(
            stop,
            keys,
            rows,
            q_keys_sorted,
            q_rows[q_order],
            vocabulary,
            doc_codes,
            q_doc_codes[q_order],
        )

    found = np.searchsorted(q_keys_sorted, keys)
    found_clipped = np.minimum(found, max(len(q_keys_sorted) - 1, 0))
    hit = (found < len(q_keys_sorted)) & (
        q_keys_sorted[found_clipped] == keys if len(q_keys_sorted) else False
    )
    grades = np.full(len(keys), NONPOOL, dtype=np.int64)
    if len(q_keys_sorted):
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
        qids=qids,
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


def _first_duplicate(
    stop, keys, rows, q_keys_sorted, q_rows_sorted, vocabulary, doc_codes, q_doc_codes_sorted
):
    """The first evaluated query (before any earlier stop) with a document twice in its
    ranking or in its qrels: trec_eval stops there."""
    limit = stop.index if stop else None
    candidates = []
    sorted_keys = np.sort(keys)
    dup = np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])
    if len(dup):
        width_key = len(vocabulary) + 1
        k = sorted_keys[dup]
        for key in k[np.argsort(k // width_key, kind="stable")][:1]:
            row = int(key // width_key)
            doc = vocabulary[int(key % width_key)]
            # form_res_rels prints this one without a newline.
            candidates.append((row, 0, f"trec_eval.form_res_qrels: duplicate docs {doc}"))
    qdup = np.flatnonzero(q_keys_sorted[1:] == q_keys_sorted[:-1])
    if len(qdup):
        i = qdup[0] + 1
        candidates.append(
            (
                int(q_rows_sorted[i]),
                1,
                f"trec_eval.form_res_rels: duplicate docs {vocabulary[q_doc_codes_sorted[i]]}\n",
            )
        )
    if not candidates:
        return stop
    row, _, message = min(candidates)
    if limit is not None and row >= limit:
        return stop
    return StopError(row, [message], 4, measure_failure=True)
