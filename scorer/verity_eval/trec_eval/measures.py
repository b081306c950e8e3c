"""trec_eval 10's measures (m_*.c), each computed for every query at once on the padded
rank matrix of ``rankings.Rankings``.

Every value is computed with the same floating-point operations in the same order as the C
code, so that the four printed decimals agree to the last digit: sums that trec_eval
accumulates rank by rank are accumulated along the rank axis (``cumsum``, sequential, not
numpy's pairwise ``sum``), logarithms come from the C library through ``math``. The
measures built on relevance gains (G, ndcg, ndcg_rel, Rndcg, dcg, ideal_dcg, rbp) walk
each query's gain levels the way gain_init.c does.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .rankings import NONPOOL, PAD, UNJUDGED, Rankings

MIN_GEO_MEAN = 0.00001
INFAP_EPSILON = 0.00001


class MeasureError(Exception):
    """A measure trec_eval cannot compute (its message, then "Can't calculate")."""


#: At most this many cells (queries x buffer length) for ``level_tables``'s matrices.
LEVEL_CELLS = 1 << 24


def level_tables(r: Rankings, level: int):
    """form_res_rels' rel_levels per query, with its reuse of one buffer: the buffer is
    cleared only up to the query's highest grade, and num_rel_levels keeps the previous
    query's value when the query has no judged (non-negative) grade. Sequential over the
    queries in order, so computed once for all of them: (tables, num_rel_levels, num_rel,
    num_nonrel), one entry per query.

    The buffer's history is computed with arrays (``_level_arrays``); a grade so high
    that the (queries x length) matrices would be large takes the loop over the queries
    (``_level_loop``), which follows form_res_rels step by step."""
    done = _level_arrays(r.n, r.qrel_row, r.qrel_grade, level)
    if done is not None:
        return done
    order = np.argsort(r.qrel_row, kind="stable")
    rows, g = r.qrel_row[order], r.qrel_grade[order]
    bounds = np.searchsorted(rows, np.arange(r.n + 1))
    return _level_loop(r.n, g, bounds, level)


def _level_arrays(n, rows, g, level):
    """``level_tables`` from each query's count of each judged grade (the qrels lines in
    any order): None when the counts would not fit in LEVEL_CELLS."""
    if n == 0:
        return None
    top_grade = int(g.max(initial=-1))
    if n * (top_grade + 2) > LEVEL_CELLS:
        return None
    grades = max(top_grade + 1, 0)
    if grades and g.min() < 0:  # the judged lines only
        judged = np.flatnonzero(g >= 0)
        rows, g = rows[judged], g[judged]
    counts = np.zeros((n, 0), np.int64)
    if grades:
        key = rows.astype(np.int64) * grades
        key += g
        counts = np.bincount(key, minlength=n * grades).reshape(n, grades)
        del key
    # needed: the query's highest grade + 1, as form_res_rels sizes its buffer (a query
    # without a judged grade clears nothing, as if it needed 0).
    nonzero = counts > 0
    any_judged = nonzero.any(axis=1)
    needed = np.zeros(n, np.int64)
    if grades:
        needed[any_judged] = grades - np.argmax(nonzero[any_judged, ::-1], axis=1)
    # The buffer's length after each query: it grows (to its length + needed, zeroed)
    # when a query needs more than it has.
    lengths = np.empty(n, np.int64)
    grown = np.zeros(n, bool)
    length = 0
    for q, need in enumerate(needed.tolist()):
        if need > length:
            length += need
            grown[q] = True
        lengths[q] = length
    width = max(length, max(level, 0), 1)
    if n * width > LEVEL_CELLS:
        return None
    if width > grades:
        counts = np.pad(counts, ((0, 0), (0, width - grades)))
    # Position j after query q holds the counts of the last query p <= q that cleared
    # it (j < needed[p]) or grew the buffer (then j >= needed[p] is 0).
    cols = np.arange(width)
    cleared = (cols[None, :] < needed[:, None]) | grown[:, None]
    writer = np.where(cleared, np.arange(n)[:, None], -1)
    np.maximum.accumulate(writer, axis=0, out=writer)
    last = np.maximum(writer, 0)
    value = np.where((writer >= 0) & (cols[None, :] < needed[last]), counts[last, cols[None, :]], 0)
    tables = [value[q, :length] for q, length in enumerate(lengths.tolist())]
    # num_rel_levels: the highest judged grade + 1, else the previous query's.
    carry = np.maximum.accumulate(np.where(any_judged, np.arange(n), -1))
    levels = np.where(carry >= 0, needed[np.maximum(carry, 0)], 0)
    low = max(level, 0)
    own = np.where((cols[None, :] >= low) & (cols[None, :] < needed[:, None]), counts, 0)
    num_rel = own.sum(axis=1)
    upto = max(level, 0)
    in_buffer = cols[None, :] < np.minimum(lengths, upto)[:, None]
    num_nonrel = np.where(in_buffer, value, 0).sum(axis=1)
    return tables, levels.tolist(), num_rel.astype(np.int64), num_nonrel.astype(np.int64)


def _level_loop(n, g, bounds, level):
    buffer = np.zeros(0, dtype=np.int64)
    num_levels = 0
    tables, levels, num_rel, num_nonrel = [], [], [], []
    low = max(level, 0)
    for q in range(n):
        own = g[bounds[q] : bounds[q + 1]]
        needed = int(own.max()) + 1 if len(own) else 0
        if needed > len(buffer):
            buffer = np.zeros(len(buffer) + needed, dtype=np.int64)
        buffer = buffer.copy()
        buffer[: max(needed, 0)] = 0
        judged = own[own >= 0]
        if len(judged):
            counts = np.bincount(judged)
            buffer[: len(counts)] += counts
            num_levels = int(np.flatnonzero(counts)[-1]) + 1
        tables.append(buffer)
        levels.append(num_levels)
        num_rel.append(int(buffer[low:needed].sum()) if needed > low else 0)
        num_nonrel.append(int(buffer[: max(level, 0)].sum()))
    return tables, levels, np.array(num_rel, np.int64), np.array(num_nonrel, np.int64)


@dataclass
class Context:
    """One batch of queries (``queries``, indices into ``r``) and what the measures share
    about them, computed on first use."""

    r: Rankings
    level: int
    num_docs_in_coll: int
    queries: np.ndarray
    levels: tuple  # level_tables(r, level), for every query of r

    @functools.cached_property
    def n(self) -> int:
        return len(self.queries)

    @functools.cached_property
    def rels(self) -> np.ndarray:
        return self.r.matrix(self.queries)

    @functools.cached_property
    def width(self) -> int:
        return self.rels.shape[1]

    @functools.cached_property
    def valid(self) -> np.ndarray:
        return self.rels != PAD

    @functools.cached_property
    def is_rel(self) -> np.ndarray:
        return (self.rels >= self.level) & self.valid

    @functools.cached_property
    def cum_rel(self) -> np.ndarray:
        """(n, width + 1): relevant documents in the top k, k = 0..width."""
        out = np.zeros((self.n, self.width + 1), dtype=np.int64)
        np.cumsum(self.is_rel, axis=1, out=out[:, 1:])
        return out

    @functools.cached_property
    def rows(self) -> np.ndarray:
        return np.arange(self.n)

    @functools.cached_property
    def num_ret(self) -> np.ndarray:
        return self.r.num_ret[self.queries]

    @functools.cached_property
    def _level_tables(self):
        tables, levels, num_rel, num_nonrel = self.levels
        picked = self.queries.tolist()
        return (
            [tables[q] for q in picked],
            [levels[q] for q in picked],
            num_rel[self.queries],
            num_nonrel[self.queries],
        )

    @functools.cached_property
    def level_counts(self) -> list[np.ndarray]:
        """rel_levels[0:num_rel_levels] per query (what the gain measures read)."""
        tables, levels, _, _ = self._level_tables
        out = []
        for table, n in zip(tables, levels, strict=True):
            padded = np.zeros(max(n, len(table)), dtype=np.int64)
            padded[: len(table)] = table
            out.append(padded[:n])
        return out

    @functools.cached_property
    def num_rel(self) -> np.ndarray:
        return self._level_tables[2]

    @functools.cached_property
    def num_nonrel(self) -> np.ndarray:
        return self._level_tables[3]

    @functools.cached_property
    def num_rel_ret(self) -> np.ndarray:
        judged_rel = (self.rels >= 0) & (self.rels >= self.level)
        return judged_rel.sum(axis=1).astype(np.int64)

    @functools.cached_property
    def positions(self) -> np.ndarray:
        """1-based ranks as doubles."""
        return np.arange(1, self.width + 1, dtype=np.float64)

    @functools.cached_property
    def log2_table(self) -> np.ndarray:
        """log2(k) for k = 0..width + 3, from the C library."""
        return np.array([math.log2(k) if k else -math.inf for k in range(self.width + 4)])

    @functools.cached_property
    def bpref_parts(self):
        r = self.rels
        skipped = (r == NONPOOL) | (r == UNJUDGED) | ~self.valid
        nonrel = (r >= 0) & (r < self.level)
        relv = ~skipped & ~nonrel
        return relv, np.cumsum(nonrel, axis=1), np.cumsum(r == UNJUDGED, axis=1)


def seq_rowsum(terms: np.ndarray) -> np.ndarray:
    """Each row summed left to right, the order a C loop adds them."""
    if terms.shape[1] == 0:
        return np.zeros(terms.shape[0])
    return np.cumsum(terms, axis=1)[:, -1]


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(a, dtype=np.float64) / np.asarray(b, dtype=np.float64)


# ---------------------------------------------------------------- the measures


def m_num_q(ctx, params):
    return np.ones(ctx.n)


def m_num_ret(ctx, params):
    return ctx.num_ret.astype(np.float64)


def m_num_rel(ctx, params):
    return ctx.num_rel.astype(np.float64)


def m_num_rel_ret(ctx, params):
    return ctx.num_rel_ret.astype(np.float64)


def _ap_terms(ctx):
    return np.where(ctx.is_rel, _div(ctx.cum_rel[:, 1:], ctx.positions), 0.0)


def m_map(ctx, params):
    total = seq_rowsum(_ap_terms(ctx))
    found = ctx.cum_rel[ctx.rows, ctx.num_ret] > 0
    return np.where(found, _div(total, ctx.num_rel), 0.0)


def m_gm_map(ctx, params):
    total = seq_rowsum(_ap_terms(ctx))
    found = ctx.cum_rel[ctx.rows, ctx.num_ret] > 0
    ap = np.where(found, _div(total, ctx.num_rel), total)
    return np.array([math.log(max(v, MIN_GEO_MEAN)) for v in ap.tolist()])


def m_Rprec(ctx, params):
    k = np.minimum(ctx.num_ret, ctx.num_rel)
    return np.where(k > 0, _div(ctx.cum_rel[ctx.rows, k], ctx.num_rel), 0.0)


def _bpref(ctx):
    relv, nonrel_so_far, _ = ctx.bpref_parts
    r = ctx.num_rel[:, None]
    denominator = np.minimum(ctx.num_nonrel[:, None], r)
    terms = np.where(
        relv,
        np.where(nonrel_so_far > 0, 1.0 - _div(np.minimum(nonrel_so_far, r), denominator), 1.0),
        0.0,
    )
    total = seq_rowsum(terms)
    return np.where(ctx.num_rel > 0, _div(total, ctx.num_rel), total)


def m_bpref(ctx, params):
    return _bpref(ctx)


def m_gm_bpref(ctx, params):
    return np.array([math.log(max(v, MIN_GEO_MEAN)) for v in _bpref(ctx).tolist()])


def m_recip_rank(ctx, params):
    first = np.argmax(ctx.is_rel, axis=1)
    has = ctx.is_rel.any(axis=1)
    return np.where(has, _div(1.0, first + 1.0), 0.0)


def _lround(x: np.ndarray) -> np.ndarray:
    return (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int64)


def _noop():
    return None


def _interpolated(ctx, cutoff_ints: np.ndarray) -> np.ndarray:
    """iprec_at_recall's value for per-query relevant-count cutoffs (n, c)."""
    nrr = ctx.num_rel_ret
    # The C loop starts from num_rel_ret (judged documents at or above -l) and counts down
    # at every document at or above -l; with a negative -l those include unjudged ones,
    # so its count runs `offset` below the running count.
    offset = (ctx.cum_rel[ctx.rows, ctx.num_ret] - nrr)[:, None]
    counts = ctx.cum_rel[:, 1:] - offset
    precision = np.where(ctx.valid, _div(counts, ctx.positions), -np.inf)
    suffix_max = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]
    rr, cc = np.nonzero(ctx.is_rel)
    starts = np.searchsorted(rr, ctx.rows)
    k = np.maximum(cutoff_ints, 1) + offset
    ok = (cutoff_ints <= nrr[:, None]) & (nrr[:, None] > 0)
    index = np.where(ok, starts[:, None] + k - 1, 0)
    if len(cc):
        col = cc[np.minimum(index, len(cc) - 1)]
        values = np.where(ok, suffix_max[ctx.rows[:, None], col], 0.0)
    else:
        values = np.zeros(cutoff_ints.shape)
    empty = nrr == 0
    if empty.any():
        base = _div(nrr, ctx.num_ret)  # 0/num_ret, NaN when nothing was retrieved
        values = np.where(empty[:, None] & (cutoff_ints <= 0), base[:, None], values)
    return values


