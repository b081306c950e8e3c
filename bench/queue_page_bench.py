"""Time the review queue's pages on PostgreSQL with 100,000 judgments and 10,000 open
review tasks (a benchmark, not a test).

Creates a throwaway database ``verity_qbench_<pid>`` on the PostgreSQL server of
``--server`` (default ``postgres://postgres@127.0.0.1:5432``, trust auth), migrates it,
fills it, and drops it at the end (``--keep`` keeps it). The configured database and
``var/`` are never touched: ``DATABASE_URL`` and ``VERITY_VAR_DIR`` are set for this
process only.

Data (set-up, not timed): one collection, 2,000 queries, 60,000 items, 100,000 judgments
with their history rows, and review tasks queued through ``queue_unjudged`` (one source
label per run, so each task has ``TaskSource`` rows): 10,000 open ones plus 20,000 done;
then ``VACUUM ANALYZE``, as autovacuum would do after such a load.
Then it times, with Django's test ``Client`` (the whole request: middleware, session,
auth, view, template), ``--requests`` requests of each kind:

* ``GET /c/<slug>/review/``, first visit: every request by a different reviewer, so each
  one claims a fresh task (the ``SKIP LOCKED`` claim over the open tasks);
* the same page reloaded by one reviewer (the held task is handed back);
* ``POST /c/<slug>/review/judge/`` (JSON): record the grade, claim the next task and
  render its panel, as one key press does;

and prints median, p95 and max wall milliseconds, the median time spent in SQL (round
trips included) and the number of SQL queries of each kind; then
creates the proposed partial index ``reviewtask_open_queue`` and measures again (skip
with ``--no-index-trial``).
``--explain`` also prints ``EXPLAIN ANALYZE`` of the slowest queries of one first visit.

    .venv/bin/python bench/queue_page_bench.py
    .venv/bin/python bench/queue_page_bench.py --requests 200 --explain

DEBUG stays on (as in development) because production static storage needs
``collectstatic`` first; it only adds the query log, which costs microseconds.
See bench/README.md for figures.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SLUG = "qbench"
# The index proposed for ReviewTask (see bench/README.md): it hands claim_next_task its
# rows already in queue order, so the claim stops at the first unlocked open task instead
# of sorting every open one.
PROPOSED_INDEX = (
    "CREATE INDEX IF NOT EXISTS reviewtask_open_queue ON judgments_reviewtask "
    "(collection_id, priority DESC, id) WHERE status IN ('pending', 'claimed')"
)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    p.add_argument("--queries", type=int, default=2_000)
    p.add_argument("--items", type=int, default=60_000)
    p.add_argument("--judgments", type=int, default=100_000)
    p.add_argument("--open-tasks", type=int, default=10_000)
    p.add_argument("--done-tasks", type=int, default=20_000)
    p.add_argument("--requests", type=int, default=50)
    p.add_argument("--explain", action="store_true")
    p.add_argument(
        "--no-index-trial", action="store_true", help="skip the run with the proposed index"
    )
    p.add_argument("--keep", action="store_true", help="keep the throwaway database")
    return p.parse_args()


def admin_connection(server: str) -> Any:
    import psycopg

    return psycopg.connect(f"{server}/postgres", autocommit=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def fill(args: argparse.Namespace) -> Any:
    """Build the collection through the services where they exist, in bulk elsewhere."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from judgments.models import ChangeSource, Item, Judgment, JudgmentChange, Query
    from judgments.services import create_collection, queue_unjudged, set_membership

    rng = random.Random(20240101)
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
    vocabulary = "vpn session idle timeout gateway laptop password reset policy rollback deploy"
    words = [*vocabulary.split(), "incident", "pager", "office", "badge", "wifi", "token"]

    def sentence(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    judge = get_user_model().objects.create_user("judge")
    with transaction.atomic():
        Query.objects.bulk_create(
            Query(collection=collection, external_id=f"q{n:05d}", text=sentence(8) + "?")
            for n in range(args.queries)
        )
        Item.objects.bulk_create(
            (
                Item(
                    collection=collection,
                    external_id=f"d{n:06d}",
                    title=sentence(5),
                    text=sentence(120),
                )
                for n in range(args.items)
            ),
            batch_size=5_000,
        )
    queries = list(Query.objects.filter(collection=collection).order_by("pk"))
    items = list(
        Item.objects.filter(collection=collection).order_by("pk").values_list("pk", flat=True)
    )
    per_query = args.judgments // len(queries)
    pairs_judged: set[tuple[int, int]] = set()
    judgments, history = [], []
    for n, query in enumerate(queries):
        for item in items[n * per_query % len(items) :][:per_query]:
            grade = rng.choice((0, 0, 1, 2, 3))
            pairs_judged.add((query.pk, item))
            judgments.append(Judgment(query=query, item_id=item, grade=grade, reviewer=judge))
            history.append(
                JudgmentChange(
                    query=query,
                    item_id=item,
                    new_grade=grade,
                    version=1,
                    changed_by=judge,
                    source=ChangeSource.IMPORT,
                )
            )
    with transaction.atomic():
        Judgment.objects.bulk_create(judgments, batch_size=10_000)
        JudgmentChange.objects.bulk_create(history, batch_size=10_000)
    # Open tasks: unjudged pairs surfaced by two runs; done tasks: judged pairs that a run
    # surfaced too (queue_unjudged skips judged pairs, so those are marked done in bulk).
    judged_list = sorted(pairs_judged)
    unjudged: list[tuple[int, int, int]] = []
    per_query_open = args.open_tasks // len(queries)
    for n, query in enumerate(queries):
        start = (n * per_query + per_query) % len(items)
        for rank, item in enumerate(items[start : start + per_query_open], 1):
            unjudged.append((query.pk, item, rank))
    for start in range(0, len(unjudged), 2_000):
        chunk = unjudged[start : start + 2_000]
        queue_unjudged(collection=collection, pairs=chunk, source="run bm25")
        queue_unjudged(
            collection=collection,
            pairs=[(q, i, r + 2) for q, i, r in chunk[::2]],
            source="run splade",
        )
    from judgments.models import ReviewTask, TaskStatus

    done = rng.sample(judged_list, min(args.done_tasks, len(judged_list)))
    ReviewTask.objects.bulk_create(
        (
            ReviewTask(
                collection=collection,
                query_id=q,
                item_id=i,
                status=TaskStatus.DONE,
                source="run bm25",
                best_rank=5,
            )
            for q, i in done
        ),
        batch_size=10_000,
    )
    reviewers = []
    # Every first visit needs a reviewer of its own: per measurement, the timed ones plus
    # one to count queries; plus one to warm up.
    for n in range(2 * (args.requests + 1) + 1):
        user = get_user_model().objects.create_user(f"reviewer{n:03d}")
        set_membership(collection=collection, user=user, role="reviewer")
        reviewers.append(user)
    with connection.cursor() as cursor:
        # What autovacuum does soon after a bulk load: statistics, and the visibility map
        # that lets counts be answered from an index alone.
        cursor.execute("VACUUM ANALYZE")
    counts = {
        "queries": len(queries),
        "items": len(items),
        "judgments": Judgment.objects.count(),
        "open tasks": ReviewTask.objects.exclude(status=TaskStatus.DONE).count(),
        "done tasks": ReviewTask.objects.filter(status=TaskStatus.DONE).count(),
    }
    print(
        "set-up: "
        + ", ".join(f"{v:,} {k}" for k, v in counts.items())
        + f" in {time.perf_counter() - started:.1f} s"
    )
    return collection, reviewers


SQL_MS: list[float] = []  # SQL time of each timed request, in the order timed


def timed(requests: list[Callable[[], Any]]) -> list[float]:
    """Wall milliseconds of each request; its time inside the database driver goes to
    ``SQL_MS`` (so that CPU contention on a busy machine can be told from query time)."""
    from django.db import connection

    out = []
    for send in requests:
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
        SQL_MS.append(spent[0] * 1000)
        assert response.status_code == 200, (response.status_code, response.content[:500])
    return out


def count_queries(send: Callable[[], Any]) -> tuple[int, list[dict[str, str]]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        send()
    return len(ctx.captured_queries), list(ctx.captured_queries)


def main() -> int:
    args = parse_args()
    name = f"verity_qbench_{os.getpid()}"
    admin = admin_connection(args.server)
    admin.execute(f'CREATE DATABASE "{name}"')
    print(f"database {name} created on {args.server}")
    var_dir = tempfile.mkdtemp(prefix="verity-qbench-")
    os.environ["DATABASE_URL"] = f"{args.server}/{name}"
    os.environ["VERITY_VAR_DIR"] = var_dir
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("AXES_ENABLED", "0")  # force_login only; no login attempts
    sys.path.insert(0, str(ROOT))
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection, connections
        from django.test import Client
        from django.test.utils import setup_test_environment

        setup_test_environment()  # allows the test client's host; keeps e-mail in memory
        call_command("migrate", verbosity=0)
        collection, reviewers = fill(args)
        review = f"/c/{collection.slug}/review/"
        judge = f"/c/{collection.slug}/review/judge/"

        fresh = iter(reviewers)

        def client_for(user: Any) -> Any:
            client = Client()
            client.force_login(user)
            return client

        warm = client_for(next(fresh))  # URL conf, templates, connections
        for _ in range(3):
            warm.get(review)

        def measure(title: str) -> list[dict[str, str]]:
            first_clients = [client_for(next(fresh)) for _ in range(args.requests)]
            SQL_MS.clear()
            first = timed([(lambda c=c: c.get(review)) for c in first_clients])
            sql_first = list(SQL_MS)
            counted = client_for(next(fresh))
            n_first, first_queries = count_queries(lambda: counted.get(review))
            one = first_clients[0]
            SQL_MS.clear()
            reload = timed([(lambda: one.get(review))] * args.requests)
            sql_reload = list(SQL_MS)
            n_reload, _ = count_queries(lambda: one.get(review))

            def judge_next() -> Any:
                task = one.get(review, HTTP_ACCEPT="application/json").json()["task"]
                return lambda: one.post(
                    judge, {"task": task["id"], "grade": 1}, HTTP_ACCEPT="application/json"
                )

            posts = []
            SQL_MS.clear()
            for _ in range(args.requests):
                send = judge_next()
                SQL_MS.append(-1.0)  # marks the untimed GET that found the task
                posts.extend(timed([send]))
            sql_posts = [ms for ms in SQL_MS if ms >= 0]
            n_post, _ = count_queries(judge_next())
            print(f"\n{title}")
            print(
                f"{'request':<44}{'median ms':>10}{'p95 ms':>9}{'max ms':>9}"
                f"{'SQL ms':>8}{'queries':>9}"
            )
            for label, values, sql, n in (
                (f"GET {review} (first visit: claims)", first, sql_first, n_first),
                (f"GET {review} (reload: held task)", reload, sql_reload, n_reload),
                (f"POST {judge} (judge + next)", posts, sql_posts, n_post),
            ):
                print(
                    f"{label:<44}{statistics.median(values):>10.1f}"
                    f"{percentile(values, 0.95):>9.1f}{max(values):>9.1f}"
                    f"{statistics.median(sql):>8.1f}{n:>9}"
                )
            return first_queries

        first_queries = measure("as migrated:")
        if not args.no_index_trial:
            with connection.cursor() as cursor:
                cursor.execute(PROPOSED_INDEX)
                cursor.execute("VACUUM ANALYZE judgments_reviewtask")
            first_queries = measure(f"with the proposed index ({PROPOSED_INDEX}):")
        print(f"\n({args.requests} requests each; PostgreSQL {connection.pg_version // 10000})")

        if args.explain:
            print("\nEXPLAIN ANALYZE of the first visit's queries taking over 0.5 ms:")
            with connection.cursor() as cursor:
                for q in first_queries:
                    sql = q["sql"]
                    if float(q["time"]) * 1000 < 0.5 or not sql.lstrip().upper().startswith(
                        "SELECT"
                    ):
                        continue
                    cursor.execute("EXPLAIN ANALYZE " + sql)
                    print(f"\n-- {float(q['time']) * 1000:.2f} ms: {sql[:160]}…")
                    for (line,) in cursor.fetchall():
                        print("   ", line)
        connections.close_all()
    finally:
        if args.keep:
            print(f"kept database {name}")
        else:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            print(f"database {name} dropped")
        admin.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
