"""Vectorised per-query measures over many rankings at once.

The rankings of all scored queries are laid out one after the other ("segments"). Work on
the full arrays is limited to a few comparisons; everything else runs on the rows that
matter (relevant, positive-gain or judged rows), grouped with ``np.bincount``.

Definitions follow trec_eval 10 (``-q`` values), with k the cutoff, G the relevant set
(grade >= rel_level) and positions counted from 1:

* ``R@k`` = hits in the first k / |G|  (trec_eval ``recall_k``)
* ``P@k`` = hits in the first k / k, also when fewer than k items are ranked (``P_k``)
* ``AnyHit@k`` = 1 if a hit is in the first k (``success_k``); ``AllHit@k`` = 1 if all of
  G is; ``Ceiling@k`` = min(k, |G|) / |G|
* ``nDCG@k``: gain = the raw grade (any grade > 0, whatever rel_level), discount
  log2(position + 1); the ideal ranking sorts every judgment with grade > 0 (``ndcg_cut_k``)
* ``RR`` = 1 / position of the first hit (``recip_rank``); ``AP`` = sum of precision at
  each hit / |G| (``map``); ``Rprec`` = hits in the first |G| / |G|; ``bpref`` as
  trec_eval (unjudged items skipped; nonrelevant = judged with 0 <= grade < rel_level)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .params import split_measure
from .tables import UNJUDGED


@dataclass(frozen=True)
class Segments:
    """Ranked rows of the scored queries, query after query.

    Invariant: the rows of segment i are ``offsets[i]:offsets[i+1]``, best first;
    ``grades[r]`` is the judged grade of row r, or ``UNJUDGED``.
    """

    offsets: np.ndarray
    grades: np.ndarray

    @property
    def count(self) -> int:
        return int(self.offsets.size - 1)

    def locate(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Segment and 1-based position of each row (rows sorted ascending)."""
        seg = np.searchsorted(self.offsets, rows, side="right") - 1
        return seg, rows - self.offsets[seg] + 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def condensed(self) -> Segments:
        """The same rankings with unjudged rows removed (trec_eval ``-J``)."""
        keep = self.grades != UNJUDGED
        seg_of_row = np.repeat(np.arange(self.count, dtype=np.int64), self.lengths())
        kept = np.bincount(seg_of_row[keep], minlength=self.count)
        offsets = np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)
        return Segments(offsets, self.grades[keep])


@dataclass(frozen=True)
class Labels:
    """What the qrels say about each segment's query.

    Invariants: ``num_rel`` (|G|) > 0 for every segment; ``ideal_gain`` lists every grade
    > 0 of the query's judgments, grouped by ``ideal_seg`` and sorted high to low within it.
    """

    num_rel: np.ndarray
    num_nonrel: np.ndarray
    ideal_seg: np.ndarray
    ideal_gain: np.ndarray

    @classmethod
    def build(
        cls, seg_of_judgment: np.ndarray, grades: np.ndarray, count: int, rel_level: int
    ) -> Labels:
        rel = grades >= rel_level
        nonrel = (grades >= 0) & ~rel
        positive = grades > 0
        iseg, igain = seg_of_judgment[positive], grades[positive]
        order = np.lexsort((-igain, iseg))
        return cls(
            num_rel=np.bincount(seg_of_judgment[rel], minlength=count).astype(np.int64),
            num_nonrel=np.bincount(seg_of_judgment[nonrel], minlength=count).astype(np.int64),
            ideal_seg=iseg[order],
            ideal_gain=igain[order],
        )

    def with_extra_relevant(self, extra: np.ndarray, grade: int) -> Labels:
        """These labels plus ``extra[i]`` more relevant judgments of ``grade`` for segment i."""
        add_seg = np.repeat(np.arange(extra.size, dtype=np.int64), extra)
        iseg = np.concatenate([self.ideal_seg, add_seg])
        igain = np.concatenate([self.ideal_gain, np.full(add_seg.size, grade, dtype=np.int64)])
        order = np.lexsort((-igain, iseg))
        return Labels(self.num_rel + extra, self.num_nonrel, iseg[order], igain[order])


def _first_of_group(seg: np.ndarray) -> np.ndarray:
    first = np.ones(seg.size, dtype=bool)
    first[1:] = seg[1:] != seg[:-1]
    return first


def _rank_in_group(seg: np.ndarray) -> np.ndarray:
    """1-based index of each element within its run of equal ``seg`` values."""
    idx = np.arange(seg.size, dtype=np.int64)
    start = np.maximum.accumulate(np.where(_first_of_group(seg), idx, 0))
    return idx - start + 1