def m_iprec_at_recall(ctx, params):
    cutoffs = np.array(params, dtype=np.float64)
    ints = _lround(cutoffs[None, :] * ctx.num_rel[:, None].astype(np.float64))
    return _interpolated(ctx, ints)


def m_11pt_avg(ctx, params):
    if len(params) == 0:
        raise MeasureError("trec_eval.calc_m_11ptavg: No cutoff values\n")
    cutoffs = np.array(params, dtype=np.float64)
    ints = _lround(cutoffs[None, :] * ctx.num_rel[:, None].astype(np.float64))
    values = _interpolated(ctx, ints)
    # Summed from the highest cutoff down, the order the C loop meets them.
    total = seq_rowsum(values[:, ::-1])
    return total / float(len(params))


def m_P(ctx, params):
    k = np.array(params, dtype=np.int64)
    counts = ctx.cum_rel[ctx.rows[:, None], np.minimum(k[None, :], ctx.num_ret[:, None])]
    return _div(counts, k[None, :])


def m_recall(ctx, params):
    k = np.array(params, dtype=np.int64)
    counts = ctx.cum_rel[ctx.rows[:, None], np.minimum(k[None, :], ctx.num_ret[:, None])]
    return np.where(ctx.num_rel[:, None] > 0, _div(counts, ctx.num_rel[:, None]), 0.0)


