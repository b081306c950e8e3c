"""Reading TREC runs (``qid Q0 docid rank score tag``).

Two paths read a TREC file. The fast one hands a regular file (one space, or one tab,
between fields; no comments; exactly 4 or 6 fields) to pyarrow's CSV reader and does the
rest with numpy. Anything it does not accept, or any defect it finds, sends the file to
the careful pure-Python reader, which splits on runs of whitespace as trec_eval does and
reports every problem with its line number. Both paths give the same result on the files
the fast one accepts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ErrorCollector
from ..tables import Run, later_duplicates, query_offsets, take_sorted
from .common import (
    _BYTES_DICT,
    _DICT,
    _INT_RE,
    PathLike,
    _bad_id,
    _decode,
    _empty_file,
    _encode_qids,
    _ids_storable,
    _is_comment,
    _no_empty_fields,
    _read_table,
    _shown,
    _with,
)


def _drop_rows(
    perm: np.ndarray, offsets: np.ndarray, drop: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Remove physical rows marked in ``drop`` from a (perm, offsets) ranking layout."""
    nq = offsets.size - 1
    keep_final = ~drop[perm]
    query_of_final = np.repeat(np.arange(nq, dtype=np.int64), np.diff(offsets))
    kept = np.bincount(query_of_final[keep_final], minlength=nq)
    return perm[keep_final], np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)


def _score_order(codes: np.ndarray, scores: pa.ChunkedArray, docids: pa.ChunkedArray) -> np.ndarray:
    """``perm`` for trec_eval's order: query (codes ascending), score descending, docid
    descending in byte order (``strcmp``), file order among equal docids.

    Most runs are written that way already, except for the order of tied scores. When the
    rows are grouped by query with scores not increasing, only the runs of equal (query,
    score) are sorted, by docid; every other row is already in place. Otherwise all rows
    are sorted. Both give the same permutation: ``pc.sort_indices`` is stable, and a tie
    group sorted alone is the same rows, in the same order, as within the full sort.
    """
    n = codes.size
    if n < 2:
        return np.arange(n, dtype=np.int64)
    # Neighbour comparisons in Arrow: bitmaps, where numpy would make a byte per row.
    c = pa.array(codes)  # zero-copy
    same_query = pc.equal(c[1:], c[:-1])
    grouped = bool(pc.all(pc.greater_equal(c[1:], c[:-1])).as_py())
    rising = pc.and_(same_query, pc.greater(scores[1:], scores[:-1]))
    if grouped and not bool(pc.any(rising).as_py()):
        tied = pc.and_(same_query, pc.equal(scores[1:], scores[:-1]))  # rows i, i+1 tie
        perm = np.arange(n, dtype=np.int64)
        pairs = pc.indices_nonzero(tied).to_numpy().astype(np.int64)
        if pairs.size:
            # Rows of the tie groups (sorted, each once), and each one's group: a new group
            # starts at a row that does not tie with the row before it, i.e. at a pair
            # that does not continue the pair before it.
            rows = np.concatenate((pairs, pairs + 1))
            rows.sort()
            rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
            in_pairs = np.zeros(rows.size, dtype=bool)
            in_pairs[np.searchsorted(rows, pairs)] = True
            starts = np.ones(rows.size, dtype=np.int64)
            starts[1:] = ~in_pairs[:-1]
            group = np.cumsum(starts)
            keyed = pa.table({"g": group, "d": take_sorted(docids, rows)})
            order = pc.sort_indices(
                keyed, sort_keys=[("g", "ascending"), ("d", "descending")]
            ).to_numpy()
            perm[rows] = rows[order]
        return perm
    keyed = pa.table({"q": codes, "s": scores, "d": docids})
    ordered: np.ndarray = pc.sort_indices(
        keyed, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")]
    ).to_numpy()
    return ordered


