"""Benchmark ``manage.py import_collection`` on the TREC DL 2019 passage qrels (not a test).

9,260 judgments of 43 queries from ``../shared/realdata/trec-dl-2019-passage/`` (or
``$VERITY_SHARED``), every item created as a placeholder, statuses set: the import that
tests/judgments/test_imports.py checks for correctness, timed here instead of there. Each
repetition runs in a fresh throwaway SQLite file (``VERITY_VAR_DIR`` in a temporary
folder), or in a fresh PostgreSQL database with ``--db postgres``; the time is the
command's own wall time, taken in its process after migrations.

    .venv/bin/python bench/qrels_import_bench.py                 # SQLite, 3 repetitions
    .venv/bin/python bench/qrels_import_bench.py --db postgres --repeat 5

It used to be a test asserting under 10 s; the figure belongs here (bench/README.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VERITY_SHARED", ROOT.parent / "shared"))
DL19 = SHARED / "realdata" / "trec-dl-2019-passage"

TIMED = """
import time
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
started = time.perf_counter()
call_command(
    "import_collection", "--collection", "dl19", "--create", "--unit", "chunk",
    "--scale", "0:irrelevant,1:related,2:highly relevant,3:perfectly relevant",
    "--relevant-grade", "2", "--queries", {topics!r}, "--qrels", {qrels!r},
    "--create-missing-items", "--set-status", stdout=open("/dev/null", "w"),
    stderr=open("/dev/null", "w"),
)
print(time.perf_counter() - started)
"""


def once(db: str, pg_host: str) -> float:
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings")
    code = TIMED.format(topics=str(DL19 / "topics.tsv"), qrels=str(DL19 / "qrels.txt"))
    with tempfile.TemporaryDirectory() as tmp:
        env["VERITY_VAR_DIR"] = tmp
        name = None
        if db == "postgres":
            name = f"verity_qrelsbench_{os.getpid()}"
            subprocess.run(["createdb", "-h", pg_host, "-U", "postgres", name], check=True)
            env["DATABASE_URL"] = f"postgres://postgres@{pg_host}:5432/{name}"
        else:
            env.pop("DATABASE_URL", None)
        try:
            out = subprocess.run(
                [sys.executable, "-c", code], cwd=ROOT, env=env, check=True,
                capture_output=True, text=True,
            )  # fmt: skip
        finally:
            if name:
                subprocess.run(["dropdb", "-h", pg_host, "-U", "postgres", "--if-exists", name])
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--pg-host", default="127.0.0.1")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not (DL19 / "qrels.txt").exists():
        sys.exit(f"no TREC DL 2019 qrels in {DL19}; set VERITY_SHARED")
    times = [once(args.db, args.pg_host) for _ in range(args.repeat)]
    print(
        f"import_collection, TREC DL 2019 qrels (9,260 judgments), {args.db}: "
        f"median {statistics.median(times):.2f} s, runs {', '.join(f'{t:.2f}' for t in times)}"
    )


if __name__ == "__main__":
    main()