def m_relative_P(ctx, params):
    k = np.array(params, dtype=np.int64)
    counts = ctx.cum_rel[ctx.rows[:, None], np.minimum(k[None, :], ctx.num_ret[:, None])]
    divisor = np.minimum(k[None, :], ctx.num_rel[:, None])
    return np.where(ctx.num_rel[:, None] > 0, _div(counts, divisor), 0.0)


def m_success(ctx, params):
    k = np.array(params, dtype=np.int64)
    counts = ctx.cum_rel[ctx.rows[:, None], np.minimum(k[None, :], ctx.num_ret[:, None])]
    return (counts > 0).astype(np.float64)


def m_map_cut(ctx, params):
    k = np.array(params, dtype=np.int64)
    partial = np.zeros((ctx.n, ctx.width + 1))
    np.cumsum(_ap_terms(ctx), axis=1, out=partial[:, 1:])
    sums = partial[ctx.rows[:, None], np.minimum(k[None, :], ctx.num_ret[:, None])]
    return np.where(ctx.num_rel[:, None] > 0, _div(sums, ctx.num_rel[:, None]), 0.0)


def m_unj(ctx, params):
    k = np.array(params, dtype=np.int64)
    unjudged = ((ctx.rels == NONPOOL) | (ctx.rels == UNJUDGED)).astype(np.int64)
    cum = np.zeros((ctx.n, ctx.width + 1), dtype=np.int64)
    np.cumsum(unjudged, axis=1, out=cum[:, 1:])
    counts = cum[ctx.rows[:, None], np.minimum(k[None, :], ctx.num_ret[:, None])]
    return _div(counts, k[None, :])