def _read_trec_run_fast(
    path: PathLike, name: str, delim: str, *, order: str, dedup: str
) -> Run | None:
    # Ranks as int32 and the Q0/tag columns dictionary-encoded keep memory down; a rank
    # beyond int32 simply sends the file to the careful reader.
    table = _read_table(
        path,
        delim,
        ["q", "z", "d", "r", "s", "t"],
        {
            "q": _DICT,
            "z": _BYTES_DICT,
            "d": pa.string(),
            "r": pa.int32(),
            "s": pa.float64(),
            "t": _BYTES_DICT,
        },
        ["q", "z", "d", "r", "s", "t"],
    )
    if table is None or table.num_rows == 0:
        return None
    if not _no_empty_fields(*(table.column(c) for c in ("q", "z", "d", "t"))):
        return None
    if not _ids_storable(table.column("q"), table.column("d")):
        return None
    qcol, docids, scores = table.column("q"), table.column("d"), table.column("s")
    ranks = table.column("r").to_numpy() if order == "rank" else None
    del table
    # Hand back what the CSV reader's block buffers and the dropped columns (Q0, tag and,
    # unless ordering by it, rank) held, before the arrays built next: the allocator would
    # otherwise keep it resident for a while, under those arrays (a higher peak).
    pa.default_memory_pool().release_unused()
    qids, codes = _encode_qids(qcol)
    del qcol
    if any(q.startswith("#") for q in qids):
        return None
    if bool(pc.any(pc.is_nan(scores)).as_py()):
        return None
    perm: np.ndarray
    if ranks is not None:
        perm = np.lexsort((ranks, codes))
        rs, cs = ranks[perm], codes[perm]
        if bool(((rs[1:] == rs[:-1]) & (cs[1:] == cs[:-1])).any()):
            return None  # equal ranks: the careful reader names the lines
        del ranks, rs, cs
    else:
        perm = _score_order(codes, scores, docids)
    del scores
    offsets = query_offsets(codes, len(qids))
    run = Run(
        qids=tuple(qids),
        offsets=offsets,
        docids=docids,
        qcodes=codes,
        perm=perm,
        order=order,
        dedup=dedup,
        source=name,
    )
    later = later_duplicates(codes, docids, run.keys(), run.final_positions)
    removed = int(later.sum())
    if removed:
        if dedup == "error":
            return None  # the careful reader reports each duplicate with its lines
        perm, offsets = _drop_rows(perm, offsets, later)
        run = _with(run, perm=perm, offsets=offsets, duplicates_removed=removed)
    return run


@dataclass
class _Row:
    score: float
    rank: int
    docid: str
    lineno: int


def _read_trec_run_slow(path: PathLike, name: str, *, order: str, dedup: str) -> Run:
    errors = ErrorCollector()
    per_query: dict[str, list[_Row]] = {}
    data_lines = 0
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if errors.full:
                errors.truncated = True
                break
            fields = raw.split()
            if not fields or _is_comment(fields):
                continue
            data_lines += 1
            if len(fields) < 6:
                errors.add(
                    f"{name} line {lineno}: expected 6 fields 'qid Q0 docid rank score tag', "
                    f"found {len(fields)}; put one ranked item per line"
                )
                continue
            qid = _decode(fields[0], name, lineno, errors)
            docid = _decode(fields[2], name, lineno, errors) if qid is not None else None
            if qid is None or docid is None:
                continue
            where = f"{name} line {lineno}"
            if _bad_id(qid, where, "query id", errors) or _bad_id(docid, where, "docid", errors):
                continue
            rank_text, score_text = fields[3], fields[4]
            if not _INT_RE.fullmatch(rank_text):
                errors.add(
                    f"{name} line {lineno}: rank {_shown(rank_text)!r} is "
                    "not an integer; the 4th field must be the rank (1, 2, ...)"
                )
                continue
            score = _parse_score(score_text)
            if score is None:
                errors.add(
                    f"{name} line {lineno}: score {_shown(score_text)!r} "
                    "is not a number; the 5th field must be the retrieval score"
                )
                continue
            per_query.setdefault(qid, []).append(_Row(score, int(rank_text), docid, lineno))
    errors.raise_if_any()
    if data_lines == 0:
        raise _empty_file(name, "lines 'qid Q0 docid rank score tag'")
    rankings: dict[str, list[str]] = {}
    removed = 0
    for qid, rows in per_query.items():
        if order == "score":
            rows.sort(key=lambda r: r.docid, reverse=True)
            rows.sort(key=lambda r: -r.score)
        else:
            rows.sort(key=lambda r: r.rank)
            for prev, cur in pairwise(rows):
                if prev.rank == cur.rank:
                    a, b = sorted((prev.lineno, cur.lineno))
                    errors.add(
                        f"{name} line {b}: rank {cur.rank} for query {qid!r} repeats line {a}; "
                        "with --order rank every rank must be distinct within a query "
                        "(or use --order score)"
                    )
        first_at: dict[str, int] = {}
        kept: list[str] = []
        for row in rows:
            if row.docid in first_at:
                if dedup == "first":
                    removed += 1
                    continue
                errors.add(
                    f"{name} line {row.lineno}: duplicate docid {row.docid!r} for query "
                    f"{qid!r} (first at line {first_at[row.docid]}); pass --dedup first "
                    "to keep the first occurrence"
                )
                continue
            first_at[row.docid] = row.lineno
            kept.append(row.docid)
        rankings[qid] = kept
    errors.raise_if_any()
    run = Run.from_mapping(rankings, dedup=dedup, source=name)
    return _with(run, order=order, duplicates_removed=removed)


def _parse_score(text: bytes) -> float | None:
    if b"_" in text:  # float() accepts "1_0"; trec_eval does not
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value