def idcg_at(labels: Labels, count: int, k: int) -> np.ndarray:
    pos = _rank_in_group(labels.ideal_seg)
    keep = pos <= k
    return np.bincount(
        labels.ideal_seg[keep],
        weights=labels.ideal_gain[keep] / np.log2(pos[keep] + 1.0),
        minlength=count,
    )


def judged_at(segments: Segments, ks: Sequence[int]) -> dict[int, np.ndarray]:
    """Share of the first k positions holding a judged item (grade >= 0); denominator k."""
    if not ks:
        return {}
    rows = np.flatnonzero(segments.grades >= 0)
    seg, pos = segments.locate(rows)
    return {k: np.bincount(seg[pos <= k], minlength=segments.count) / float(k) for k in ks}


def compute(
    segments: Segments, labels: Labels, rel_level: int, names: Sequence[str]
) -> dict[str, np.ndarray]:
    """Per-segment values of the requested measures, plus ``hits@k`` for every cutoff used.

    ``Judged@k`` and ``Evidence@k`` are not computed here (they do not depend on the
    relevance labels of the scored list); ``evaluate`` adds them.
    """
    n = segments.count
    g = segments.grades
    rel_rows = np.flatnonzero(g >= rel_level)
    rseg, rpos = segments.locate(rel_rows)
    num_rel = labels.num_rel.astype(np.float64)
    out: dict[str, np.ndarray] = {}

    cutoffs = sorted({k for nm in names for _, k in [split_measure(nm)] if k is not None})
    for k in cutoffs:
        out[f"hits@{k}"] = np.bincount(rseg[rpos <= k], minlength=n).astype(np.int64)

    dcg_rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    for name in names:
        fam, cut = split_measure(name)
        if cut is not None:
            k = cut
            hits = out[f"hits@{k}"]
            if fam == "R":
                out[name] = hits / num_rel
            elif fam == "P":
                out[name] = hits / float(k)
            elif fam == "AnyHit":
                out[name] = (hits > 0).astype(np.float64)
            elif fam == "AllHit":
                out[name] = (hits == labels.num_rel).astype(np.float64)
            elif fam == "Ceiling":
                out[name] = np.minimum(labels.num_rel, k) / num_rel
            elif fam == "nDCG":
                if dcg_rows is None:
                    prow = np.flatnonzero(g > 0)
                    pseg, ppos = segments.locate(prow)
                    dcg_rows = (pseg, ppos, g[prow] / np.log2(ppos + 1.0))
                pseg, ppos, contrib = dcg_rows
                keep = ppos <= k
                dcg = np.bincount(pseg[keep], weights=contrib[keep], minlength=n)
                idcg = idcg_at(labels, n, k)
                out[name] = np.divide(dcg, idcg, out=np.zeros(n), where=idcg > 0)
        elif name == "RR":
            rr = np.zeros(n)
            first = _first_of_group(rseg)
            rr[rseg[first]] = 1.0 / rpos[first]
            out[name] = rr
        elif name == "AP":
            prec = _rank_in_group(rseg) / rpos
            out[name] = np.bincount(rseg, weights=prec, minlength=n) / num_rel
        elif name == "Rprec":
            within = rpos <= labels.num_rel[rseg]
            out[name] = np.bincount(rseg[within], minlength=n) / num_rel
        elif name == "bpref":
            out[name] = _bpref(segments, labels, rel_level, rel_rows, rseg)
    return out


def _bpref(
    segments: Segments, labels: Labels, rel_level: int, rel_rows: np.ndarray, rseg: np.ndarray
) -> np.ndarray:
    g = segments.grades
    nonrel_rows = np.flatnonzero((g >= 0) & (g < rel_level))
    # Judged nonrelevant rows ranked above each relevant row, within its own query.
    before = np.searchsorted(nonrel_rows, rel_rows) - np.searchsorted(
        nonrel_rows, segments.offsets[rseg]
    )
    r = labels.num_rel[rseg]
    denom = np.minimum(labels.num_nonrel[rseg], r)
    frac = np.divide(np.minimum(before, r), denom, out=np.zeros(rel_rows.size), where=denom > 0)
    term = np.where(before > 0, 1.0 - frac, 1.0)
    values: np.ndarray = np.bincount(rseg, weights=term, minlength=segments.count) / labels.num_rel
    return values