def m_infAP(ctx, params):
    relv, nonrel_so_far, unjudged_so_far = ctx.bpref_parts
    rel_before = np.cumsum(relv, axis=1) - 1  # rel_so_far - 1 at a relevant document
    fj = np.arange(ctx.width, dtype=np.float64)[None, :]
    a = (rel_before + nonrel_so_far + unjudged_so_far).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        term = 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (a / fj) * (
            (rel_before + INFAP_EPSILON) / (rel_before + nonrel_so_far + 2 * INFAP_EPSILON)
        )
    term[:, 0] = 1.0
    total = seq_rowsum(np.where(relv, term, 0.0))
    return np.where(ctx.num_rel > 0, _div(total, ctx.num_rel), total)


def m_Rprec_mult(ctx, params):
    cutoffs = np.array(params, dtype=np.float64)
    ints = (cutoffs[None, :] * ctx.num_rel[:, None] + 0.9).astype(np.int64)
    beyond = ints > ctx.num_ret[:, None]
    inside = (ints >= 1) & ~beyond
    offset = (ctx.cum_rel[ctx.rows, ctx.num_ret] - ctx.num_rel_ret)[:, None]  # see above
    counts = ctx.cum_rel[ctx.rows[:, None], np.clip(ints, 0, ctx.num_ret[:, None])] - offset
    counts = np.maximum(counts, 0)
    out = np.where(beyond, _div(ctx.num_rel_ret[:, None], ints), 0.0)
    return np.where(inside, _div(counts, ints), out)


def m_utility(ctx, params):
    if len(params) != 4:
        raise MeasureError("trec_eval.calc_utility: improper number of coefficients\n")
    a, b, c, d = params
    nrr, nret, nrel = ctx.num_rel_ret, ctx.num_ret, ctx.num_rel
    return (
        a * nrr.astype(np.float64)
        + b * (nret - nrr).astype(np.float64)
        + c * (nrel - nrr).astype(np.float64)
        + d * (ctx.num_docs_in_coll + nrr - nret - nrel).astype(np.float64)
    )


def m_binG(ctx, params):
    i = np.arange(ctx.width)[None, :]
    rsf = ctx.cum_rel[:, 1:]
    index = np.clip(3 + i - rsf, 0, ctx.width + 3)
    terms = np.where(ctx.is_rel, _div(1.0, ctx.log2_table[index]), 0.0)
    total = seq_rowsum(terms)
    found = ctx.cum_rel[ctx.rows, ctx.num_ret] > 0
    return np.where(found, _div(total, ctx.num_rel), 0.0)


def m_set_P(ctx, params):
    return np.where(ctx.num_ret > 0, _div(ctx.num_rel_ret, ctx.num_ret), 0.0)


def m_set_relative_P(ctx, params):
    ok = (ctx.num_ret > 0) & (ctx.num_rel > 0)
    return np.where(ok, _div(ctx.num_rel_ret, np.minimum(ctx.num_ret, ctx.num_rel)), 0.0)


def m_set_recall(ctx, params):
    return np.where(ctx.num_rel > 0, _div(ctx.num_rel_ret, ctx.num_rel), 0.0)


def m_set_map(ctx, params):
    ok = (ctx.num_ret > 0) & (ctx.num_rel > 0)
    nrr = ctx.num_rel_ret.astype(np.float64)
    return np.where(
        ok,
        _div(nrr * nrr, ctx.num_ret.astype(np.float64) * ctx.num_rel.astype(np.float64)),
        0.0,
    )


