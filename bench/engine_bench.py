"""Benchmark Verity's standalone scorer against the reference tools (not a test).

Generates (once; reused if present) a TREC run of QUERIES x DEPTH lines with score ties,
and graded qrels with 1-20 relevant items per query plus judged non-relevant ones, then
times each tool in its own subprocess on the same measures (P@10, R@100, nDCG@10, RR, AP),
file reading included, and reports wall time and peak RSS (from ``os.wait4``). Macro
means are cross-checked against pytrec_eval.

    .venv/bin/python bench/engine_bench.py            # 10,000 x 1,000 = 10M lines
    .venv/bin/python bench/engine_bench.py --small    # 1,000 x 100, a quick sanity run

ranx and ir_measures are optional (``pip install ranx ir_measures``); they are skipped
with a message when not importable. See bench/ENGINE.md for figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

ROOT = Path(__file__).resolve().parents[1]
MEASURES = ("P@10", "R@100", "nDCG@10", "RR", "AP")

PYTREC = r"""
import json, sys, pytrec_eval
qrels_path, run_path = sys.argv[1:3]
qrels = {}
with open(qrels_path) as fh:
    for line in fh:
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
run = {}
with open(run_path) as fh:
    for line in fh:
        q, _, d, _, s = line.split()[:5]
        run.setdefault(q, {})[d] = float(s)
names = {"P_10": "P@10", "recall_100": "R@100", "ndcg_cut_10": "nDCG@10",
         "recip_rank": "RR", "map": "AP"}
ev = pytrec_eval.RelevanceEvaluator(qrels, set(names))
res = ev.evaluate(run)
out = {names[m]: sum(r[m] for r in res.values()) / len(res) for m in names}
print(json.dumps(out))
"""

RANX = r"""
import json, sys
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
names = {"precision@10": "P@10", "recall@100": "R@100", "ndcg@10": "nDCG@10",
         "mrr": "RR", "map": "AP"}
