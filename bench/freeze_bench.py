"""Time ``freeze_snapshot`` on a collection of 1,000,000 judgments (a benchmark, not a test).

Works on a throwaway database of its own, never on the configured one:

* PostgreSQL (``DATABASE_URL=postgres://…``): the URL names only the server to use; the
  script creates ``verity_bench_<pid>`` there, migrates it, and drops it at the end.
* SQLite (no ``DATABASE_URL``, or a ``sqlite://`` one, whose path is ignored): a file in a
  fresh temporary directory, which is also ``VERITY_VAR_DIR``; removed at the end.
  ``var/verity.sqlite3`` is never opened.

Setup (not timed as part of any figure) writes the rows set-based: ``COPY`` on PostgreSQL,
``executemany`` in one transaction on SQLite, then ``VACUUM ANALYZE`` (PostgreSQL) or
``ANALYZE`` (SQLite). Then it times:

1. ``freeze_snapshot`` of the fresh collection (v1: every query rendered, hashed and
   written as a block with its rows), with the time of each of its phases;
2. the same call again with nothing changed (hashed from v1's stored blocks; returns v1,
   created False);
3. one judgment regraded through ``record_judgment``, then ``freeze_snapshot`` (v2: one
   query rendered again, the other blocks shared), with its phases;
4. the v1 JSONL export (the canonical form), checked against v1's content hash, and
   the v1 TREC export; then ``manage.py export_qrels --snapshot 1`` in both formats to
   /dev/null, alternately ``--export-rounds`` times (medians);

and the rows (and on PostgreSQL the bytes) of the snapshot tables after v1 and after v2:
v2 adds one block and its rows (and ends v1's block of that query). Then v3 after another
regrade with the collection's kept canonical form deleted (read back from the blocks in
the database), and v4 after a third (spliced from the form v3 kept). ``--profile`` adds a
cProfile of step 1.

    .venv/bin/python bench/freeze_bench.py                           # SQLite, 1M judgments
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/freeze_bench.py                       # PostgreSQL
    .venv/bin/python bench/freeze_bench.py --queries 1000            # 100k: a quick run

See bench/README.md for figures.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import os
import pstats
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
SLUG = "bench"
STAMP = "2024-01-01 00:00:00"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--per-query", type=int, default=100, help="judgments per query")
    p.add_argument("--items", type=int, default=500_000, help="items in the collection")
    p.add_argument("--open-tasks", type=int, default=10, help="pending review tasks per query")
    p.add_argument("--done-tasks", type=int, default=10, help="done review tasks per query")
    p.add_argument("--seed", type=int, default=20240101)
    p.add_argument("--profile", action="store_true", help="cProfile the first freeze")
    p.add_argument("--keep", action="store_true", help="keep the throwaway database")
    p.add_argument(
        "--export-rounds",
        type=int,
        default=3,
        help="rounds of 'export_qrels --snapshot 1' as TREC and as JSONL, alternately",
    )
    return p.parse_args()


# -- the throwaway database ---------------------------------------------------------------------


@contextmanager
def throwaway_database(keep: bool) -> Iterator[str]:
    """Point DATABASE_URL at a database made for this run; remove it afterwards."""
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        import psycopg

        parts = urlsplit(url)
        name = f"verity_bench_{os.getpid()}"
        server = urlunsplit(parts._replace(path="/postgres"))
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        os.environ["DATABASE_URL"] = urlunsplit(parts._replace(path=f"/{name}"))
        forms = Path(tempfile.mkdtemp(prefix="verity-bench-forms-"))
        os.environ["VERITY_FORM_DIR"] = str(forms)
        try:
            yield f"PostgreSQL database {name} on {parts.hostname}:{parts.port or 5432}"
        finally:
            from django.db import connections

            connections.close_all()
            shutil.rmtree(forms, ignore_errors=True)
            if keep:
                print(f"kept database {name}")
            else:
                with psycopg.connect(server, autocommit=True) as admin:
                    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        return
    if url and not url.startswith("sqlite:"):
        raise SystemExit(f"DATABASE_URL {url!r}: only postgres:// and sqlite:// are supported")
    folder = Path(tempfile.mkdtemp(prefix="verity-bench-"))
    path = folder / "bench.sqlite3"
    assert path.resolve() != (ROOT / "var" / "verity.sqlite3").resolve()
    os.environ["VERITY_VAR_DIR"] = str(folder)
    os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    try:
        yield f"SQLite file {path}"
    finally:
        from django.db import connections

        connections.close_all()
        if keep:
            print(f"kept {path}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


# -- data ---------------------------------------------------------------------------------------


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Data:
    """A deterministic collection: which item each (query, slot) holds, and the grades.

    Slot k of query q is item (q * 7919 + k * 104729) mod ITEMS; 104729 is prime, so the
    slots of one query are distinct items while k < ITEMS. Slots [0, per_query) are
    judged, the next ``open_tasks`` are pending review tasks; the first ``done_tasks``
    judged slots also have a done task, as when a run surfaced them before judging.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        import numpy as np

        self.args = args
        n_slots = args.per_query + args.open_tasks
        assert n_slots < args.items and args.items % 104729 != 0
        rng = np.random.default_rng(args.seed)
        q = np.arange(args.queries, dtype=np.int64)[:, None]
        k = np.arange(n_slots, dtype=np.int64)[None, :]
        self.slots = (q * 7919 + k * 104729) % args.items  # queries x slots item indexes
        self.grades = rng.choice(
            4, size=(args.queries, args.per_query), p=[0.6, 0.2, 0.12, 0.08]
        ).astype(np.int64)
        has_relevant = (self.grades >= 2).any(axis=1)
        roll = rng.random(args.queries)
        # Most queries with a relevant judgment are reviewed; some without are no_answer.
        self.status = np.where(
            has_relevant,
            np.where(roll < 0.9, "relevant", "unreviewed"),
            np.where(roll < 0.5, "no_answer", "unreviewed"),
        )

    def query_id(self, q: int) -> str:
        return f"q{q:06d}"

    def item_id(self, i: int) -> str:
        return f"doc-{i:07d}"

    def evidence(self) -> Iterator[tuple[int, str]]:
        """Every tenth relevant query: (its first relevant item) OR (its first judged one)."""
        import json

        from judgments.services import normalize_evidence

        for q in range(0, self.args.queries, 10):
            if self.status[q] != "relevant":
                continue
            first_relevant = next(
                int(self.slots[q, k]) for k in range(self.args.per_query) if self.grades[q, k] >= 2
            )
            groups = [[self.item_id(first_relevant)], [self.item_id(int(self.slots[q, 0]))]]
            yield q, json.dumps(normalize_evidence(groups))


