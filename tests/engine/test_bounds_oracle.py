"""The ``bounds`` policy against pytrec_eval (trec_eval inside) on relabelled qrels.

For each generated case (the differential tests' cases: graded labels with -1, unjudged
items, score ties, short and empty runs), the oracle relabels the qrels itself and asks
pytrec_eval, so no number comes from the code under test:

* low: the qrels as they are, unjudged items absent (non-relevant for every measure; bpref
  skips them by definition, as trec_eval does under the default ``nonrel`` policy); for
  every measure but bpref, labelling them 0 instead gives the same value, and that is
  checked too;
* high, for a measure at cutoff k: the unjudged items among the first k of the ranking
  (as trec_eval orders it: score descending, ties by docid descending) added at grade
  ``rel_level``; for RR, AP, Rprec and bpref: every ranked unjudged item added at
  ``rel_level``.

Per query, ``low``/``high`` must be the smaller/larger of the two oracle values (1e-9);
macro aggregates their means, and pooled recall Σ hits / Σ |G| under each labelling. The
``judged-only`` policy is checked on the same cases against pytrec_eval's ``-J``.
"""

from __future__ import annotations

import math

import pytest
import pytrec_eval

from tests.engine.test_differential import KS, PAIRS, SEEDS, TREC_MEASURES, _case
from verity_eval import EvalParams, evaluate

RANK_MEASURES = {"RR", "AP", "Rprec", "bpref"}
TOL = 1e-9


def trec_order(scores: dict[str, float]) -> list[str]:
    """trec_eval's ranking: score descending, ties by docid in descending string order."""
    return [d for d, _ in sorted(scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)]


def rankings(run: dict[str, dict[str, float]]) -> dict[str, list[str]]:
    """The engine's input in list order: the order pytrec_eval scores, made here."""
    return {q: trec_order(scores) for q, scores in run.items()}


def unjudged_in(ranking: list[str], judged: dict[str, int]) -> list[str]:
    return [d for d in ranking if judged.get(d, -1) < 0]


def relabelled(qrels, run, grade: int, depth: int | None) -> dict[str, dict[str, int]]:
    """The qrels with each query's ranked unjudged items (in the first ``depth``; all when
    None) given ``grade``."""
    out = {q: dict(docs) for q, docs in qrels.items()}
    for q, scores in run.items():
        ranking = trec_order(scores)[:depth] if depth is not None else trec_order(scores)
        for d in unjudged_in(ranking, qrels.get(q, {})):
            out.setdefault(q, {})[d] = grade
    return out


def oracle(qrels, run, rel_level: int, *, judged_only: bool = False) -> dict:
    return pytrec_eval.RelevanceEvaluator(
        qrels, TREC_MEASURES, relevance_level=rel_level, judged_docs_only_flag=judged_only
    ).evaluate({q: d for q, d in run.items() if d})


def value(table: dict, qid: str, trec_name: str) -> float:
    # A query the run lacks (or ranks nothing for) scores 0 under every labelling.
    return table[qid][trec_name] if qid in table else 0.0


def n_relevant(qrels, qid: str, rel_level: int) -> int:
    return sum(1 for g in qrels.get(qid, {}).values() if g >= rel_level)


def cases_with_a_relevant_judgment(rel_level: int):
    """(seed, qrels, run) of the generated cases where some judgment reaches rel_level."""
    for seed in SEEDS:
        qrels, run = _case(seed)
        if any(g >= rel_level for docs in qrels.values() for g in docs.values()):
            yield seed, qrels, run


def depth_of(ours_name: str) -> int | None:
    return None if ours_name in RANK_MEASURES else int(ours_name.split("@")[1])


