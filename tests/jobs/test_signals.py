"""A worker told to stop (SIGTERM, as ``systemctl stop`` and the upgrade procedure send
it) while its job reads the run file with pyarrow: the job is never failed. Told once,
the worker finishes the job, then exits; told twice (stop now), it puts the job back on
the queue, and the next worker runs it. Either way the whole run is stored once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.csv as pcsv
import pytest

from jobs.management.commands.jobs_worker import let_jobs_finish_on_sigterm
from jobs.progress import read_progress
from judgments.models import Query
from scoring.tasks import start_run_import
from tests.factories import make_collection
from tests.jobs.test_kill import (
    DEPTH,
    POLL,
    QUERIES,
    REPO,
    SharedDatabase,
    counts,
    env_for,
    kill_9,
    manage,
    write_run,
)

#: Copies of the run's lines under queries the collection lacks (skipped after reading),
#: so that pyarrow reads for seconds, long enough for the signal to arrive while it does.
UNKNOWN_COPIES = 9


def worker_stopped_while_reading(tmp_path: Path, job_dir: Path, signals: int):
    collection = make_collection(slug="stopped", pool_depth=10)
    Query.objects.bulk_create(
        Query(collection=collection, external_id=f"q{q}", text=f"query {q}") for q in range(QUERIES)
    )
    run_file = tmp_path / "big.trec"
    write_run(run_file)
    with run_file.open("a") as fh:
        for copy in range(UNKNOWN_COPIES if signals == 1 else 0):
            fh.writelines(
                f"other{copy}-{q} Q0 d{r} {r + 1} {DEPTH - r} kill\n"
                for q in range(QUERIES)
                for r in range(DEPTH)
            )
    job = start_run_import(
        collection=collection,
        upload=run_file,
        filename="big.trec",
        name="big",
        ignore_unknown_queries=True,
    )
    db = SharedDatabase(tmp_path)
    db.publish()
    env = env_for(db, "database", job_dir)
    log_path = tmp_path / "worker.log"
    with log_path.open("w") as log:
        worker = subprocess.Popen(
            [sys.executable, "manage.py", "jobs_worker"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            phase = ""
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not phase.startswith("reading"):
                phase = (read_progress(job.key) or {}).get("phase", "")
                assert worker.poll() is None, log_path.read_text()[-3000:]
                time.sleep(POLL / 4)
            assert phase.startswith("reading"), "the worker never started reading"
            time.sleep(1.0 if signals == 1 else 0.2)  # pyarrow is imported and reading
            worker.send_signal(signal.SIGTERM)
            if signals == 2:
                # Two signals before the worker's handler runs would be one: the second
                # goes once the first is handled (it says so in the log).
                while "shutting down gracefully" not in log_path.read_text():
                    assert time.monotonic() < deadline and worker.poll() is None
                    time.sleep(POLL / 4)
                worker.send_signal(signal.SIGTERM)
            code = worker.wait(timeout=180)
        finally:
            if worker.poll() is None:  # never a reaped pid: another process may have it
                kill_9(worker.pid)
    return job, db, env, code, log_path.read_text()


def assert_whole_run_stored(db: SharedDatabase) -> None:
    after = counts(db)
    assert (after["runs"], after["stages"], after["lists"]) == (1, 1, QUERIES)
    assert db.one("SELECT n_rows FROM scoring_runstage") == (QUERIES * DEPTH,)


@pytest.mark.django_db(transaction=True)
def test_sigterm_while_the_run_file_is_read_lets_the_job_finish(tmp_path, job_dir):
    job, db, _env, code, log = worker_stopped_while_reading(tmp_path, job_dir, signals=1)

    assert code == 0, log[-3000:]
    assert "shutting down gracefully" in log
    state_error = db.one(f"SELECT state, error FROM jobs_job WHERE id = {job.pk}")
    assert state_error == ("done", ""), log[-3000:]
    assert_whole_run_stored(db)


@pytest.mark.django_db(transaction=True)
def test_a_second_sigterm_puts_the_job_back_on_the_queue_never_failed(tmp_path, job_dir):
    job, db, env, _code, log = worker_stopped_while_reading(tmp_path, job_dir, signals=2)

    assert "terminating current task" in log, log[-3000:]  # stopped at once
    row = f"SELECT state, error, task_id FROM jobs_job WHERE id = {job.pk}"
    state, error, task_id = db.one(row)
    assert (state, error) == ("queued", ""), log[-3000:]
    assert task_id and task_id != job.task_id  # a new task on the queue
    assert counts(db)["runs"] == 0  # nothing of the stopped attempt

    manage(env, "jobs_worker", "--batch")
    shown = json.loads(manage(env, "jobs", "--show", str(job.pk)))
    assert (shown["state"], shown["error"]) == ("done", "")
    assert_whole_run_stored(db)


def test_in_a_worker_pyarrow_does_not_cancel_a_read_on_sigterm(tmp_path):
    """pyarrow cancels a read when a signal with a Python handler arrives during it (it
    failed imports with 'ArrowCancelled ... signal 15'); the worker turns that off."""
    path = tmp_path / "lines.csv"
    path.write_text("a b c\n" * 3_000_000)
    received = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:
        let_jobs_finish_on_sigterm()
        threading.Timer(0.05, os.kill, args=(os.getpid(), signal.SIGTERM)).start()
        table = pcsv.read_csv(path, parse_options=pcsv.ParseOptions(delimiter=" "))
    finally:
        signal.signal(signal.SIGTERM, previous)
        import pyarrow

        pyarrow.enable_signal_handlers(True)
    assert table.num_rows == 2_999_999
    assert received == [signal.SIGTERM]