def insert_postgresql(data: Data, collection_id: int, log: Callable[[str], None]) -> None:
    from django.db import connection

    args = data.args

    def copy(table: str, columns: str, rows: Iterator[str]) -> None:
        with connection.cursor() as cursor:
            raw = cursor.cursor
            with raw.copy(f"COPY {table} ({columns}) FROM STDIN") as out:
                buffer = io.StringIO()
                for n, row in enumerate(rows, 1):
                    buffer.write(row)
                    if n % 200_000 == 0:
                        out.write(buffer.getvalue())
                        buffer = io.StringIO()
                out.write(buffer.getvalue())

    def ids(table: str) -> dict[str, int]:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT external_id, id FROM {table} WHERE collection_id = %s", [collection_id]
            )
            return dict(cursor.fetchall())

    t = f"{STAMP}+00"
    copy(
        "judgments_item",
        "collection_id, external_id, title, text, url, metadata, placeholder, created_at",
        (f"{collection_id}\t{data.item_id(i)}\t\t\t\t{{}}\tf\t{t}\n" for i in range(args.items)),
    )
    copy(
        "judgments_query",
        "collection_id, external_id, text, tags, status, created_at",
        (
            f"{collection_id}\t{data.query_id(q)}\tquery {q}\t[]\t{data.status[q]}\t{t}\n"
            for q in range(args.queries)
        ),
    )
    item_pk, query_pk = ids("judgments_item"), ids("judgments_query")
    qpk = [query_pk[data.query_id(q)] for q in range(args.queries)]
    ipk = [item_pk[data.item_id(i)] for i in range(args.items)]
    log(f"items and queries: {args.items:,} + {args.queries:,}")
    copy(
        "judgments_judgment",
        "query_id, item_id, grade, note, reviewer_name, version, created_at, updated_at",
        (
            f"{qpk[q]}\t{ipk[i]}\t{g}\t\t\t1\t{t}\t{t}\n"
            for q in range(args.queries)
            for i, g in zip(
                data.slots[q, : args.per_query].tolist(), data.grades[q].tolist(), strict=True
            )
        ),
    )
    log(f"judgments: {args.queries * args.per_query:,}")
    copy(
        "judgments_reviewtask",
        "collection_id, query_id, item_id, status, source, best_rank, priority, "
        "created_at, updated_at",
        (
            f"{collection_id}\t{qpk[q]}\t{ipk[int(data.slots[q, k])]}\t{status}\trun bench"
            f"\t{rank}\t{10_000 - rank}\t{t}\t{t}\n"
            for q in range(args.queries)
            for k, status, rank in task_slots(args)
        ),
    )
    copy(
        "judgments_evidencecondition",
        "query_id, groups, updated_at",
        (f"{qpk[q]}\t{groups}\t{t}\n" for q, groups in data.evidence()),
    )


