"""Time the review queue's page on PostgreSQL at 1,000,000 judgments and 100,000 open
review tasks (a benchmark, not a test).

Creates the database ``verity_i15q_bench`` (``--db``) on the PostgreSQL server of
``--server`` (default ``postgres://postgres@127.0.0.1:5432``, trust auth), migrates it,
fills it set-based, and drops it at the end (``--keep`` keeps it; ``--reuse`` times a
kept one again without filling it, e.g. with another checkout's code: ``--root``). The
configured database and ``var/`` are never touched: ``DATABASE_URL`` and
``VERITY_VAR_DIR`` are set for this process only.

Data (set-up, not timed; ``INSERT … SELECT … FROM generate_series``, a few statements
per table, no ORM row by row): one collection of 10,000 queries and 500,000 items;
100 judgments per query (1,000,000) with one history row each; 10 open review tasks per
query (100,000) and 10 done ones (100,000, on judged pairs), each with a ``TaskSource``
row (every other open one with a second: 250,000 in all); then ``VACUUM
ANALYZE``, as autovacuum would do after such a load. ``--queries`` and the per-query
options scale it (``--queries 1000``: a 100k / 10k run in a minute).

Then it times, with Django's test ``Client`` (the whole request: middleware, session,
auth, view, template; no network), ``--requests`` requests of each kind:

* ``GET /c/<slug>/review/`` by a reviewer who holds no task: the page with the button
  that claims the next one (a GET never claims);
* ``POST /c/<slug>/review/claim/`` (JSON), each by another reviewer: the ``SKIP LOCKED``
  claim of the next task, and its panel;
* ``GET /c/<slug>/review/`` by a reviewer holding a task: the task's page;
* ``POST /c/<slug>/review/judge/`` (JSON): record the grade, claim the next task and
  render its panel, as one key press does;

and prints median, p95 and max wall milliseconds, the median time spent in SQL (round
trips included) and the number of SQL queries of each. ``--explain`` adds ``EXPLAIN
ANALYZE`` of every SELECT of each kind of request (the plan's scans and its time).

    .venv/bin/python bench/queue_page_bench.py                      # ~5 min, mostly set-up
    .venv/bin/python bench/queue_page_bench.py --explain --keep
    .venv/bin/python bench/queue_page_bench.py --reuse --root /tmp/before   # other code
    git archive main | tar -x -C /tmp/before
    .venv/bin/python bench/queue_page_bench.py --before /tmp/before   # both, same data

DEBUG stays on (as in development) because production static storage needs
``collectstatic`` first; it only adds the query log, which costs microseconds.
See bench/README.md for figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SLUG = "qbench"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    p.add_argument("--db", default="verity_i15q_bench", help="the throwaway database's name")
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--items", type=int, default=500_000)
    p.add_argument("--judged-per-query", type=int, default=100)
    p.add_argument("--open-per-query", type=int, default=10)
    p.add_argument("--done-per-query", type=int, default=10)
    p.add_argument("--requests", type=int, default=50)
    p.add_argument("--explain", action="store_true")
    p.add_argument(
        "--pool-strategy",
        choices=("depth", "mtf", "bandit"),
        default="depth",
        help="mtf or bandit: the collection pools adaptively; each query's two runs get "
        "their PoolArm rows and heads at set-up, and every judgment updates them",
    )
    p.add_argument("--root", type=Path, default=ROOT, help="checkout whose code is timed")
    p.add_argument("--keep", action="store_true", help="keep the database at the end")
    p.add_argument("--reuse", action="store_true", help="time the kept database again (no set-up)")
    p.add_argument(
        "--before",
        type=Path,
        help="another checkout (e.g. `git archive main`) timed on the same data, for a "
        "before/after pair in one run: rounds of both, each in a process of its own",
    )
    p.add_argument(
        "--rounds", type=int, default=3, help="with --before: rounds of before then after"
    )
    return p.parse_args()


def admin_connection(server: str) -> Any:
    import psycopg

    return psycopg.connect(f"{server}/postgres", autocommit=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def fill(args: argparse.Namespace) -> None:
    """The collection, in a few set-based statements per table.

    Slot k of query q holds item (q * 7919 + k * 104729) mod ITEMS (104729 is a prime that
    divides no item count used here, so one query's slots are distinct items): slots
    [0, judged) are judged, the next ``open`` ones are pending review tasks, and the first
    ``done`` judged slots also have a done task (a run surfaced them before they were
    judged). Grades follow (q * 31 + k * 17) mod 10: 0 to 5 → 0, 6 and 7 → 1, 8 → 2, 9 → 3."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from judgments.services import create_collection

    assert args.items % 104729 != 0
    assert args.judged_per_query + args.open_per_query < args.items
    started = time.perf_counter()
    collection = create_collection(
        slug=SLUG,
        name="Queue bench",
        scale=[
            {"grade": 0, "name": "not relevant"},
            {"grade": 1, "name": "related"},
            {"grade": 2, "name": "highly relevant"},
            {"grade": 3, "name": "perfectly relevant"},
        ],
        relevant_grade=2,
        guidelines="Judge the text as written. " * 40,
    )
    judge = get_user_model().objects.create_user("judge")
    p = {
        "c": collection.pk,
        "nq": args.queries,
        "ni": args.items,
        "judged": args.judged_per_query,
        "open": args.open_per_query,
        "done": args.done_per_query,
        "judge": judge.pk,
    }
    words = "vpn session idle timeout gateway laptop password reset policy rollback deploy "
    item_of = "(q * 7919 + k * 104729) %% %(ni)s"  # item index of slot k of query q

    def run(label: str, sql: str) -> None:
        began = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute(sql, p)
            n = cursor.rowcount
        print(f"  {label}: {n:,} rows in {time.perf_counter() - began:.1f} s", flush=True)

    with transaction.atomic():
        run(
            "queries",
            "INSERT INTO judgments_query (collection_id, external_id, text, tags, status, "
            "created_at) SELECT %(c)s, 'q' || lpad(g::text, 6, '0'), "
            f"'{words}' || g || '?', '[]', 'unreviewed', now() "
            "FROM generate_series(0, %(nq)s - 1) g ORDER BY g",
        )
        run(
            "items",
            "INSERT INTO judgments_item (collection_id, external_id, title, text, url, "
            "metadata, placeholder, created_at) SELECT %(c)s, 'd' || lpad(g::text, 7, '0'), "
            f"'item ' || g || ' {words}', repeat('{words}', 12) || g, '', '{{}}', false, "
            "now() FROM generate_series(0, %(ni)s - 1) g ORDER BY g",
        )
        # pk of query q and item i: the first pk plus q (one INSERT, in order, fresh table)
        with connection.cursor() as cursor:
            for table, key, n in (("query", "q0", args.queries), ("item", "i0", args.items)):
                cursor.execute(
                    f"SELECT min(id), max(id) FROM judgments_{table} WHERE collection_id = %s",
                    [collection.pk],
                )
                low, high = cursor.fetchone()
                assert high - low + 1 == n, (table, low, high, n)
                p[key] = low
        slots = "FROM generate_series(0, %(nq)s - 1) q, generate_series({lo}, {hi}) k ORDER BY q, k"
        run(
            "judgments",
            "INSERT INTO judgments_judgment (query_id, item_id, grade, note, version, "
            "reviewer_id, reviewer_name, created_at, updated_at) "
            f"SELECT %(q0)s + q, %(i0)s + {item_of}, "
            "CASE WHEN (q * 31 + k * 17) %% 10 < 6 THEN 0 WHEN (q * 31 + k * 17) %% 10 < 8 "
            "THEN 1 WHEN (q * 31 + k * 17) %% 10 = 8 THEN 2 ELSE 3 END, '', 1, %(judge)s, '', "
            "now(), now() " + slots.format(lo=0, hi="%(judged)s - 1"),
        )
        run(
            "judgment history",
            "INSERT INTO judgments_judgmentchange (query_id, item_id, old_grade, new_grade, "
            "old_note, new_note, version, changed_at, source, changed_by_id) "
            "SELECT query_id, item_id, NULL, grade, '', '', 1, now(), 'import', %(judge)s "
            "FROM judgments_judgment ORDER BY id",
        )
        # Open tasks: rank r = k - judged + 1 in run bm25; every other one also in run
        # splade, which raises its priority (as queue_unjudged ranks multi-source pairs).
        run(
            "open review tasks",
            "INSERT INTO judgments_reviewtask (collection_id, query_id, item_id, slot, status, "
            "source, best_rank, priority, created_at, updated_at) "
            f"SELECT %(c)s, %(q0)s + q, %(i0)s + {item_of}, 1, 'pending', 'run bm25', "
            "k - %(judged)s + 1, 1000 - (k - %(judged)s) * 10 + (k %% 2) * 5, now(), now() "
            + slots.format(lo="%(judged)s", hi="%(judged)s + %(open)s - 1"),
        )
        run(
            "done review tasks",
            "INSERT INTO judgments_reviewtask (collection_id, query_id, item_id, slot, status, "
            "source, best_rank, priority, created_at, updated_at) "
            f"SELECT %(c)s, %(q0)s + q, %(i0)s + {item_of}, 1, 'done', 'run bm25', k + 1, "
            "1000 - k * 10, now(), now() " + slots.format(lo=0, hi="%(done)s - 1"),
        )
        run(
            "task sources",
            "INSERT INTO judgments_tasksource (task_id, label, rank, created_at) "
            "SELECT id, 'run bm25', best_rank, now() FROM judgments_reviewtask "
            "WHERE collection_id = %(c)s "
            "UNION ALL SELECT id, 'run splade', best_rank + 1, now() "
            "FROM judgments_reviewtask WHERE collection_id = %(c)s AND status = 'pending' "
            "AND priority %% 2 = 1",
        )
        if args.pool_strategy != "depth":
            adaptive(args.pool_strategy, run, collection.pk)
    began = time.perf_counter()
    with connection.cursor() as cursor:
        # What autovacuum does soon after a bulk load: statistics, and the visibility map
        # that lets counts be answered from an index alone.
        cursor.execute("VACUUM ANALYZE")
    print(f"  VACUUM ANALYZE in {time.perf_counter() - began:.1f} s")
    print(f"set-up in {time.perf_counter() - started:.1f} s")


def adaptive(strategy: str, run: Callable[[str, str], None], collection_id: int) -> None:
    """What ``import_run`` with an adaptive strategy leaves: one ``PoolArm`` per query and
    run (its open tasks in rank order, its head the first), each head at its run's score
    before any judgment (``pool_strategies``); set-based."""
    from judgments.pool_strategies import HEAD_BASE, Arm, arm_score

    score = arm_score(strategy, Arm())
    run(
        "adaptive pooling: the collection's strategy",
        f"UPDATE judgments_collection SET pool_strategy = '{strategy}' WHERE id = {collection_id}",
    )
    run(
        "adaptive pooling: one arm per query and run",
        "INSERT INTO judgments_poolarm (collection_id, query_id, label, strategy, tasks, "
        "floor_count, position, head_id, judged, relevant, front, score) "
        f"SELECT {collection_id}, t.query_id, s.label, '{strategy}', "
        "jsonb_agg(t.id ORDER BY s.rank, t.id), 0, 0, (array_agg(t.id ORDER BY s.rank, t.id))[1], "
        f"0, 0, 0, {score} FROM judgments_reviewtask t JOIN judgments_tasksource s "
        f"ON s.task_id = t.id WHERE t.collection_id = {collection_id} AND t.status = 'pending' "
        "GROUP BY t.query_id, s.label",
    )
    run(
        "adaptive pooling: the heads' priorities",
        f"UPDATE judgments_reviewtask SET priority = {HEAD_BASE + score} "
        "WHERE id IN (SELECT head_id FROM judgments_poolarm)",
    )


def describe() -> str:
    from judgments.models import Collection, Item, Judgment, Query, ReviewTask

    collection = Collection.objects.get(slug=SLUG)
    tasks = ReviewTask.objects.filter(collection=collection)
    counts = {
        "queries": Query.objects.filter(collection=collection).count(),
        "items": Item.objects.filter(collection=collection).count(),
        "judgments": Judgment.objects.filter(query__collection=collection).count(),
        "open tasks": tasks.filter(status__in=("pending", "claimed")).count(),
        "done tasks": tasks.filter(status="done").count(),
    }
    return ", ".join(f"{v:,} {k}" for k, v in counts.items())


SQL_MS: list[float] = []  # SQL time of each timed request, in the order timed
# CPU milliseconds of each timed request: this process's (the app: middleware, view,
# template, driver) and the PostgreSQL backend's that served it (from /proc, in clock
# ticks, so only their sum over many requests is meaningful). CPU time does not grow
# when other work shares the cores, so it tells what a request costs on a loaded machine,
# where wall times measure the queue for a core as much as the request.
CPU_MS: list[tuple[float, float]] = []
TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def backend_cpu_ms() -> float | None:
    """CPU time so far of the PostgreSQL backend of Django's connection (same machine)."""
    from django.db import connection

    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:  # a server on another machine: only the app's CPU is known
        return None
    return (int(fields[11]) + int(fields[12])) * TICK_MS  # utime + stime


def timed(requests: list[Callable[[], Any]]) -> list[float]:
    """Wall milliseconds of each request; its time inside the database driver goes to
    ``SQL_MS`` (so that CPU contention on a busy machine can be told from query time) and
    its CPU time to ``CPU_MS``."""
    from django.db import connection

    out = []
    for send in requests:
        app_began, db_began = time.process_time(), backend_cpu_ms()
        spent = [0.0]

        def clock(
            execute: Any, sql: str, params: Any, many: bool, context: Any, spent: Any = spent
        ) -> Any:
            began = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                spent[0] += time.perf_counter() - began

        with connection.execute_wrapper(clock):
            started = time.perf_counter()
            response = send()
            out.append((time.perf_counter() - started) * 1000)
        db_ended = backend_cpu_ms()
        CPU_MS.append(
            (
                (time.process_time() - app_began) * 1000,
                db_ended - db_began if None not in (db_began, db_ended) else 0.0,
            )
        )
        SQL_MS.append(spent[0] * 1000)
        assert response.status_code == 200, (response.status_code, response.content[:500])
    return out


def captured(send: Callable[[], Any]) -> list[dict[str, str]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        send()
    return list(ctx.captured_queries)


def measure(
    args: argparse.Namespace, run_id: str
) -> tuple[dict[str, list[float]], dict[str, list[dict[str, str]]]]:
    """Time the four requests; return the wall ms of each kind and the SQL of one."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from judgments.models import Collection
    from judgments.services import set_membership

    collection = Collection.objects.get(slug=SLUG)
    review = f"/c/{SLUG}/review/"
    claim = f"/c/{SLUG}/review/claim/"
    judge = f"/c/{SLUG}/review/judge/"
    json = {"HTTP_ACCEPT": "application/json"}

    def client() -> Any:
        n = client.made = getattr(client, "made", 0) + 1  # type: ignore[attr-defined]
        user = get_user_model().objects.create_user(f"reviewer-{run_id}-{n:03d}")
        set_membership(collection=collection, user=user, role="reviewer")
        c = Client()
        c.force_login(user)
        return c

    warm = client()  # URL conf, templates, connections
    for _ in range(3):
        warm.get(review)
    rows, sql = [], {}

    def row(label: str, values: list[float], queries: list[dict[str, str]]) -> None:
        sql_ms = [ms for ms in SQL_MS if ms >= 0]
        app = statistics.fmean(a for a, _ in CPU_MS)
        db = statistics.fmean(d for _, d in CPU_MS)
        rows.append((label, values, sql_ms, len(queries), (app, db)))
        sql[label] = queries
        CPU_MS.clear()

    idle = client()
    SQL_MS.clear()
    CPU_MS.clear()
    values = timed([lambda: idle.get(review)] * args.requests)
    row(f"GET {review} (no task held)", values, captured(lambda: idle.get(review)))

    claimers = [client() for _ in range(args.requests + 1)]
    SQL_MS.clear()
    values = timed([(lambda c=c: c.post(claim, **json)) for c in claimers[:-1]])
    last = claimers[-1]
    row(f"POST {claim} (claims the next)", values, captured(lambda: last.post(claim, **json)))

    holder = claimers[0]
    assert holder.get(review, **json).json()["task"] is not None
    SQL_MS.clear()
    values = timed([lambda: holder.get(review)] * args.requests)
    row(f"GET {review} (task held)", values, captured(lambda: holder.get(review)))

    def judge_next() -> Any:
        # After a query's last open item the queue stops on it (to settle its status):
        # then the next task is claimed here, untimed.
        task = holder.get(review, **json).json()["task"]
        task = task or holder.post(claim, **json).json()["task"]
        return lambda: holder.post(judge, {"task": task["id"], "grade": 1}, **json)

    values = []
    SQL_MS.clear()
    for _ in range(args.requests):
        send = judge_next()
        SQL_MS.append(-1.0)  # marks the untimed GET that found the task
        values.extend(timed([send]))
    row(f"POST {judge} (judge + next)", values, captured(judge_next()))

    print(
        f"{'request':<46}{'median ms':>10}{'p95 ms':>9}{'max ms':>9}{'SQL ms':>8}{'queries':>9}"
        f"{'CPU ms: app + PostgreSQL':>26}"
    )
    for label, values, sql_ms, n, (app, db) in rows:
        print(
            f"{label:<46}{statistics.median(values):>10.1f}{percentile(values, 0.95):>9.1f}"
            f"{max(values):>9.1f}{statistics.median(sql_ms):>8.1f}{n:>9}"
            f"{f'{app + db:.1f} = {app:.1f} + {db:.1f}':>26}"
        )
    print("(CPU ms: the mean per request; the wall times of an idle machine come close to it)")
    return {label: values for label, values, _, _, _ in rows}, sql


def count_costs(repeat: int = 30) -> None:
    """The open-task count alone, exact and capped at 1,000 (the same SQL as the page's
    before and after the cap), timed directly: median ms of ``repeat`` runs each."""
    from django.db import connection

    from judgments.models import Collection

    collection_id = Collection.objects.get(slug=SLUG).pk
    where = "collection_id = %s AND status IN ('pending', 'claimed')"
    statements = {
        "exact": f"SELECT COUNT(*) FROM judgments_reviewtask WHERE {where}",
        "capped": f"SELECT COUNT(*) FROM (SELECT id FROM judgments_reviewtask WHERE {where} "
        "LIMIT 1001) subquery",
    }
    shown = []
    with connection.cursor() as cursor:
        for label, sql in statements.items():
            times, n = [], 0
            for _ in range(repeat):
                began = time.perf_counter()
                cursor.execute(sql, [collection_id])
                (n,) = cursor.fetchone()
                times.append((time.perf_counter() - began) * 1000)
            shown.append(f"{label} {statistics.median(times):.2f} ms (= {n:,})")
    print("open-task count alone, median of " + str(repeat) + ": " + "; ".join(shown))


def explain(sql: dict[str, list[dict[str, str]]]) -> None:
    """EXPLAIN ANALYZE of each SELECT of one request of each kind: its scans and its time
    (the POSTs' SELECT … FOR UPDATE too: each runs alone, so its locks go at once)."""
    from django.db import connection

    for label, queries in sql.items():
        print(f"\nEXPLAIN ANALYZE of {label}:")
        with connection.cursor() as cursor:
            for q in queries:
                text = q["sql"]
                if not text.lstrip().upper().startswith("SELECT"):
                    continue
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + text)
                plan = [line for (line,) in cursor.fetchall()]
                print(f"\n-- {text[:150]}…")
                for line in plan:
                    if any(w in line for w in ("Scan", "Limit", "Aggregate", "Execution", "Sort")):
                        print("   ", line.strip()[:150])


def main() -> int:
    args = parse_args()
    admin = admin_connection(args.server)
    if not args.reuse:
        admin.execute(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{args.db}"')
        print(f"database {args.db} created on {args.server}")
    os.environ["DATABASE_URL"] = f"{args.server}/{args.db}"
    os.environ["VERITY_VAR_DIR"] = tempfile.mkdtemp(prefix="verity-qbench-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("AXES_ENABLED", "0")  # force_login only; no login attempts
    sys.path.insert(0, str(args.root.resolve()))
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection, connections
        from django.test.utils import setup_test_environment

        setup_test_environment()  # allows the test client's host; keeps e-mail in memory
        if not args.reuse:
            call_command("migrate", verbosity=0)
            fill(args)
        if args.before is not None:
            # Both checkouts in processes of their own, alternately, on the same data: the
            # same warm-up and the same load for each.
            connections.close_all()
            pooled: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}
            for n in range(args.rounds):
                for name, root in (("before", args.before), ("after", args.root)):
                    print(f"\nround {n + 1}, {name}: {root.resolve()}", flush=True)
                    out = subprocess.run(
                        [
                            sys.executable,
                            __file__,
                            "--reuse",
                            f"--root={root.resolve()}",
                            f"--server={args.server}",
                            f"--db={args.db}",
                            f"--requests={args.requests}",
                        ],
                        check=True,
                        capture_output=True,
                        text=True,
                    ).stdout
                    for line in out.splitlines():
                        if line.startswith("RESULT "):
                            for label, values in json.loads(line[7:]).items():
                                pooled[name].setdefault(label, []).extend(values)
                        elif not line.startswith("kept database"):
                            print(line)
            print(f"\nall rounds ({args.rounds} x {args.requests} requests of each kind):")
            print(f"{'request':<46}{'before: median / p95 ms':>26}{'after: median / p95 ms':>26}")
            for label, after in pooled["after"].items():
                before = pooled["before"][label]
                print(
                    f"{label:<46}"
                    + "".join(
                        f"{statistics.median(v):>17.1f} / {percentile(v, 0.95):>5.1f}"
                        for v in (before, after)
                    )
                )
        else:
            print(f"data: {describe()}")
            print(f"code: {args.root.resolve()}   load average: {os.getloadavg()[0]:.2f}")
            walls, sql = measure(args, run_id=str(os.getpid()))
            count_costs()
            print(
                f"({args.requests} requests each; PostgreSQL {connection.pg_version // 10000}; "
                f"load average after: {os.getloadavg()[0]:.2f})"
            )
            if args.reuse:
                print("RESULT " + json.dumps(walls))
        if args.explain and args.before is None:
            explain(sql)
        connections.close_all()
    finally:
        if args.keep or args.reuse:
            print(f"kept database {args.db}")
        else:
            admin.execute(f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)')
            print(f"database {args.db} dropped")
        admin.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