res = evaluate(qrels, run, list(names))
print(json.dumps({names[k]: float(v) for k, v in res.items()}))
"""

IR_MEASURES = r"""
import json, sys, ir_measures
from ir_measures import P, R, nDCG, RR, AP
qrels = ir_measures.read_trec_qrels(sys.argv[1])
run = ir_measures.read_trec_run(sys.argv[2])
names = {P@10: "P@10", R@100: "R@100", nDCG@10: "nDCG@10", RR: "RR", AP: "AP"}
res = ir_measures.calc_aggregate(list(names), qrels, run)
print(json.dumps({names[k]: float(v) for k, v in res.items()}))
"""

VERITY_JSON = r"""
import json, sys
data = json.load(sys.stdin)
print(json.dumps({m: v["macro"] for m, v in data["aggregates"].items()}))
"""


def generate(run_path: Path, qrels_path: Path, queries: int, depth: int, seed: int = 7) -> None:
    """Write a TREC run with score ties (3 decimals) and graded qrels."""
    rng = np.random.default_rng(seed)
    # Pool size chosen so that ~60% of the ids are distinct, as in a real 10M-line run.
    pool = max(depth * 2, int(queries * depth * 0.9))
    docnum = np.empty(queries * depth, dtype=np.int64)
    for i in range(queries):
        docnum[i * depth : (i + 1) * depth] = rng.choice(pool, size=depth, replace=False)
    scores = np.round(np.sort(rng.random((queries, depth)) * 20, axis=1)[:, ::-1], 3).ravel()
    qnum = np.repeat(np.arange(queries), depth)
    n = queries * depth
    table = pa.table(
        {
            "q": pc.binary_join_element_wise("q", pc.cast(pa.array(qnum), pa.string()), ""),
            "z": pa.array(np.zeros(n, dtype=np.int8)).cast(pa.string()),
            "d": pc.binary_join_element_wise("D", pc.cast(pa.array(docnum), pa.string()), ""),
            "r": pa.array(np.tile(np.arange(1, depth + 1), queries)),
            "s": pa.array(scores),
            "t": pa.array(np.zeros(n, dtype=np.int8)).cast(pa.string()),
        }
    )
    table = table.set_column(1, "z", pc.replace_substring(table["z"], "0", "Q0"))
    table = table.set_column(5, "t", pc.replace_substring(table["t"], "0", "bench"))
    opts = pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    tmp = run_path.with_suffix(".tmp")
    pcsv.write_csv(table, tmp, opts)
    tmp.replace(run_path)

    lines: list[str] = []
    for i in range(queries):
        base = i * depth
        nrel = int(rng.integers(1, 21))
        in_run = int(rng.integers(0, nrel + 1))
        # Relevant items found by the run lean towards the top of the ranking.
        pos = np.unique(
            np.minimum((rng.exponential(depth / 8, size=in_run * 2)).astype(int), depth - 1)
        )[:in_run]
        nonrel_pos = rng.choice(depth, size=int(rng.integers(0, 21)), replace=False)
        nonrel_pos = np.setdiff1d(nonrel_pos, pos)
        for p in pos:
            lines.append(f"q{i} 0 D{docnum[base + p]} {int(rng.integers(1, 4))}\n")
        for j in range(nrel - pos.size):
            lines.append(f"q{i} 0 X{i}_{j} {int(rng.integers(1, 4))}\n")
        for p in nonrel_pos:
            lines.append(f"q{i} 0 D{docnum[base + p]} 0\n")
    tmp = qrels_path.with_suffix(".tmp")
    tmp.write_text("".join(lines))
    tmp.replace(qrels_path)


def timed(cmd: list[str], stdin_filter: str | None = None) -> tuple[float, float, str]:
    """Run ``cmd``; wall seconds, peak RSS in GB (that process alone), stdout."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        assert proc.stderr is not None
        errtext = proc.stderr.read().decode()
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise RuntimeError(f"{cmd[:3]} failed ({proc.returncode}): {errtext[-2000:]}")
        out.seek(0)
        text = out.read().decode()
    if stdin_filter is not None:
        text = subprocess.run(
            [sys.executable, "-c", stdin_filter],
            input=text,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return wall, usage.ru_maxrss / 1e6, text


def importable(module: str) -> bool:
    probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    return probe.returncode == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "verity-bench")
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--depth", type=int, default=1_000)
    ap.add_argument("--small", action="store_true", help="1,000 queries x 100: quick check")
    ap.add_argument("--skip", default="", help="comma-separated tools to skip")
    args = ap.parse_args()
    if args.small:
        args.queries, args.depth = 1_000, 100
    args.dir.mkdir(parents=True, exist_ok=True)
    run_path = args.dir / f"run_{args.queries}x{args.depth}.trec"
    qrels_path = args.dir / f"qrels_{args.queries}x{args.depth}.txt"
    if not (run_path.exists() and qrels_path.exists()):
        t = time.perf_counter()
        generate(run_path, qrels_path, args.queries, args.depth)
        print(f"generated {run_path} and {qrels_path} in {time.perf_counter() - t:.1f} s")
    else:
        print(f"reusing {run_path} and {qrels_path}")
    files = [str(qrels_path), str(run_path)]
    verity = [
        sys.executable,
        "-m",
        "scoring",
        *files,
        "--k",
        "10,100",
        "--measures",
        ",".join(MEASURES),
        "--format",
        "json",
    ]
    tools: list[tuple[str, list[str], str | None, str | None]] = [
        ("verity (python -m scoring)", verity, VERITY_JSON, None),
        (
            "pytrec_eval (dict parsing included)",
            [sys.executable, "-c", PYTREC, *files],
            None,
            "pytrec_eval",
        ),
        ("ir_measures", [sys.executable, "-c", IR_MEASURES, *files], None, "ir_measures"),
        ("ranx", [sys.executable, "-c", RANX, *files], None, "ranx"),
    ]
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    results: dict[str, tuple[float, float, dict[str, float]]] = {}
    print(f"{'tool':<38}{'wall s':>9}{'peak RSS GB':>13}  macro means")
    for label, cmd, filt, module in tools:
        short = label.split()[0]
        if short in skip:
            continue
        if module is not None and not importable(module):
            print(f"{label:<38}  skipped: {module} is not installed (pip install {module})")
            continue
        wall, rss, text = timed(cmd, filt)
        values = json.loads(text)
        results[short] = (wall, rss, values)
        means = " ".join(f"{m}={values[m]:.4f}" for m in MEASURES)
        print(f"{label:<38}{wall:>9.2f}{rss:>13.2f}  {means}")
    if "verity" in results and "pytrec_eval" in results:
        v, t = results["verity"], results["pytrec_eval"]
        worst = max(abs(v[2][m] - t[2][m]) for m in MEASURES)
        print(
            f"verity / pytrec_eval: wall {v[0] / t[0]:.2f}x, peak RSS {v[1] / t[1]:.2f}x; "
            f"largest macro difference {worst:.2e}"
        )


if __name__ == "__main__":
    main()