@pytest.mark.parametrize("rel_level", [1, 2])
def test_bounds_equal_pytrec_eval_on_relabelled_qrels(rel_level: int) -> None:
    checked = 0
    for seed, qrels, run in cases_with_a_relevant_judgment(rel_level):
        params = EvalParams(ks=KS, rel_level=rel_level, unjudged="bounds")
        ours = evaluate(qrels, rankings(run), params)
        zeroed = oracle(relabelled(qrels, run, 0, None), run, rel_level)
        low = oracle(qrels, run, rel_level)
        high = {d: oracle(relabelled(qrels, run, rel_level, d), run, rel_level) for d in KS}
        high[None] = oracle(relabelled(qrels, run, rel_level, None), run, rel_level)

        for qid, row in ours.per_query.items():
            for ours_name, trec_name in PAIRS:
                lo = value(low, qid, trec_name)
                hi = value(high[depth_of(ours_name)], qid, trec_name)
                where = f"seed {seed} query {qid} {ours_name} (trec_eval {trec_name})"
                assert row[ours_name]["low"] == pytest.approx(min(lo, hi), abs=TOL), where
                assert row[ours_name]["high"] == pytest.approx(max(lo, hi), abs=TOL), where
                if ours_name != "bpref":
                    assert value(zeroed, qid, trec_name) == pytest.approx(lo, abs=TOL), where
            for k in KS:
                # AllHit@k = 1 exactly when recall at k is 1 under that labelling.
                all_lo = float(math.isclose(value(low, qid, f"recall_{k}"), 1.0))
                all_hi = float(math.isclose(value(high[k], qid, f"recall_{k}"), 1.0))
                expected = {"low": min(all_lo, all_hi), "high": max(all_lo, all_hi)}
                assert row[f"AllHit@{k}"] == expected, (seed, qid, k)
                g = n_relevant(qrels, qid, rel_level)
                assert row[f"Ceiling@{k}"] == pytest.approx(min(k, g) / g), (seed, qid, k)
            checked += 1

        scorable = list(ours.per_query)
        for ours_name, _ in PAIRS:
            lows = [ours.per_query[q][ours_name]["low"] for q in scorable]
            highs = [ours.per_query[q][ours_name]["high"] for q in scorable]
            macro = ours.aggregates[ours_name]["macro"]
            if not scorable:
                assert macro is None
                continue
            assert macro["low"] == pytest.approx(math.fsum(lows) / len(lows), abs=TOL)
            assert macro["high"] == pytest.approx(math.fsum(highs) / len(highs), abs=TOL)
        for k in KS if scorable else ():
            # Pooled recall under each labelling: Σ hits / Σ |G| of that labelling.
            hi_qrels = relabelled(qrels, run, rel_level, k)
            sums = {"low": [0.0, 0], "high": [0.0, 0]}
            for q in scorable:
                for side, table, labels in (("low", low, qrels), ("high", high[k], hi_qrels)):
                    g = n_relevant(labels, q, rel_level)
                    sums[side][0] += value(table, q, f"recall_{k}") * g
                    sums[side][1] += g
            lo, hi = (sums[s][0] / sums[s][1] for s in ("low", "high"))
            pooled = ours.aggregates[f"R@{k}"]["pooled"]
            assert pooled == pytest.approx({"low": min(lo, hi), "high": max(lo, hi)}, abs=TOL)
    assert checked > 0.6 * len(SEEDS)


@pytest.mark.parametrize("rel_level", [3])
def test_judged_only_equals_pytrec_eval_minus_j(rel_level: int) -> None:
    checked = 0
    for seed, qrels, run in cases_with_a_relevant_judgment(rel_level):
        ours = evaluate(
            qrels, rankings(run), EvalParams(ks=KS, rel_level=rel_level, unjudged="judged-only")
        )
        table = oracle(qrels, run, rel_level, judged_only=True)
        for qid, row in ours.per_query.items():
            for ours_name, trec_name in PAIRS:
                assert row[ours_name] == pytest.approx(value(table, qid, trec_name), abs=TOL), (
                    seed,
                    qid,
                    ours_name,
                )
            checked += 1
    assert checked > 0.6 * len(SEEDS)


def test_the_issues_two_cases_by_hand() -> None:
    """Two breaks that once passed the whole suite, caught here by hand calculations."""
    # qrels {a: 3}, ranking [u, a], rel_level 1. High: u relabelled at grade 1, so
    # DCG = 1/log2(2) + 3/log2(3) and the ideal [a(3), u(1)] gives 3 + 1/log2(3):
    # nDCG@2 = 0.797 (relabelling at grade 2 would give 0.913).
    r = evaluate({"q": {"a": 3}}, {"q": ["u", "a"]}, EvalParams(ks=(2,), unjudged="bounds"))
    log3 = math.log2(3)
    assert r.per_query["q"]["nDCG@2"]["high"] == pytest.approx((1 + 3 / log3) / (3 + 1 / log3))
    # Ranking [x, u, v, a], x judged 0, G = {a}. Low: AP = (1/4)/1. High relabels every
    # ranked unjudged item (u and v), |G| = 3, hits at 2, 3, 4: (1/2 + 2/3 + 3/4)/3;
    # relabelling only u would give hits at 2 and 4 of |G| 2: (1/2 + 2/4)/2.
    r = evaluate({"q": {"a": 1, "x": 0}}, {"q": ["x", "u", "v", "a"]},
                 EvalParams(ks=(2,), unjudged="bounds"))  # fmt: skip
    assert r.per_query["q"]["AP"]["high"] == pytest.approx((1 / 2 + 2 / 3 + 3 / 4) / 3)
    assert r.per_query["q"]["AP"]["low"] == pytest.approx(1 / 4)
