"""A load test of a team at work (a benchmark, not a test): gunicorn + PostgreSQL on
127.0.0.1, driven by Locust (``bench/locustfile.py``) for a fixed time, then database
checks.

    .venv/bin/pip install -r bench/requirements.txt
    .venv/bin/python bench/load_test.py                  # 2 minutes, ~4 with set-up
    .venv/bin/python bench/load_test.py --duration 30 --keep

Set-up (not timed): a throwaway database ``verity_load_<pid>`` on ``--server`` (default
``postgres://postgres@127.0.0.1:5432``), migrated; one collection of 300 queries (scale 0
not relevant, 1 relevant, 2 highly relevant), 5 judged items each, frozen as snapshot 1;
a run of 45 items per query imported with pool depth 45, which queues 12,000 review
tasks, and scored (k = 10). 50 reviewer, 5 editor and 3 evaluator accounts with API tokens.

Load: gunicorn as docs/DEPLOY.md runs it (``--workers 3``, sync workers, DEBUG off), and
Locust headless with 50 reviewers claiming and judging (0.5-1.5 s between items), 5 editors
regrading judgments with If-Match (1-3 s), 3 evaluators exporting qrels and reading the
report (1-3 s), for ``--duration`` seconds; Locust stops itself.

Printed: requests per second, p50/p95/p99 per endpoint, failures (any unexpected status;
a 412 to an editor is the intended answer to a stale If-Match and counted apart), the
load average while it ran (the machine may be shared), the server's CPU per request and
the load generator's CPU (below), and these database checks:

* every acknowledged judgment (201) is stored, exactly once, for the pair it named;
* no task was handed to two reviewers (each claim went to one reviewer, and each done
  task's judgment is by the reviewer that claimed it);
* the history has one row per acknowledged change: the rows added equal the acknowledged
  creates plus edits, and every judgment has as many history rows as its version.

CPU: the gunicorn workers' CPU time (user + system, from ``/proc/<pid>/stat``) over the
run, divided by the requests Locust made; and per endpoint class, the CPU each request
cost its worker (``bench/gunicorn_cpu.py``'s hooks: a sync worker serves one request at
a time, so its process CPU time across the request is that request's). The load
generator's own CPU over the run is printed too; it runs at ``--generator-nice`` (10) so
that on a small machine it yields the cores to the server instead of starving it.

The exit status is 1 if any check fails or any request failed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's apps, whichever one is installed
BIN = Path(sys.executable).parent
SLUG = "load"
QUERIES, JUDGED, DEPTH = 300, 5, 45


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _admin_sql(server: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(sql)


def _write_inputs(folder: Path) -> tuple[Path, Path]:
    scale = [{"grade": 0, "name": "not relevant"}, {"grade": 1, "name": "relevant"},
             {"grade": 2, "name": "highly relevant"}]  # fmt: skip
    lines = [{"type": "collection", "slug": SLUG, "name": "Load test", "scale": scale,
              "relevant_grade": 1, "pool_depth": DEPTH}]  # fmt: skip
    for q in range(QUERIES):
        lines.append({"type": "query", "id": f"q{q}", "text": f"query {q}", "status": "relevant"})
        lines += [
            {"type": "judgment", "query": f"q{q}", "item": f"d{q}-{j}", "grade": 1}
            for j in range(JUDGED)
        ]
    bundle = folder / "bundle.jsonl"
    bundle.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run = folder / "bm25.trec"
    with run.open("w") as fh:
        for q in range(QUERIES):
            ids = [f"d{q}-{j}" for j in range(JUDGED)]
            ids += [f"n{q}-{j}" for j in range(DEPTH - JUDGED)]
            for rank, docid in enumerate(ids, 1):
                fh.write(f"q{q} Q0 {docid} {rank} {100 - rank} bm25\n")
    return bundle, run


def _set_up(env: dict[str, str], folder: Path, counts: dict[str, int]) -> dict[str, Any]:
    def manage(*args: object) -> None:
        subprocess.run(
            [sys.executable, "manage.py", *map(str, args)], cwd=ROOT, env=env, check=True,
            stdout=subprocess.DEVNULL,
        )  # fmt: skip

    bundle, run = _write_inputs(folder)
    manage("migrate", "--no-input")
    manage("import_collection", bundle, "--create-missing-items")
    manage("freeze_snapshot", SLUG, "--note", "load test")
    manage("import_run", SLUG, run, "--name", "bm25", "--quiet")
    manage("score", SLUG, "bm25", "--snapshot", 1, "--k", 10)

    os.environ.update(env)
    import django

    django.setup()
    from django.db import connection

    from judgments.models import Collection, ReviewTask
    from judgments.services import create_api_token, set_membership
    from scoring.models import Evaluation

    collection = Collection.objects.get(slug=SLUG)
    from django.contrib.auth import get_user_model

    tokens: dict[str, list[list[str]]] = {}
    for role, n, member_role in (
        ("reviewer", counts["reviewers"], "reviewer"),
        ("editor", counts["editors"], "reviewer"),
        ("evaluator", counts["evaluators"], "evaluator"),
    ):
        tokens[role] = []
        for i in range(n):
            user = get_user_model().objects.create_user(f"{role}{i}")
            set_membership(collection=collection, user=user, role=member_role)
            tokens[role].append([user.username, create_api_token(user=user).key])
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return {
        "slug": SLUG,
        "tokens": tokens,
        "evaluation": Evaluation.objects.get(run__collection=collection).pk,
        "edited_queries": [f"q{q}" for q in range(QUERIES)],
        "open_tasks": ReviewTask.objects.filter(collection=collection).count(),
        **counts,
    }


def _wait_until_up(url: str, deadline: float) -> None:
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"gunicorn did not answer {url}")


def _load_sampler(samples: list[float], stop: threading.Event) -> None:
    while not stop.wait(5):
        samples.append(os.getloadavg()[0])


def _worker_pids(master: int) -> list[int]:
    """The gunicorn master's children (its workers), from /proc."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == master:  # field 4, ppid
            pids.append(int(stat.parent.name))
    return sorted(pids)


