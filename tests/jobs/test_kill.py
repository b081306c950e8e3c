"""A worker killed with SIGKILL in the middle of a run import, for real: a worker process
on the same database (and the same Redis, for RQ), killed while its job is storing ranked
lists. Nothing of the run is left; the job is noticed as stale and failed with words that
say what to do; started again, it imports the whole run.

Progress must be visible while the import's transaction is open: the test reads it (and
the job's row, from another connection) before killing the worker. On SQLite the test's
in-memory database is copied to a file the worker and the test share (WAL, as in
production); on PostgreSQL both use the test database.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection

from jobs.progress import read_progress
from judgments.models import Query
from scoring.tasks import start_run_import
from tests.conftest import TEST_REDIS_URL
from tests.factories import make_collection

REPO = Path(__file__).resolve().parents[2]
QUERIES, DEPTH = 3000, 100  # 300,000 lines: three batches of ranked lists per stage
POLL = 0.02


def write_run(path: Path) -> None:
    with path.open("w") as fh:
        for q in range(QUERIES):
            for r in range(DEPTH):
                fh.write(f"q{q} Q0 d{(q * 7 + r * 13) % 20000} {r + 1} {DEPTH - r} kill\n")


class SharedDatabase:
    """The test's database as another process sees it, and counts read from it."""

    def __init__(self, tmp_path: Path) -> None:
        self.sqlite_file: Path | None = None
        if connection.vendor == "sqlite":
            self.sqlite_file = tmp_path / "shared.sqlite3"

    def publish(self) -> None:
        """Make what the test wrote visible to the worker (SQLite: copy it to the file)."""
        if self.sqlite_file is not None:
            connection.ensure_connection()
            target = sqlite3.connect(self.sqlite_file)
            connection.connection.backup(target)
            target.close()

    def url(self) -> str:
        if self.sqlite_file is not None:
            return f"sqlite:///{self.sqlite_file}"
        s = connection.settings_dict
        password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
        return f"postgres://{s['USER']}{password}@{s['HOST']}:{s['PORT'] or 5432}/{s['NAME']}"

    def one(self, sql: str) -> Any:
        if self.sqlite_file is not None:
            with sqlite3.connect(self.sqlite_file) as db:
                return db.execute(sql).fetchone()
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchone()


def env_for(db: SharedDatabase, backend: str, job_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERITY_")}
    env.update(
        DATABASE_URL=db.url(),
        VERITY_JOB_DIR=str(job_dir),
        VERITY_JOBS_BACKEND=backend,
        VERITY_REDIS_URL=TEST_REDIS_URL,
        VERITY_JOB_HEARTBEAT_SECONDS="0.5",
        DJANGO_SETTINGS_MODULE="config.settings",
        **extra,
    )
    return env


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (RQ's work horse starts a session of its own, so a
    process-group kill would miss it)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_9(pid: int) -> None:
    for p in [*descendants(pid), pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)


def counts(db: SharedDatabase) -> dict[str, int]:
    tables = {
        "runs": "scoring_run",
        "stages": "scoring_runstage",
        "lists": "scoring_rankedlist",
        "tasks": "judgments_reviewtask",
        "items": "judgments_item",
    }
    return {k: db.one(f"SELECT COUNT(*) FROM {t}")[0] for k, t in tables.items()}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("backend", ["database", pytest.param("rq", marks=pytest.mark.redis)])
def test_a_worker_killed_mid_import_leaves_no_rows_and_the_job_runs_again(
    backend, request, tmp_path, job_dir
):
    if backend == "rq":
        request.getfixturevalue("rq_backend")
    collection = make_collection(slug="killed", pool_depth=10)
    Query.objects.bulk_create(
        Query(collection=collection, external_id=f"q{q}", text=f"query {q}") for q in range(QUERIES)
    )
    run_file = tmp_path / "big.trec"
    write_run(run_file)
    job = start_run_import(collection=collection, upload=run_file, filename="big.trec", name="big")
    job.refresh_from_db()
    db = SharedDatabase(tmp_path)
    db.publish()
    before = counts(db)
    env = env_for(db, backend, job_dir)
    log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "jobs_worker"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    seen: list[dict[str, Any]] = []
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            progress = read_progress(job.key) or {}
            if progress.get("phase") in ("storing ranked lists", "pooling unjudged items"):
                seen.append(progress)
                # Another connection reads the job's row while the import's transaction is
                # open (on SQLite: one writer, WAL readers).
                seen.append({"row": db.one(f"SELECT state FROM jobs_job WHERE id = {job.pk}")})
                break
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(POLL)
    finally:
        kill_9(worker.pid)  # the worker and its work horse (RQ), as kill -9 would
        worker.wait()
        log.close()
    assert seen, "the worker never reported storing; see worker.log"
    assert seen[0]["total"] == QUERIES * DEPTH or seen[0]["phase"].startswith("pooling")
    assert seen[1] == {"row": ("running",)}

    # Nothing of the run was stored: the import is one transaction, and it never ended.
    assert counts(db) == before
    assert db.one(f"SELECT state FROM jobs_job WHERE id = {job.pk}") == ("running",)

    # Once its heartbeat is older than the limit, the sweep fails it, in words.
    time.sleep(2.5)
    out = manage({**env, "VERITY_JOB_STALE_SECONDS": "2"}, "jobs", "--fail-stale")
    state, error = db.one(f"SELECT state, error FROM jobs_job WHERE id = {job.pk}")
    assert f"job {job.pk} (run_import): marked failed" in out
    assert state == "failed"
    assert "stopped answering" in error and "Nothing of it was stored" in error
    assert "Retry" in error

    # Started again from the same file, it imports the whole run.
    retry = (
        "import django; django.setup(); from jobs.models import Job; "
        "from jobs.services import retry_job; "
        f"print(retry_job(Job.objects.get(pk={job.pk})).pk)"
    )
    done = subprocess.run(
        [sys.executable, "-c", retry], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    new_id = int(done.stdout.strip())
    manage(env, "jobs_worker", "--batch")
    shown = json.loads(manage(env, "jobs", "--show", str(new_id)))
    assert shown["state"] == "done", shown["error"]
    assert shown["retry_of"] == job.pk
    after = counts(db)
    assert (after["runs"], after["stages"], after["lists"]) == (1, 1, QUERIES)
    assert db.one("SELECT n_rows FROM scoring_runstage") == (QUERIES * DEPTH,)
    assert django_settings.VERITY_JOBS_BACKEND == "database"  # the test's own process