def task_slots(args: argparse.Namespace) -> list[tuple[int, str, int]]:
    """(slot, status, rank) of each query's review tasks: done ones, then pending ones."""
    done = [(k, "done", k + 1) for k in range(args.done_tasks)]
    pending = [
        (args.per_query + k, "pending", args.done_tasks + k + 1) for k in range(args.open_tasks)
    ]
    return done + pending


def insert_sqlite(data: Data, collection_id: int, log: Callable[[str], None]) -> None:
    from django.db import connection

    args = data.args
    connection.ensure_connection()
    db = connection.connection  # the sqlite3 connection: plain executemany, no wrapper

    def insert(table: str, columns: list[str], rows: Any) -> None:
        marks = ", ".join("?" * len(columns))
        db.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)

    c = collection_id
    insert(
        "judgments_item",
        [
            "collection_id",
            "external_id",
            "title",
            "text",
            "url",
            "metadata",
            "placeholder",
            "created_at",
        ],
        ((c, data.item_id(i), "", "", "", "{}", 0, STAMP) for i in range(args.items)),
    )
    insert(
        "judgments_query",
        ["collection_id", "external_id", "text", "tags", "status", "created_at"],
        (
            (c, data.query_id(q), f"query {q}", "[]", str(data.status[q]), STAMP)
            for q in range(args.queries)
        ),
    )
    item_pk = dict(db.execute("SELECT external_id, id FROM judgments_item").fetchall())
    query_pk = dict(db.execute("SELECT external_id, id FROM judgments_query").fetchall())
    qpk = [query_pk[data.query_id(q)] for q in range(args.queries)]
    ipk = [item_pk[data.item_id(i)] for i in range(args.items)]
    log(f"items and queries: {args.items:,} + {args.queries:,}")
    insert(
        "judgments_judgment",
        [
            "query_id",
            "item_id",
            "grade",
            "note",
            "reviewer_name",
            "version",
            "created_at",
            "updated_at",
        ],
        (
            (qpk[q], ipk[i], g, "", "", 1, STAMP, STAMP)
            for q in range(args.queries)
            for i, g in zip(
                data.slots[q, : args.per_query].tolist(), data.grades[q].tolist(), strict=True
            )
        ),
    )
    log(f"judgments: {args.queries * args.per_query:,}")
    insert(
        "judgments_reviewtask",
        [
            "collection_id",
            "query_id",
            "item_id",
            "status",
            "source",
            "best_rank",
            "priority",
            "created_at",
            "updated_at",
        ],
        (
            (
                c,
                qpk[q],
                ipk[int(data.slots[q, k])],
                status,
                "run bench",
                rank,
                10_000 - rank,
                STAMP,
                STAMP,
            )
            for q in range(args.queries)
            for k, status, rank in task_slots(args)
        ),
    )
    insert(
        "judgments_evidencecondition",
        ["query_id", "groups", "updated_at"],
        ((qpk[q], groups, STAMP) for q, groups in data.evidence()),
    )
    db.execute("ANALYZE")


# -- timing -------------------------------------------------------------------------------------