def _cpu_seconds(pids: list[int]) -> dict[int, float]:
    """user + system CPU seconds of each live process (fields 14 and 15 of /proc/pid/stat)."""
    tick = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[pid] = (int(fields[11]) + int(fields[12])) / tick
    return seconds


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _per_class_cpu(folder: Path) -> dict[str, list[float]]:
    """What the workers' hooks (bench/gunicorn_cpu.py) wrote: class -> [requests, s]."""
    totals: dict[str, list[float]] = {}
    for path in folder.glob("worker-*.json"):
        for name, (n, spent) in json.loads(path.read_text()).items():
            row = totals.setdefault(name, [0, 0.0])
            row[0] += n
            row[1] += spent
    return totals


def _print_cpu(
    workers: float, requests: int, elapsed: float, generator: float, classes: dict[str, list[float]]
) -> None:
    cores = os.cpu_count() or 1
    per_request = 1000 * workers / requests if requests else float("nan")
    print(f"\nserver CPU: {workers:.1f} s in the gunicorn workers over the run "
          f"({100 * workers / elapsed / cores:.0f}% of {cores} cores), "
          f"{per_request:.1f} ms per request ({requests} requests)")  # fmt: skip
    print(f"load generator CPU: {generator:.1f} s "
          f"({100 * generator / elapsed / cores:.0f}% of {cores} cores)")  # fmt: skip
    print(f"\n{'endpoint class (worker CPU per request)':44} {'requests':>8} {'ms/request':>10}")
    for name, (n, spent) in sorted(classes.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:44} {int(n):>8} {1000 * spent / n if n else 0:>10.1f}")


