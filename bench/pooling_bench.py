"""Replay judging strategy by strategy on TREC DL 2019 passage qrels (issue 28, item 4).

A benchmark, not a test: no database, no Django. Each strategy's order comes from
``judgments.pool_strategies.Replay``, the very rules the review queue follows; the next
pair a strategy serves gets its grade from the qrels (a pair the qrels lack: grade 0,
as TREC counts unjudged documents), as a reviewer would give it.

The runs are generated, seeded (``--seed``, 2019 by default), from the qrels:

* each query's *universe* is its judged passages (about 215 a query) plus 200 unjudged
  ids it shares across runs (``u<qid>-<n>``), and each run adds 20 unjudged ids of its own;
* run r of ``--runs`` (25) has a quality q_r spread evenly over [0, 1.5]; it scores each
  id of the universe ``q_r * grade + N(0, 1)`` (grade 0 for unjudged ids) and ranks the
  best ``--depth`` (100). Weak runs are close to random, strong runs rank the highly
  relevant first; all of them mix judged relevant, judged non-relevant and unjudged ids.

The pool is every run's first ``--depth`` items. For each strategy and budget (a share of
each query's pool, the same share for every query), it reports the share of the known
relevant items (grade >= 2, the track's binary level) in the pool that the strategy's
first judgments find, and Kendall's tau (scipy) between the runs ranked by mean nDCG@10
under the labels so far (unjudged: not relevant; the ideal from the labels so far, as
trec_eval computes it from partial qrels) and under all the qrels. Then, per strategy,
the judgments it needs to find 90% of each query's known relevant, as a share of the
pool: ``depth`` pooling judges the whole pool, so that share is the acceptance figure.

    .venv/bin/python bench/pooling_bench.py            # the table in bench/README.md
    .venv/bin/python bench/pooling_bench.py --depth 50 --runs 30 --seed 7
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from judgments.pool_strategies import Replay, Strategy

REPO = Path(__file__).resolve().parent.parent
# ../shared beside the checkout (the main one), or two levels up from a worktree.
QRELS = next(
    (d / "shared/realdata/trec-dl-2019-passage" for d in (REPO.parent, REPO.parent.parent)
     if (d / "shared/realdata").is_dir()),
    REPO.parent / "shared/realdata/trec-dl-2019-passage",
)  # fmt: skip
STRATEGIES = ["depth", "mtf", "bandit", "depth 5 + mtf", "depth 5 + bandit"]
BUDGETS = [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0]
RELEVANT = 2  # TREC DL: grade >= 2 counts as relevant for binary measures


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            qid, _, docid, grade = line.split()
            qrels[qid][docid] = int(grade)
    return dict(qrels)


def make_runs(
    qrels: dict[str, dict[str, int]], *, n_runs: int, depth: int, seed: int, coverage: float
) -> list[dict[str, list[str]]]:
    rng = np.random.default_rng(seed)
    qualities = np.linspace(0.0, 1.5, n_runs)
    runs: list[dict[str, list[str]]] = [{} for _ in range(n_runs)]
    for qid in sorted(qrels):
        shared = [f"u{qid}-{n}" for n in range(200)]
        judged = sorted(qrels[qid])
        for r, quality in enumerate(qualities):
            own = [f"r{r}-{qid}-{n}" for n in range(20)]
            ids = judged + shared
            if coverage < 1:  # this run's view of the query: a random share of the universe
                ids = [i for i in ids if rng.random() < coverage]
            ids += own
            grades = np.array([qrels[qid].get(i, 0) for i in ids], dtype=float)
            scores = quality * grades + rng.normal(0.0, 1.0, len(ids))
            top = np.argsort(-scores, kind="stable")[:depth]
            runs[r][qid] = [ids[i] for i in top]
    return runs


def ndcg10(ranking: list[str], labels: dict[str, int]) -> float:
    gains = [labels.get(i, 0) for i in ranking[:10]]
    dcg = sum(g / math.log2(k + 2) for k, g in enumerate(gains))
    ideal = sorted((g for g in labels.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(k + 2) for k, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def system_scores(runs: list[dict[str, list[str]]], labels: dict[str, dict[str, int]]) -> list:
    return [
        float(np.mean([ndcg10(run[qid], labels.get(qid, {})) for qid in sorted(run)]))
        for run in runs
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--qrels", type=Path, default=QRELS / "qrels.txt")
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--seed", type=int, default=2019)
    parser.add_argument(
        "--coverage",
        type=float,
        default=1.0,
        help="each run sees this random share of the query's universe (1: all of it)",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    qrels = read_qrels(args.qrels)
    runs = make_runs(
        qrels, n_runs=args.runs, depth=args.depth, seed=args.seed, coverage=args.coverage
    )
    qids = sorted(qrels)
    pools = {q: [run[q] for run in runs] for q in qids}
    pool_sizes = {q: len({i for run in pools[q] for i in run}) for q in qids}
    known = {
        q: {i for run in pools[q] for i in run if qrels[q].get(i, 0) >= RELEVANT} for q in qids
    }
    truth = system_scores(runs, qrels)
    total_pool = sum(pool_sizes.values())
    total_known = sum(len(k) for k in known.values())
    print(
        f"{len(qids)} queries, {len(runs)} generated runs (seed {args.seed}, coverage "
        f"{args.coverage:g}), pool depth "
        f"{args.depth}: {total_pool:,} pooled pairs, {total_known:,} known relevant "
        f"(grade >= {RELEVANT}) among them; {sum(len(v) for v in qrels.values()):,} qrels"
    )
    found_at: dict[str, dict[float, float]] = {}
    tau_at: dict[str, dict[float, float]] = {}
    need90: dict[str, int] = {}
    for spec in STRATEGIES:
        strategy = Strategy.parse(spec)
        orders = {}
        for q in qids:
            state = Replay(strategy, pools[q])
            order = []
            while (item := state.next()) is not None:
                order.append(item)
                state.judge(item, qrels[q].get(item, 0) >= RELEVANT)
            orders[q] = order
        need90[spec] = 0
        for q in qids:
            target = math.ceil(0.9 * len(known[q]))
            hits = 0
            for n, item in enumerate(orders[q], 1):
                if hits >= target:
                    break
                hits += item in known[q]
                if hits >= target:
                    need90[spec] += n
                    break
        found_at[spec], tau_at[spec] = {}, {}
        for budget in BUDGETS:
            labels: dict[str, dict[str, int]] = {}
            found = 0
            for q in qids:
                judged = orders[q][: round(budget * pool_sizes[q])]
                labels[q] = {i: qrels[q].get(i, 0) for i in judged}
                found += sum(1 for i in judged if i in known[q])
            found_at[spec][budget] = found / total_known
            tau_at[spec][budget] = kendalltau(system_scores(runs, labels), truth).statistic
    print()
    print("| judgments (share of the depth pool) | " + " | ".join(STRATEGIES) + " |")
    print("|---|" + "---:|" * len(STRATEGIES))
    for budget in BUDGETS:
        cells = [f"{100 * found_at[s][budget]:.0f}% / {tau_at[s][budget]:.2f}" for s in STRATEGIES]
        print(
            f"| {100 * budget:.0f}% ({round(budget * total_pool):,}) | " + " | ".join(cells) + " |"
        )
    print()
    print(
        "| judgments to find 90% of each query's known relevant | " + " | ".join(STRATEGIES) + " |"
    )
    print("|---|" + "---:|" * len(STRATEGIES))
    print(
        "| share of the depth pool | "
        + " | ".join(f"{100 * need90[s] / total_pool:.1f}% ({need90[s]:,})" for s in STRATEGIES)
        + " |"
    )
    took = time.perf_counter() - started
    print(f"\n(cells: relevant found / Kendall's tau of nDCG@10; {took:.0f} s)")


if __name__ == "__main__":
    main()