def m_set_F(ctx, params):
    x = params[0]
    p = _div(ctx.num_rel_ret, ctx.num_ret)
    r = _div(ctx.num_rel_ret, ctx.num_rel)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (x + 1.0) * p * r / (x * p + r)
    return np.where(ctx.num_rel_ret > 0, f, 0.0)


def m_num_nonrel_judged_ret(ctx, params):
    r = ctx.rels
    nonpool = (r == NONPOOL).sum(axis=1)
    unjudged = (r == UNJUDGED).sum(axis=1)
    return (ctx.num_ret - nonpool - unjudged - ctx.num_rel_ret).astype(np.float64)


# ------------------------------------------------------------ gain-based measures


def _valid_int(text: str) -> bool:
    body = text[1:] if text[:1] in "+-" else text
    return bool(body) and all("0" <= ch <= "9" for ch in body)


def _gain_cmp(a, b) -> int:
    # comp_rel_gain returns the gain difference converted to int (truncated).
    return int(a[1] - b[1])


def setup_gains(pairs, level_counts: np.ndarray):
    """gain_init.c: [rel_level, gain, num_at_level] sorted by gain (ascending)."""
    gains = []
    for name, value in pairs:
        if not _valid_int(name):
            continue
        gains.append([int(name), float(value), 0])
    for i in range(len(level_counts)):
        for g in gains:
            if g[0] == i:
                g[2] = int(level_counts[i])
                break
        else:
            gains.append([i, float(i), int(level_counts[i])])
    return sorted(gains, key=functools.cmp_to_key(_gain_cmp))


class Gains:
    """The gain tables of gain_init.c for every query at once, for one set of parameters.

    ``results`` (n, width): each ranked document's gain (a parameter's gain for its grade
    when given, else the grade; 0 for unjudged documents unless a parameter names -1 or
    -2). ``ideal`` (n, K + 1): the ideal ranking's gains, highest level first, while
    positive, then the gain of the level where trec_eval's walk stops (column ``K_q``),
    repeated to the end; ``ideal_len`` is K_q; ``top`` the highest level's gain."""

    def __init__(self, ctx: Context, pairs):
        self.tables = [setup_gains(pairs, counts) for counts in ctx.level_counts]
        rels = ctx.rels
        results = np.where(rels >= 0, rels, 0).astype(np.float64)
        results[~ctx.valid] = 0.0
        seen: set[int] = set()
        for name, value in pairs:
            if _valid_int(name) and int(name) not in seen:
                seen.add(int(name))
                results[rels == int(name)] = float(value)
        self.results = results
        sequences, stops, tops = [], [], []
        for table in self.tables:
            seq: list[np.ndarray] = []
            stop = 0.0
            for _level, gain, count in reversed(table):
                if count == 0:
                    continue
                if gain <= 0.0:
                    stop = gain
                    break
                seq.append(np.full(count, gain))
            sequences.append(np.concatenate(seq) if seq else np.zeros(0))
            stops.append(stop)
            tops.append(table[-1][1] if table else 0.0)
        self.ideal_len = np.array([len(x) for x in sequences], dtype=np.int64)
        width = int(self.ideal_len.max()) + 1 if len(sequences) else 1
        ideal = np.repeat(np.array(stops, dtype=np.float64)[:, None], width, axis=1)
        for q, seq in enumerate(sequences):
            ideal[q, : len(seq)] = seq
        self.ideal = ideal
        self.top = np.array(tops, dtype=np.float64)


def _gains(ctx: Context, pairs) -> Gains:
    """One batch's Gains for these parameters, shared by the measures that use them (the
    default parameters: every gain measure of ``-m all_trec``)."""
    cache = ctx.__dict__.setdefault("_gains_cache", {})
    key = tuple((str(name), str(value)) for name, value in pairs)
    if key not in cache:
        cache[key] = Gains(ctx, pairs)
    return cache[key]


def _log2_columns(ctx: Context, width: int) -> np.ndarray:
    """log2(i + 2) for i = 0..width - 1, from the C library."""
    return np.array([math.log2(i + 2) for i in range(width)])


def _dcg_parts(ctx: Context, gains: Gains):
    """Running results DCG (n, width) and running ideal DCG (n, K + 1), rank by rank."""
    cached = gains.__dict__.get("_dcg_parts")
    if cached is not None:
        return cached
    logs = _log2_columns(ctx, max(ctx.width, gains.ideal.shape[1]))
    g = gains.results
    with np.errstate(divide="ignore", invalid="ignore"):
        results_terms = np.where(g != 0, g / logs[: ctx.width], 0.0)
        k = np.arange(gains.ideal.shape[1])[None, :]
        ideal_terms = np.where(
            k < gains.ideal_len[:, None], gains.ideal / logs[: gains.ideal.shape[1]], 0.0
        )
    parts = np.cumsum(results_terms, axis=1), np.cumsum(ideal_terms, axis=1)
    gains._dcg_parts = parts  # the callers read them, never write
    return parts