def _stats(prefix: str) -> list[dict[str, str]]:
    with open(f"{prefix}_stats.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _print_stats(rows: list[dict[str, str]], duration: float) -> tuple[int, float]:
    print(f"\n{'endpoint':38} {'requests':>8} {'fail':>5} {'rps':>6} {'p50':>6} {'p95':>6} "
          f"{'p99':>6}  (ms)")  # fmt: skip
    failures = 0
    judge_p95 = 0.0
    for row in rows:
        name = row["Name"] if row["Type"] else "Aggregated"
        if row["Name"] == "Aggregated":
            name = "all"
        n, fails = int(row["Request Count"]), int(row["Failure Count"])
        print(f"{(row['Type'] + ' ' + name).strip()[:38]:38} {n:>8} {fails:>5} "
              f"{n / duration:>6.1f} {row['50%']:>6} {row['95%']:>6} {row['99%']:>6}")  # fmt: skip
        if row["Name"] == "Aggregated":
            failures = fails
        if "judge" in row["Name"]:
            judge_p95 = float(row["95%"])
    return failures, judge_p95


def _check_database(acks: dict[str, list[Any]], before: dict[str, int]) -> list[str]:
    from judgments.models import Judgment, JudgmentChange, ReviewTask

    problems: list[str] = []
    judged = acks["judged"]
    # 1. Every acknowledged judgment is stored once, for the pair it named.
    ids = [row[1] for row in judged]
    if len(ids) != len(set(ids)):
        problems.append(f"{len(ids) - len(set(ids))} judgment ids acknowledged twice")
    # Who created each judgment is in its first history row (editors change `reviewer`).
    first_rows = JudgmentChange.objects.filter(version=1).values_list(
        "query_id", "item_id", "changed_by__username"
    )
    created_by = {(q, i): who for q, i, who in first_rows}
    stored = {
        j.pk: (j.query.external_id, j.item.external_id, j.client_key,
               created_by.get((j.query_id, j.item_id)))
        for j in Judgment.objects.filter(pk__in=ids).select_related("query", "item")
    }  # fmt: skip
    for task_id, pk, query, item, key, _reviewer in judged:
        if stored.get(pk) is None:
            problems.append(f"judgment {pk} (task {task_id}) acknowledged but not stored")
        elif stored[pk][:2] != (query, item) or stored[pk][2] != key:
            problems.append(f"judgment {pk}: stored {stored[pk]}, acknowledged {query} {item}")
    made = Judgment.objects.count() - before["judgments"]
    if made != len(judged):
        problems.append(f"{made} judgments were created, {len(judged)} acknowledged")
    # 2. No task was handed to two reviewers.
    holders: dict[int, set[str]] = {}
    for task_id, reviewer in acks["claims"]:
        holders.setdefault(task_id, set()).add(reviewer)
    shared = {t: r for t, r in holders.items() if len(r) > 1}
    if shared:
        problems.append(f"{len(shared)} tasks claimed by two reviewers, e.g. {next(iter(shared))}")
    done = dict(
        ReviewTask.objects.filter(pk__in=list(holders), status="done").values_list("pk", "query")
    )
    for task_id, pk, _q, _i, _k, reviewer in judged:
        if task_id not in done:
            problems.append(f"task {task_id} judged (judgment {pk}) but not done")
        elif stored.get(pk) and stored[pk][3] != reviewer:
            problems.append(f"task {task_id}: judged by {stored[pk][3]}, claimed by {reviewer}")
    # 3. One history row per acknowledged change.
    edits = sum(1 for _pk, version in acks["edits"] if version is not None)
    added = JudgmentChange.objects.count() - before["changes"]
    if added != len(judged) + edits:
        problems.append(
            f"{added} history rows added for {len(judged)} creates + {edits} edits acknowledged"
        )
    per_pair = Counter(JudgmentChange.objects.values_list("query_id", "item_id"))
    wrong = [
        (q, i)
        for q, i, version in Judgment.objects.values_list("query_id", "item_id", "version")
        if per_pair[(q, i)] != version
    ]
    if wrong:
        problems.append(f"{len(wrong)} judgments whose history rows differ from their version")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--duration", type=int, default=120, help="seconds of load")
    parser.add_argument("--reviewers", type=int, default=50)
    parser.add_argument("--editors", type=int, default=5)
    parser.add_argument("--evaluators", type=int, default=3)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn workers")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument(
        "--generator-nice",
        type=int,
        default=10,
        help="niceness of the load generator (Locust), so that it does not starve the server",
    )
    args = parser.parse_args()
    db = f"verity_load_{os.getpid()}"
    folder = Path(tempfile.mkdtemp(prefix="verity-load-"))
    env = {
        **os.environ,
        "DATABASE_URL": f"{args.server}/{db}",
        "DEBUG": "0",
        "SECRET_KEY": "load-test-only-" + "x" * 40,
        "ALLOWED_HOSTS": "127.0.0.1",
        "VERITY_VAR_DIR": str(folder / "var"),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
        "VERITY_CPU_DIR": str(folder / "cpu"),
    }
    (folder / "cpu").mkdir()
    counts = {"reviewers": args.reviewers, "editors": args.editors, "evaluators": args.evaluators}
    _admin_sql(args.server, f'CREATE DATABASE "{db}"')
    server = None
    try:
        t0 = time.time()
        config = _set_up(env, folder, counts)
        print(f"set-up: {time.time() - t0:.0f} s, {config['open_tasks']} review tasks queued")
        from judgments.models import Judgment, JudgmentChange

        before = {"judgments": Judgment.objects.count(), "changes": JudgmentChange.objects.count()}
        config_path, acks_path = folder / "config.json", folder / "acks.json"
        config_path.write_text(json.dumps(config))
        port = _free_port()
        host = f"http://127.0.0.1:{port}"
        log = (folder / "gunicorn.log").open("w")
        server = subprocess.Popen(
            [str(BIN / "gunicorn"), "config.wsgi", "--bind", f"127.0.0.1:{port}",
             "--workers", str(args.workers), "--forwarded-allow-ips", "127.0.0.1",
             "--timeout", "120", "-c", str(ROOT / "bench" / "gunicorn_cpu.py")],
            cwd=ROOT, env=env, stderr=log,
        )  # fmt: skip
        # Each worker imports the URL conf (scipy among it) on its first request, which
        # on a busy 2-core machine can pass gunicorn's default 30 s timeout: warm every
        # worker before the clock starts (hence --timeout 120 above, for start-up only).
        _wait_until_up(f"{host}/healthz", time.time() + 180)
        warm = [
            threading.Thread(target=_wait_until_up, args=(f"{host}/healthz", time.time() + 180))
            for _ in range(args.workers * 3)
        ]
        for t in warm:
            t.start()
        for t in warm:
            t.join()
        users = sum(counts.values())
        samples: list[float] = [os.getloadavg()[0]]
        stop = threading.Event()
        sampler = threading.Thread(target=_load_sampler, args=(samples, stop), daemon=True)
        sampler.start()
        workers = _worker_pids(server.pid)
        cpu_before = _cpu_seconds(workers)
        generator_before = _children_cpu()
        nice = args.generator_nice
        started = time.time()
        subprocess.run(
            [str(BIN / "locust"), "-f", str(ROOT / "bench" / "locustfile.py"), "--headless",
             "--host", host, "-u", str(users), "-r", str(users), "-t", f"{args.duration}s",
             "--stop-timeout", "10", "--only-summary", "--csv", str(folder / "locust"),
             "--loglevel", "WARNING"],
            cwd=ROOT, check=False, timeout=args.duration + 180, stdout=subprocess.DEVNULL,
            preexec_fn=(lambda: os.nice(nice)) if nice else None,
            env={**env, "VERITY_LOAD_CONFIG": str(config_path),
                 "VERITY_LOAD_ACKS": str(acks_path)},
        )  # fmt: skip
        elapsed = time.time() - started
        generator_cpu = _children_cpu() - generator_before
        cpu_after = _cpu_seconds(_worker_pids(server.pid))
        # A worker that gunicorn replaced during the run is missing after it: its CPU
        # until then is lost, so say so rather than print a figure that looks complete.
        replaced = sorted(set(workers) - set(cpu_after))
        workers_cpu = sum(cpu_after[p] - cpu_before.get(p, 0.0) for p in cpu_after)
        stop.set()
        samples.append(os.getloadavg()[0])
        server.terminate()
        server.wait(timeout=30)
        server = None
        rows = _stats(str(folder / "locust"))
        failures, judge_p95 = _print_stats(rows, elapsed)
        requests = sum(int(r["Request Count"]) for r in rows if r["Name"] == "Aggregated")
        _print_cpu(workers_cpu, requests, elapsed, generator_cpu, _per_class_cpu(folder / "cpu"))
        if replaced:
            print(f"  (workers {replaced} were replaced during the run: their CPU is missing)")
        acks = json.loads(acks_path.read_text())
        print(f"\nduration {elapsed:.0f} s; {len(acks['judged'])} judgments acknowledged, "
              f"{sum(1 for _, v in acks['edits'] if v)} edits acknowledged, "
              f"{sum(1 for _, v in acks['edits'] if v is None)} stale If-Match (412)")  # fmt: skip
        print(f"load average (1 min) during the run: min {min(samples):.1f}, "
              f"max {max(samples):.1f}, on {os.cpu_count()} cores")  # fmt: skip
        for what in acks["unexpected"][:10]:
            print("unexpected:", what)
        problems = _check_database(acks, before)
        print("\ndatabase checks:", "all passed" if not problems else "FAILED")
        for p in problems[:25]:
            print("  ", p)
        print(f"judge POST p95: {judge_p95:.0f} ms (target < 250 ms); failures: {failures}")
        return 1 if problems or failures else 0
    finally:
        if server is not None:
            server.terminate()
        from django.db import connections

        connections.close_all()
        if args.keep:
            print(f"kept database {db} and {folder}")
        else:
            _admin_sql(args.server, f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


if __name__ == "__main__":
    sys.exit(main())
