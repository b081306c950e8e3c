"""Differential tests: our per-query values against pytrec_eval (trec_eval 9 inside).

Hundreds of seeded random qrels/runs with score ties (scores drawn from a small set, and
distinct scores kept > 1e-3 apart because pytrec_eval rounds them to 32-bit floats),
graded labels including -1, unjudged items, short and empty runs, and queries missing on
either side. Every shared measure must agree per query to 1e-9 on our scorable queries
(pytrec_eval evaluates only queries present in both files; our scorable queries absent
from the run must score 0).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
import pytrec_eval

from verity_eval import EvalParams, evaluate, read_qrels, read_run

KS = (1, 3, 5, 10)
PAIRS = [("RR", "recip_rank"), ("AP", "map"), ("Rprec", "Rprec"), ("bpref", "bpref")]
for _k in KS:
    PAIRS += [
        (f"R@{_k}", f"recall_{_k}"),
        (f"P@{_k}", f"P_{_k}"),
        (f"nDCG@{_k}", f"ndcg_cut_{_k}"),
        (f"AnyHit@{_k}", f"success_{_k}"),
    ]
TREC_MEASURES = {t for _, t in PAIRS}
#: 250 generated cases; scripts/mutate.sh sets VERITY_ORACLE_CASES lower so that each of
#: thousands of mutants is tried in seconds (the cases are the same, only fewer).
SEEDS = range(int(os.environ.get("VERITY_ORACLE_CASES", "250")))


def _case(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    tie_scores = [0.5, 1.0, 1.5, 2.0, 7.25]
    for qn in range(rng.randint(1, 7)):
        qid = str(rng.choice([qn, qn + 100, f"q{qn}"]))
        pool = [f"d{rng.randint(0, 60)}" for _ in range(30)]
        if rng.random() < 0.9:
            judged = rng.sample(sorted(set(pool)), k=min(len(set(pool)), rng.randint(0, 15)))
            qrels[qid] = {d: rng.choice([-1, 0, 0, 1, 1, 2, 3]) for d in judged}
            # judged items the run cannot retrieve
            for j in range(rng.randint(0, 3)):
                qrels[qid][f"x{j}"] = rng.choice([0, 1, 2])
        if rng.random() < 0.85:
            docs = list(dict.fromkeys(rng.sample(pool, k=rng.randint(0, len(pool)))))
            docs += [f"u{j}" for j in range(rng.randint(0, 3))]  # never judged
            if rng.random() < 0.5:
                scores = [rng.choice(tie_scores) for _ in docs]
            else:
                scores = [round(rng.randint(0, 5000) * 1e-3 - 2.0, 3) for _ in docs]
            run[qid] = dict(zip(docs, scores, strict=True))
    return qrels, run


def _write(tmp: Path, seed: int, qrels: dict, run: dict) -> tuple[Path, Path]:
    # Even seeds: single spaces (pyarrow path); odd seeds: tabs and padding (careful path).
    sep = " " if seed % 2 == 0 else "\t  "
    qpath, rpath = tmp / f"q{seed}.txt", tmp / f"r{seed}.trec"
    qpath.write_text(
        "".join(
            f"{q}{sep}0{sep}{d}{sep}{g}\n" for q, docs in qrels.items() for d, g in docs.items()
        )
        or "# no judgments\n"
    )
    lines = []
    for q, docs in run.items():
        for rank, (d, s) in enumerate(docs.items(), start=1):
            lines.append(f"{q}{sep}Q0{sep}{d}{sep}{rank}{sep}{s}{sep}tag\n")
    rpath.write_text("".join(lines) or "# empty\n")
    return qpath, rpath


@pytest.mark.parametrize("rel_level", [1, 2])
@pytest.mark.parametrize("judged_only", [False, True], ids=["nonrel", "judged-only"])
def test_agrees_with_pytrec_eval(tmp_path: Path, rel_level: int, judged_only: bool) -> None:
    checked = 0
    for seed in SEEDS:
        qrels, run = _case(seed)
        if not any(g >= rel_level for docs in qrels.values() for g in docs.values()):
            continue
        if not any(docs for docs in run.values()):
            continue
        qpath, rpath = _write(tmp_path, seed, qrels, run)
        ours = evaluate(
            read_qrels(qpath),
            read_run(rpath),
            EvalParams(
                ks=KS, rel_level=rel_level, unjudged="judged-only" if judged_only else "nonrel"
            ),
        )
        oracle = pytrec_eval.RelevanceEvaluator(
            qrels, TREC_MEASURES, relevance_level=rel_level, judged_docs_only_flag=judged_only
        ).evaluate({q: d for q, d in run.items() if d})
        for qid, row in ours.per_query.items():
            if qid not in oracle:
                # scorable, but absent from the run (or an empty ranking): all zero
                assert all(row[ours_name] == 0 for ours_name, _ in PAIRS), (seed, qid)
                continue
            for ours_name, trec_name in PAIRS:
                assert row[ours_name] == pytest.approx(oracle[qid][trec_name], abs=1e-9), (
                    f"seed {seed} query {qid} {ours_name}: ours {row[ours_name]} vs "
                    f"pytrec_eval {trec_name} {oracle[qid][trec_name]}"
                )
            checked += 1
        # pytrec_eval scores every query in both files; the ones we exclude have no
        # judgment reaching rel_level.
        for qid in oracle:
            if qid not in ours.per_query:
                assert ours.excluded[qid] == "no_relevant_judgments"
    assert checked > 0.8 * len(SEEDS)
