"""A worker killed under its job. With RQ, the process running the job (the work horse)
killed with SIGKILL is noticed within seconds: RQ's worker moves the job to its failed
registry at once, and Verity reads that instead of waiting a minute for the heartbeat to
go stale. With the database queue, the sweep also ends django-tasks-db's row of the task,
which the dead worker left RUNNING forever."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from jobs.models import Job, JobState
from jobs.progress import read_progress
from jobs.services import fail_stale_jobs, start_job
from judgments.models import Query
from scoring.tasks import start_run_import
from tests.factories import make_collection
from tests.jobs.test_kill import (
    POLL,
    QUERIES,
    REPO,
    SharedDatabase,
    descendants,
    env_for,
    kill_9,
    manage,
    write_run,
)
from tests.scoring.conftest import RECALL_EXAMPLE


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_rq_a_killed_work_horse_is_noticed_in_seconds(tmp_path, job_dir, rq_backend):
    collection = make_collection(slug="horse", pool_depth=10)
    Query.objects.bulk_create(
        Query(collection=collection, external_id=f"q{q}", text=f"query {q}") for q in range(QUERIES)
    )
    run_file = tmp_path / "big.trec"
    write_run(run_file)
    job = start_run_import(collection=collection, upload=run_file, filename="big.trec", name="big")
    db = SharedDatabase(tmp_path)
    db.publish()
    # The heartbeat's limit stays a minute: only RQ's word can fail the job in seconds.
    env = env_for(db, "rq", job_dir, VERITY_JOB_STALE_SECONDS="60")
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
            deadline = time.monotonic() + 120
            horses: list[int] = []
            while time.monotonic() < deadline:
                # Both: the job is reading, and its work horse is seen (on a loaded machine
                # the process list lagged the progress entry now and then).
                reading = (read_progress(job.key) or {}).get("phase", "").startswith("reading")
                horses = descendants(worker.pid) if reading else []
                if horses:
                    break
                assert worker.poll() is None, log_path.read_text()[-3000:]
                time.sleep(POLL)
            assert horses, "RQ runs each job in a process of its own"
            killed_at = time.monotonic()
            kill_9(horses[0])  # the process running the job; its worker lives on

            shown: dict = {}
            while time.monotonic() - killed_at < 15:
                shown = json.loads(manage(env, "jobs", "--show", str(job.pk)))
                if shown["state"] == "failed":
                    break
                time.sleep(0.5)
            noticed = time.monotonic() - killed_at
            assert worker.poll() is None  # the worker itself goes on
        finally:
            kill_9(worker.pid)
            worker.wait()

    assert (shown["state"], shown["stale"]) == ("failed", True), log_path.read_text()[-2000:]
    assert noticed < 15
    assert "stopped answering" in shown["error"] and shown["can_retry"]
    out = manage(env, "jobs", "--fail-stale")
    assert f"job {job.pk} (run_import): marked failed" in out
    assert db.one(f"SELECT state FROM jobs_job WHERE id = {job.pk}") == ("failed",)
    assert db.one("SELECT COUNT(*) FROM scoring_run") == (0,)


@pytest.mark.django_db
def test_the_sweep_ends_the_database_queues_row_of_a_dead_workers_task(
    recall_v1, settings, job_dir, django_capture_on_commit_callbacks
):
    settings.VERITY_JOB_STALE_SECONDS = 2
    with django_capture_on_commit_callbacks(execute=True):
        job = start_run_import(
            collection=recall_v1.collection,
            upload=SimpleUploadedFile("run.trec", (RECALL_EXAMPLE / "run.trec").read_bytes()),
            filename="run.trec",
            name="dead",
        )
    job.refresh_from_db()
    task = DBTaskResult.objects.get(id=job.task_id)
    task.claim("worker-that-dies")  # as db_worker does, then the worker is killed
    start_job(job.pk)
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(seconds=10))

    failed = fail_stale_jobs()

    assert [j.pk for j in failed] == [job.pk]
    job.refresh_from_db()
    task.refresh_from_db()
    assert job.state == JobState.FAILED
    assert task.status == "FAILED"
    assert task.finished_at is not None and "stopped answering" in task.traceback