def _final(running: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """running[:, counts - 1], 0 where counts is 0."""
    rows = np.arange(running.shape[0])
    return np.where(counts > 0, running[rows, np.maximum(counts - 1, 0)], 0.0)


def m_ndcg(ctx, params):
    gains = _gains(ctx, params)
    results, ideal = _dcg_parts(ctx, gains)
    rd, idl = _final(results, ctx.num_ret), _final(ideal, gains.ideal_len)
    return np.where(idl > 0.0, _div(rd, idl), 0.0)


def m_dcg(ctx, params):
    results, _ = _dcg_parts(ctx, _gains(ctx, params))
    return _final(results, ctx.num_ret)


def m_ideal_dcg(ctx, params):
    gains = _gains(ctx, params)
    _, ideal = _dcg_parts(ctx, gains)
    return _final(ideal, gains.ideal_len)


def m_ndcg_rel(ctx, params):
    gains = _gains(ctx, params)
    results, ideal = _dcg_parts(ctx, gains)
    k = gains.ideal_len
    rows = ctx.rows[:, None]
    i = np.arange(ctx.width)[None, :]
    # At rank i the ideal DCG has grown to rank min(i, K - 1) (0 when K is 0).
    ideal_at = np.where(
        k[:, None] > 0, ideal[rows, np.minimum(i, np.maximum(k - 1, 0)[:, None])], 0.0
    )
    relevant = (gains.results > 0) & ctx.valid
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(relevant, results / ideal_at, 0.0)
        total = seq_rowsum(terms)
        rd, idl = _final(results, ctx.num_ret), _final(ideal, k)
        total = total + (k - relevant.sum(axis=1)).astype(np.float64) * rd / idl
        return np.where(total > 0.0, total / k, 0.0)


def m_Rndcg(ctx, params):
    gains = _gains(ctx, params)
    results, ideal = _dcg_parts(ctx, gains)
    k = gains.ideal_len
    columns = gains.ideal.shape[1]
    rows = ctx.rows[:, None]
    c = np.arange(columns)[None, :]
    previous = np.concatenate([gains.top[:, None], gains.ideal[:, :-1]], axis=1)
    change = (gains.ideal != previous) & (c <= k[:, None])
    before = np.maximum(c - 1, 0)
    ideal_before = np.where(c >= 1, ideal[rows, before], 0.0)
    rd_index = np.minimum(before, np.maximum(ctx.num_ret - 1, 0)[:, None])
    rd_before = np.where((c >= 1) & (ctx.num_ret[:, None] > 0), results[rows, rd_index], 0.0)
    added = change & (ideal_before > 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = seq_rowsum(np.where(added, rd_before / ideal_before, 0.0))
        rd, idl = _final(results, ctx.num_ret), _final(ideal, k)
        extra = (ctx.num_ret > k + 1) & (idl > 0.0)
        total = np.where(extra, total + rd / idl, total)
        changed = added.sum(axis=1) + extra
        value = total / changed.astype(np.float64)
    return np.where(ctx.num_rel > 0, value, 0.0)


def m_G(ctx, params):
    gains = _gains(ctx, params)
    g = gains.results
    k = gains.ideal_len
    i = np.arange(ctx.width)[None, :]
    ideal_here = np.where(
        i < k[:, None], gains.ideal[ctx.rows[:, None], np.minimum(i, gains.ideal.shape[1] - 1)], 0.0
    )
    cost = np.where((i < k[:, None]) & (ideal_here >= 1.0), ideal_here, 1.0)
    sum_cost = np.cumsum(cost, axis=1)
    sum_results = np.cumsum(g, axis=1)
    where = np.nonzero((g != 0) & ctx.valid)
    terms = np.zeros_like(g)
    if len(where[0]):
        bases = (2 + sum_cost[where]) - sum_results[where]
        terms[where] = g[where] / _c_log2_all(bases)
    results_g = seq_rowsum(terms)
    with np.errstate(divide="ignore", invalid="ignore"):
        ideal_terms = np.where(
            np.arange(gains.ideal.shape[1])[None, :] < k[:, None], gains.ideal, 0.0
        )
    sum_ideal = seq_rowsum(ideal_terms)
    return np.where(sum_ideal > 0.0, _div(results_g, sum_ideal), 0.0)


def _c_log2_all(values: np.ndarray) -> np.ndarray:
    """math.log2 of each value (the C library's), ``_c_log2`` where it raises."""
    listed = values.tolist()
    if listed and min(listed) > 0:
        return np.array(list(map(math.log2, listed)))
    return np.array([math.log2(b) if b > 0 else _c_log2(b) for b in listed])


def _c_log2(x: float) -> float:
    """C's log2 where math.log2 raises: -inf at 0, NaN below."""
    return -math.inf if x == 0 else math.nan


#: At most this many cells in ``_ideal_dcg``'s matrices (else the loop over the queries).
IDEAL_CELLS = 1 << 24
_LOG2_FROM_2: list[np.ndarray] = [np.zeros(0)]


def _log2_from_2(size: int) -> np.ndarray:
    """math.log2(i + 2) for i < size (the C library's values, as the loop computes)."""
    if len(_LOG2_FROM_2[0]) < size:
        _LOG2_FROM_2[0] = np.array([math.log2(i + 2) for i in range(max(size, 1024))])
    return _LOG2_FROM_2[0][:size]


def _ideal_dcg(ctx):
    """The ideal ranking's DCG after each rank, all queries of the batch at once:
    (sums (n, M + 1) with sums[q, i] the DCG of the first i ideal documents, lengths (n,)
    the number of positive-grade documents); None when the matrix would be large (the
    loop of ``m_ndcg_cut`` decides). Each row is summed left to right, as the loop's
    1-D cumsum is."""
    counts_list = ctx.level_counts
    levels = max((len(c) for c in counts_list), default=0)
    n = ctx.n
    if levels <= 1:
        return np.zeros((n, 1)), np.zeros(n, np.int64)
    table = np.zeros((n, levels), np.int64)
    for q, counts in enumerate(counts_list):
        table[q, : len(counts)] = counts
    per_level = table[:, :0:-1]  # levels L - 1 down to 1
    lengths = per_level.sum(axis=1)
    size = int(lengths.max())
    if n * (size + 1) > IDEAL_CELLS:
        return None
    grades = np.repeat(np.tile(np.arange(levels - 1, 0, -1), n), per_level.ravel())
    at = np.arange(len(grades)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    ideal = np.zeros((n, size))
    ideal[np.repeat(np.arange(n), lengths), at] = grades
    sums = np.zeros((n, size + 1))
    np.cumsum(ideal / _log2_from_2(size)[None, :], axis=1, out=sums[:, 1:])
    return sums, lengths


def m_ndcg_cut(ctx, params):
    k = np.array(params, dtype=np.int64)
    gains = np.where(ctx.rels > 0, ctx.rels, 0).astype(np.float64)
    terms = np.where(gains > 0, _div(gains, ctx.log2_table[2 : ctx.width + 2]), 0.0)
    partial = np.zeros((ctx.n, ctx.width + 1))
    np.cumsum(terms, axis=1, out=partial[:, 1:])
    dcg = partial[ctx.rows[:, None], np.minimum(k[None, :], ctx.num_ret[:, None])]
    ideal = _ideal_dcg(ctx)
    if ideal is not None:
        sums, lengths = ideal
        at = sums[ctx.rows[:, None], np.minimum(k[None, :], lengths[:, None])]
        return np.where(at > 0.0, _div(dcg, at), dcg)
    out = np.zeros_like(dcg)
    for q in range(ctx.n):
        counts = ctx.level_counts[q]
        ideal_grades = np.repeat(np.arange(len(counts))[::-1], counts[::-1])
        ideal_grades = ideal_grades[ideal_grades > 0].astype(np.float64)
        if len(ideal_grades) == 0:
            out[q] = dcg[q]
            continue
        log2 = np.array([math.log2(i + 2) for i in range(len(ideal_grades))])
        ideal = np.concatenate([[0.0], np.cumsum(ideal_grades / log2)])
        at = ideal[np.minimum(k, len(ideal_grades))]
        out[q] = np.where(at > 0.0, _div(dcg[q], at), dcg[q])
    return out


def _rbp_p(pairs) -> float:
    p = 0.9
    for name, value in pairs:
        if name == "p":
            p = float(value)
    return p


def _powers(p: float, width: int) -> np.ndarray:
    """cur_p at ranks 0..width (cur_p = cur_p * p, from 1.0)."""
    out = np.empty(width + 1)
    out[0] = 1.0
    if width:
        out[1:] = np.multiply.accumulate(np.full(width, p))
    return out


def m_rbp(ctx, params):
    p = _rbp_p(params)
    powers = _powers(p, ctx.width)
    gains = _gains(ctx, params)
    g = gains.results.copy()
    # Gains normalised to [0, 1] per query when any lies outside (rbp's min and max
    # start uninitialised in trec_eval; 0 is what the stack holds after most measures).
    low = np.array([min([0.0, *(x[1] for x in t)]) for t in gains.tables])
    high = np.array([max([0.0, *(x[1] for x in t)]) for t in gains.tables])
    listed = np.zeros_like(ctx.rels, dtype=bool)
    listed |= (ctx.rels >= 0) & ctx.valid
    for name, _ in params:
        if _valid_int(name):
            listed |= ctx.rels == int(name)
    scale = (low < 0) | (high > 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        normalised = (g - low[:, None]) / (high - low)[:, None]
    g = np.where(scale[:, None] & listed, normalised, g)
    terms = np.where(g != 0, g * powers[None, :-1], 0.0)
    return (1.0 - p) * seq_rowsum(terms)


def m_rbp_resid(ctx, params):
    p = _rbp_p(params)
    powers = _powers(p, ctx.width)
    unjudged = (ctx.rels < 0) & ctx.valid
    total = seq_rowsum(np.where(unjudged, powers[None, :-1], 0.0))
    final = powers[ctx.num_ret]
    return np.where(unjudged.any(axis=1), final + (1 - p) * total, 0.0)


def relstrings(ctx, params) -> list[str]:
    length = int(params[0])
    out = []
    for q in range(ctx.n):
        n = max(min(length, int(ctx.num_ret[q])), 0)
        chars = []
        for rel in ctx.rels[q, :n].tolist():
            if rel > 9:
                chars.append(">")
            elif rel >= 0:
                chars.append(chr(48 + rel))
            elif rel == NONPOOL:
                chars.append("-")
            elif rel == UNJUDGED:
                chars.append(".")
            else:
                chars.append("<")
        out.append("".join(chars))
    return out


# ------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Measure:
    name: str
    compute: Callable | None
    params: str = "none"  # none | long_cut | double_cut | double_p | pair
    default: tuple = ()
    kind: str = "double"  # double | long | runid | relstring
    summary: str = "mean"  # mean | sum | gm | num_q | num_rel | none
    per_query: bool = True


_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALL_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)

#: measures.c's table, in its order (the order of the output).
TABLE: tuple[Measure, ...] = (
    Measure("runid", None, kind="runid", summary="none", per_query=False),
    Measure("num_q", m_num_q, kind="long", summary="num_q", per_query=False),
    Measure("num_ret", m_num_ret, kind="long", summary="sum"),
    Measure("num_rel", m_num_rel, kind="long", summary="num_rel"),
    Measure("num_rel_ret", m_num_rel_ret, kind="long", summary="sum"),
    Measure("map", m_map),
    Measure("gm_map", m_gm_map, summary="gm", per_query=False),
    Measure("Rprec", m_Rprec),
    Measure("bpref", m_bpref),
    Measure("recip_rank", m_recip_rank),
    Measure("iprec_at_recall", m_iprec_at_recall, "double_cut", _RECALL_POINTS),
    Measure("P", m_P, "long_cut", _CUTS),
    Measure("relstring", relstrings, "double_p", (10.0,), kind="relstring", summary="none"),
    Measure("recall", m_recall, "long_cut", _CUTS),
    Measure("infAP", m_infAP),
    Measure("gm_bpref", m_gm_bpref, summary="gm", per_query=False),
    Measure(
        "Rprec_mult",
        m_Rprec_mult,
        "double_cut",
        (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
    ),
    Measure("utility", m_utility, "double_p", (1.0, -1.0, 0.0, 0.0)),
    Measure("11pt_avg", m_11pt_avg, "double_p", _RECALL_POINTS),
    Measure("binG", m_binG),
    Measure("G", m_G, "pair"),
    Measure("dcg", m_dcg, "pair"),
    Measure("ideal_dcg", m_ideal_dcg, "pair"),
    Measure("ndcg", m_ndcg, "pair"),
    Measure("ndcg_rel", m_ndcg_rel, "pair"),
    Measure("Rndcg", m_Rndcg, "pair"),
    Measure("ndcg_cut", m_ndcg_cut, "long_cut", _CUTS),
    Measure("map_cut", m_map_cut, "long_cut", _CUTS),
    Measure("relative_P", m_relative_P, "long_cut", _CUTS),
    Measure("success", m_success, "long_cut", (1, 5, 10)),
    Measure("set_P", m_set_P),
    Measure("set_relative_P", m_set_relative_P),
    Measure("set_recall", m_set_recall),
    Measure("set_map", m_set_map),
    Measure("set_F", m_set_F, "double_p", (1.0,)),
    Measure("num_nonrel_judged_ret", m_num_nonrel_judged_ret, kind="long", summary="sum"),
    Measure("rbp", m_rbp, "pair"),
    Measure("rbp_resid", m_rbp_resid, "pair"),
    Measure("unj", m_unj, "long_cut", (5, 10, 20)),
)

#: The measures of the preference and judgment-group formats, which trec_eval knows by
#: name; verity-trec-eval refuses them (with -R prefs, qrels_prefs, qrels_jg).
REFUSED_NAMES = (
    "prefs_num_prefs_poss",
    "prefs_num_prefs_ful",
    "prefs_num_prefs_ful_ret",
    "prefs_simp",
    "prefs_pair",
    "prefs_avgjg",
    "prefs_avgjg_Rnonrel",
    "prefs_simp_ret",
    "prefs_pair_ret",
    "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret",
    "prefs_simp_imp",
    "prefs_pair_imp",
    "prefs_avgjg_imp",
    "map_avgjg",
    "P_avgjg",
    "Rprec_mult_avgjg",
    "yaap",
)

NICKNAMES = {
    "official": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map",
        "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P",
    ),
    "set": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P",
        "set_recall", "set_relative_P", "set_map", "set_F",
    ),
    "all_trec": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map",
        "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P", "relstring",
        "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref",
        "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success",
        "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G",
        "set_P", "set_recall", "set_relative_P", "set_map", "set_F",
        "num_nonrel_judged_ret",
    ),
    "all_prefs": (
        "runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful",
        "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair", "prefs_avgjg",
        "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret",
        "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp",
    ),
    "prefs": (
        "runid", "num_q", "prefs_num_prefs_poss", "prefs_num_prefs_ful",
        "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair", "prefs_avgjg",
    ),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
}  # fmt: skip