def timed(label: str, results: list[tuple[str, float]], work: Callable[[], Any]) -> Any:
    """Wall time; and this process's CPU time, the client's share of it (the rest is the
    database server, or waiting for a CPU on a busy machine)."""
    started, cpu = time.perf_counter(), time.process_time()
    value = work()
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    results.append((label, took))
    print(
        f"  {label}: {took:.2f} s (Python process CPU {cpu:.2f} s; peak RSS so far "
        f"{rss_mb():,.0f} MB)",
        flush=True,
    )
    return value


def export_rounds(rounds: int) -> None:
    """``manage.py export_qrels bench --snapshot 1`` as TREC qrels and as JSONL, the
    command itself writing to /dev/null, alternately ``rounds`` times: median wall time
    and this process's CPU time of each."""
    import statistics

    from django.core.management import call_command

    if not rounds:
        return
    times: dict[str, list[tuple[float, float]]] = {"trec": [], "jsonl": []}
    for _ in range(rounds):
        for fmt, got in times.items():
            started, cpu = time.perf_counter(), time.process_time()
            call_command("export_qrels", SLUG, snapshot=1, format=fmt, output=os.devnull)
            got.append((time.perf_counter() - started, time.process_time() - cpu))
    for fmt, got in times.items():
        print(
            f"  manage.py export_qrels {SLUG} --snapshot 1 --format {fmt} --output /dev/null: "
            f"median {statistics.median(t[0] for t in got):.2f} s (Python process CPU "
            f"{statistics.median(t[1] for t in got):.2f} s; {rounds} rounds, alternately)",
            flush=True,
        )


def phase_times() -> Any:
    """A ``Progress`` that notes when each of the freeze's phases began and prints them."""
    from jobs.progress import Progress

    class PhaseTimes(Progress):
        def __init__(self) -> None:
            super().__init__()
            self.marks: list[tuple[str, float]] = []

        def phase(self, name: str, total: int | None = None) -> None:
            self.marks.append((name, time.perf_counter()))
            super().phase(name, total)

        def report(self, ended: float) -> None:
            ends = [t for _, t in self.marks[1:]] + [ended]
            for (name, began), end in zip(self.marks, ends, strict=True):
                print(f"      {name}: {end - began:.2f} s")

    return PhaseTimes()


def storage(connection: Any) -> str:
    """Rows (and, on PostgreSQL, bytes) of the snapshot tables."""
    from judgments.models import SnapshotJudgment, SnapshotQuery, SnapshotUnjudged

    parts = []
    for model in (SnapshotQuery, SnapshotJudgment, SnapshotUnjudged):
        table = model._meta.db_table
        size = ""
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_total_relation_size(%s)", [table])
                size = f" {cursor.fetchone()[0] / 1e6:,.1f} MB"
        parts.append(f"{table.removeprefix('judgments_')} {model.objects.count():,} rows{size}")
    return "; ".join(parts)


