"""Holes: which ranked items the judgments do not cover, per query and cutoff.

``find_holes(qrels, rankings, ks)`` counts, for every query of the run (scorable or not:
an unreviewed query's holes are work to do too), the judged and unjudged items among the
first k, and ``Judged@k`` = judged / k (ir_measures' definition, as ``Judged@k`` in
``evaluate``: the denominator is k even when fewer than k items are ranked).
``unjudged_rows`` lists the unjudged (query, id, position) rows within a depth. Both are
columnar: one join of the run's rows with the qrels (``qrels_grades_for_run``) and a few
``np.bincount`` calls, whatever the number of queries; no per-query Python loop except to
name the rows asked for.

An item graded below 0 (trec_eval's -1, "pooled but unjudged") counts as unjudged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InvalidParameterError
from .params import natural_key
from .tables import UNJUDGED, Qrels, Run, _take_str, qrels_grades_for_run

QrelsLike = Qrels | Mapping[str, Mapping[str, int]]
RankingsLike = Run | Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class Holes:
    """Per query of the run (``qids``, run order): ``ranked`` items, and for each cutoff k
    ``judged[k]`` / ``unjudged[k]`` among the first k. Invariant: judged + unjudged =
    min(k, ranked) for every query."""

    qids: tuple[str, ...]
    ks: tuple[int, ...]
    ranked: np.ndarray
    judged: dict[int, np.ndarray]
    unjudged: dict[int, np.ndarray]

    def overall(self) -> dict[str, Any]:
        """Per cutoff: mean Judged@k over the run's queries, the unjudged items in the first
        k summed over them, and how many queries have at least one."""
        n = len(self.qids)
        out: dict[str, Any] = {"queries": n, "ks": {}}
        for k in self.ks:
            j, u = self.judged[k], self.unjudged[k]
            out["ks"][str(k)] = {
                "judged_at": float(j.sum() / (k * n)) if n else None,
                "unjudged": int(u.sum()),
                "queries_with_unjudged": int((u > 0).sum()),
            }
        return out

    def per_query(self, qids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """``{qid: {"ranked": n, "k": {k: {"judged_at", "unjudged"}}}}`` for ``qids`` (default:
        every query, in natural order)."""
        index = {q: i for i, q in enumerate(self.qids)}
        wanted = sorted(self.qids, key=natural_key) if qids is None else list(qids)
        out: dict[str, dict[str, Any]] = {}
        for qid in wanted:
            i = index.get(qid)
            if i is None:
                continue
            out[qid] = {
                "ranked": int(self.ranked[i]),
                "k": {
                    str(k): {
                        "judged_at": float(self.judged[k][i]) / k,
                        "unjudged": int(self.unjudged[k][i]),
                    }
                    for k in self.ks
                },
            }
        return out

    def to_dict(self, *, per_query: bool = True) -> dict[str, Any]:
        out = {
            "definition": "judged_at = judged items among the first k / k (ir_measures' "
            "Judged@k); unjudged = items among the first k with no judgment (or graded -1)",
            "overall": self.overall(),
        }
        if per_query:
            out["per_query"] = self.per_query()
        return out


def _grades(qrels: QrelsLike, rankings: RankingsLike) -> tuple[Run, np.ndarray, np.ndarray]:
    """The run, each rank-ordered row's grade (``UNJUDGED`` when none) and its 1-based
    position within its query."""
    q = qrels if isinstance(qrels, Qrels) else Qrels.from_mapping(qrels)
    run = rankings if isinstance(rankings, Run) else Run.from_mapping(rankings)
    qrel_index = {qid: i for i, qid in enumerate(q.qids)}
    run_to_qrels = np.fromiter(
        (qrel_index.get(qid, -1) for qid in run.qids), dtype=np.int64, count=len(run.qids)
    )
    grades = qrels_grades_for_run(run, q, run_to_qrels)[run.perm]
    lens = np.diff(run.offsets)
    pos = np.arange(grades.size, dtype=np.int64) - np.repeat(run.offsets[:-1], lens) + 1
    return run, grades, pos


def find_holes(qrels: QrelsLike, rankings: RankingsLike, ks: Sequence[int]) -> Holes:
    """Judged and unjudged items in the first k of every query of ``rankings``."""
    if not ks or any(not isinstance(k, int) or k < 1 for k in ks):
        raise InvalidParameterError(f"cutoffs must be positive integers, not {list(ks)!r}")
    run, grades, pos = _grades(qrels, rankings)
    n = len(run.qids)
    lens = np.diff(run.offsets)
    seg = np.repeat(np.arange(n, dtype=np.int64), lens)
    judged_row = grades != UNJUDGED
    judged: dict[int, np.ndarray] = {}
    unjudged: dict[int, np.ndarray] = {}
    for k in sorted(set(ks)):
        within = pos <= k
        judged[k] = np.bincount(seg[within & judged_row], minlength=n).astype(np.int64)
        unjudged[k] = np.bincount(seg[within & ~judged_row], minlength=n).astype(np.int64)
    return Holes(tuple(run.qids), tuple(sorted(set(ks))), lens.astype(np.int64), judged, unjudged)


def unjudged_rows(
    qrels: QrelsLike,
    rankings: RankingsLike,
    *,
    depth: int | None,
    queries: Iterable[str] | None = None,
) -> list[tuple[str, str, int]]:
    """(query id, item id, position) of every unjudged item within ``depth`` (``None``:
    the whole ranking) of the queries in ``queries`` (default: all), in run order."""
    run, grades, pos = _grades(qrels, rankings)
    keep = grades == UNJUDGED
    if depth is not None:
        keep &= pos <= depth
    if queries is not None:
        wanted = set(queries)
        in_q = np.fromiter((q in wanted for q in run.qids), dtype=bool, count=len(run.qids))
        keep &= np.repeat(in_q, np.diff(run.offsets))
    rows = np.flatnonzero(keep)
    if rows.size == 0:
        return []
    seg = np.searchsorted(run.offsets, rows, side="right") - 1
    ids = _take_str(run.docids, run.perm[rows])
    return [
        (run.qids[int(s)], item, int(p))
        for s, item, p in zip(seg.tolist(), ids, pos[rows].tolist(), strict=True)
    ]


__all__ = ["Holes", "find_holes", "unjudged_rows"]
