"""verity-trec-eval against trec_eval 10.0, side by side in one run (not a test).

Generates (once; reused if present) a TREC run of QUERIES x DEPTH lines with tied scores
and graded qrels, builds trec_eval 10.0 from ``../shared/reference/trec_eval-10.0`` (or
takes ``--trec-eval PATH``), then runs each program on the same files and flags,
alternating the two at every repetition, and reports CPU time (user + system of the child,
from ``os.wait4``, which moves less with the machine's load than wall time), peak RSS, and
whether the outputs are byte-identical. Issue 26's targets: with ``-q -c`` and the default
measures at most 0.3x trec_eval's CPU and at most its memory; ``-m all_trec`` at most 0.5x.

    .venv/bin/python bench/trec_eval_bench.py                 # 10,000 x 1,000 = 10M lines
    .venv/bin/python bench/trec_eval_bench.py --small         # 1,000 x 100, a quick check
    .venv/bin/python bench/trec_eval_bench.py --queries 1000 --depth 1000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = Path(os.environ.get("VERITY_SHARED", ROOT.parent / "shared")) / "reference"
FLAG_SETS = (["-q", "-c"], ["-q", "-c", "-m", "all_trec"])
TARGETS = {"-q -c": 0.3, "-q -c -m all_trec": 0.5}


def generate(directory: Path, queries: int, depth: int) -> tuple[Path, Path]:
    run = directory / f"run.{queries}x{depth}"
    qrels = directory / f"qrels.{queries}x{depth}"
    if run.exists() and qrels.exists():
        return qrels, run
    rnd = random.Random(26)
    with open(run, "w") as run_out, open(qrels, "w") as qrels_out:
        for q in range(queries):
            judged = min(depth, 300)
            for d in range(judged):
                qrels_out.write(f"{q} 0 d{q}_{d} {rnd.choice((0, 0, 0, 1, 2, 3))}\n")
            lines = []
            for d in range(depth):
                doc = f"d{q}_{rnd.randrange(depth * 3)}_{d}" if d % 3 else f"d{q}_{d}"
                score = round(rnd.random() * 50, 2)  # ties at two decimals
                lines.append(f"{q} Q0 {doc} {d + 1} {score} bench\n")
            run_out.writelines(lines)
    return qrels, run


def build_trec_eval(directory: Path) -> Path:
    source = SOURCE / "trec_eval-10.0"
    if not source.exists():
        sys.exit(f"trec_eval 10.0's source not found at {source}; pass --trec-eval PATH")
    build = directory / "trec_eval-10.0"
    binary = build / "trec_eval"
    if not binary.exists():
        shutil.rmtree(build, ignore_errors=True)
        shutil.copytree(source, build)
        subprocess.run(["make", "trec_eval"], cwd=build, check=True, capture_output=True)
    return binary


def measure(argv: list[str], out_path: Path) -> tuple[float, int, int]:
    """(CPU seconds, peak RSS in KB, exit status) of one child process."""
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=1_000)
    parser.add_argument("--small", action="store_true", help="1,000 queries x 100")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--trec-eval", type=Path, help="a built trec_eval 10 binary")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "verity-te")
    args = parser.parse_args()
    if args.small:
        args.queries, args.depth = 1_000, 100
    args.dir.mkdir(parents=True, exist_ok=True)
    qrels, run = generate(args.dir, args.queries, args.depth)
    binary = args.trec_eval or build_trec_eval(args.dir)
    verity = [sys.executable, "-m", "verity_eval.trec_eval.cli"]
    lines = args.queries * args.depth
    print(f"{lines:,} run lines ({args.queries:,} queries x {args.depth:,}), "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| flags | trec_eval CPU s / RSS MB | verity-trec-eval CPU s / RSS MB | CPU ratio "
          "| RSS ratio | target | identical |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---|")
    for flags in FLAG_SETS:
        best: dict[str, tuple[float, int]] = {}
        identical = True
        for _ in range(args.repeat):
            outputs = {}
            for name, program in (("c", [str(binary)]), ("verity", verity)):
                out = args.dir / f"out.{name}"
                cpu, rss, status = measure([*program, *flags, str(qrels), str(run)], out)
                if status != 0:
                    sys.exit(f"{name} exited {status} on {flags}")
                old = best.get(name)
                best[name] = (min(cpu, old[0]), max(rss, old[1])) if old else (cpu, rss)
                outputs[name] = out.read_bytes()
            identical &= outputs["c"] == outputs["verity"]
        (c_cpu, c_rss), (v_cpu, v_rss) = best["c"], best["verity"]
        label = " ".join(flags)
        print(
            f"| `{label}` | {c_cpu:.2f} / {c_rss / 1024:.0f} | {v_cpu:.2f} / {v_rss / 1024:.0f} "
            f"| {v_cpu / c_cpu:.2f} | {v_rss / c_rss:.2f} | {TARGETS[label]} | "
            f"{'yes' if identical else 'NO'} |"
        )


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