def main() -> None:
    args = parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    with throwaway_database(args.keep) as where:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection, transaction

        from judgments.models import Item, Judgment, Query, ReviewTask
        from judgments.selectors import snapshot_canonical_lines, snapshot_trec_lines
        from judgments.services import create_collection, freeze_snapshot, record_judgment

        print(f"database: {where} ({connection.vendor})")
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        call_command("migrate", verbosity=0)
        n_judgments = args.queries * args.per_query
        print(
            f"setup: {args.queries:,} queries x {args.per_query} judgments = {n_judgments:,} "
            f"judgments; {args.items:,} items; review tasks per query: {args.open_tasks} "
            f"pending + {args.done_tasks} done"
        )
        started = time.perf_counter()

        def log(message: str) -> None:
            print(f"  {message} ({time.perf_counter() - started:.0f} s)", flush=True)

        data = Data(args)
        with transaction.atomic():
            collection = create_collection(
                slug=SLUG,
                name="Freeze benchmark",
                scale=[
                    {"grade": 0, "name": "not relevant"},
                    {"grade": 1, "name": "related"},
                    {"grade": 2, "name": "relevant"},
                    {"grade": 3, "name": "perfect"},
                ],
                relevant_grade=2,
            )
            insert = insert_postgresql if connection.vendor == "postgresql" else insert_sqlite
            insert(data, collection.pk, log)
        # As a long-lived database would be: statistics gathered, and (PostgreSQL) hint
        # bits set and the visibility map built, so that the first freeze does not pay
        # for the bulk load's first read.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
        counts = (
            Query.objects.count(),
            Item.objects.count(),
            Judgment.objects.count(),
            ReviewTask.objects.exclude(status="done").count(),
        )
        print(
            f"setup took {time.perf_counter() - started:.0f} s (not counted); rows: "
            f"{counts[0]:,} queries, {counts[1]:,} items, {counts[2]:,} judgments, "
            f"{counts[3]:,} open tasks; peak RSS {rss_mb():,.0f} MB"
        )
        assert counts[2] == n_judgments

        results: list[tuple[str, float]] = []
        print("timings:")
        profiler = cProfile.Profile() if args.profile else None
        if profiler is not None:
            profiler.enable()
        phases = phase_times()
        v1, created = timed(
            "freeze v1 (every query rendered and written)",
            results,
            lambda: freeze_snapshot(collection=collection, by=None, progress=phases),
        )
        phases.report(time.perf_counter())
        if profiler is not None:
            profiler.disable()
        print(f"    storage after v1: {storage(connection)}")
        assert created and v1.n_judgments == n_judgments, (created, v1.n_judgments)
        same, created = timed(
            "freeze again, nothing changed (hashed from the stored blocks)",
            results,
            lambda: freeze_snapshot(collection=collection, by=None),
        )
        assert not created and same.pk == v1.pk
        judgments = Judgment.objects.select_related("query", "item").order_by("pk")

        def regrade(n: int) -> None:  # the n-th judgment, 0 <-> 1: never a relevant one
            judgment = judgments[n]
            record_judgment(
                query=judgment.query,
                item=judgment.item,
                grade=(judgment.grade + 1) % 2,
                reviewer=None,
                expected_version=judgment.version,
            )

        regrade(0)
        phases = phase_times()
        v2, created = timed(
            "freeze v2 after one regrade (one query rendered, the rest shared)",
            results,
            lambda: freeze_snapshot(collection=collection, by=None, progress=phases),
        )
        phases.report(time.perf_counter())
        assert created and v2.number == 2 and v2.content_hash != v1.content_hash
        from django.conf import settings

        from judgments.services import snapshot_forms

        t0 = time.perf_counter()
        snapshot_forms.settle()  # the next freeze would wait for it too
        print(
            f"    its form file, written on a second thread, kept {time.perf_counter() - t0:.2f} s"
            " after the freeze returned"
        )
        print(f"    storage after v2: {storage(connection)}")
        shutil.rmtree(settings.VERITY_FORM_DIR / str(collection.pk))
        regrade(args.per_query * (args.queries // 2))
        phases = phase_times()
        v3, created = timed(
            "freeze v3 after one regrade, its form file deleted (read from the blocks)",
            results,
            lambda: freeze_snapshot(collection=collection, by=None, progress=phases),
        )
        phases.report(time.perf_counter())
        assert created and v3.number == 3
        regrade(args.per_query * (args.queries - 1))
        phases = phase_times()
        v4, created = timed(
            "freeze v4 after one regrade (the form v3 kept)",
            results,
            lambda: freeze_snapshot(collection=collection, by=None, progress=phases),
        )
        phases.report(time.perf_counter())
        assert created and v4.number == 4

        def export_jsonl() -> str:
            digest = hashlib.sha256()
            for line in snapshot_canonical_lines(v1):
                digest.update(line)
            return digest.hexdigest()

        exported = timed("export v1 as JSONL (canonical form) + sha256", results, export_jsonl)
        assert exported == v1.content_hash, "the export does not hash to the snapshot's hash"
        lines = timed(
            "export v1 as TREC qrels",
            results,
            lambda: sum(1 for _ in snapshot_trec_lines(v1)),
        )
        assert lines == n_judgments

        export_rounds(args.export_rounds)

        if profiler is not None:
            print("cProfile of freeze v1, by internal time:")
            stats = pstats.Stats(profiler, stream=sys.stdout)
            stats.sort_stats("tottime").print_stats(15)
        print(f"peak RSS of this process: {rss_mb():,.0f} MB")
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
