"""Cancelling a job: from the API (POST), the job page (a POST form with its CSRF token)
and ``manage.py jobs --cancel ID``. A queued job is cancelled at once; a running one is
stopped by its worker at its next step, its transaction rolled back, so nothing of it is
stored. The job records who cancelled it. Only who may retry the job may cancel it."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from rest_framework.test import APIClient

from jobs import files
from jobs.models import Job, JobState
from jobs.runner import complete, run_job
from jobs.services import create_job
from judgments.models import Query
from judgments.services import set_membership
from scoring.models import Run
from scoring.tasks import _import_run, import_run_task, start_run_import
from tests.scoring.conftest import RECALL_EXAMPLE

pytestmark = pytest.mark.django_db

RUN = (RECALL_EXAMPLE / "run.trec").read_bytes()


@pytest.fixture
def eve(recall_v1, django_user_model):
    user = django_user_model.objects.create_user("eve", password="pw-for-eve-1")
    set_membership(collection=recall_v1.collection, user=user, role="evaluator")
    return user


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def queued_import(collection, by) -> Job:
    """A run import waiting for a worker (the test's transaction never commits, so its
    task is never queued)."""
    return start_run_import(
        collection=collection,
        upload=SimpleUploadedFile("run.trec", RUN),
        filename="run.trec",
        name="cancelme",
        by=by,
    )


def test_the_api_cancels_a_queued_job_and_says_who(eve, recall_v1, job_dir):
    job = queued_import(recall_v1.collection, eve)
    assert files.has_input(job)

    response = api_for(eve).post(f"/api/jobs/{job.pk}/cancel/")

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["state"], body["cancelled_by"], body["can_cancel"]) == ("cancelled", "eve", False)
    assert body["error"] == "Cancelled by eve (API). Nothing of it was stored."
    job.refresh_from_db()
    assert job.cancelled_by == eve and job.cancelled_at is not None
    assert not files.has_input(job)  # cleaned up
    # A worker that takes its task later does nothing.
    assert run_job(job.pk, _import_run) == {"job": job.pk, "skipped": True}
    assert not Run.objects.exists()
    again = api_for(eve).post(f"/api/jobs/{job.pk}/cancel/")
    assert again.status_code == 409
    assert "only a queued or running job can be cancelled" in again.json()["detail"]


def test_a_running_import_cancelled_stores_nothing(eve, recall_v1, job_dir):
    job = queued_import(recall_v1.collection, eve)
    answers = []

    def cancelled_while_running(job, progress):
        answers.append(api_for(eve).post(f"/api/jobs/{job.pk}/cancel/"))
        return _import_run(job, progress)  # stops at its next progress report

    run_job(job.pk, cancelled_while_running)

    assert answers[0].status_code == 202
    assert (answers[0].json()["state"], answers[0].json()["cancelling"]) == ("running", True)
    job.refresh_from_db()
    assert (job.state, job.cancelled_by) == (JobState.CANCELLED, eve)
    assert not Run.objects.exists()
    assert not files.has_input(job)


def test_a_cancel_that_arrives_before_the_job_completes_rolls_its_transaction_back(
    eve, recall_v1, job_dir
):
    job = create_job(kind="run_import", task=import_run_task, label="x", by=eve)

    def stores_then_completes(job, progress):
        with transaction.atomic():
            Query.objects.create(collection=recall_v1.collection, external_id="half", text="t")
            call_command("jobs", "--cancel", str(job.pk), stdout=io.StringIO())
            complete(job, progress, {"summary": "made"})

    run_job(job.pk, stores_then_completes)

    job.refresh_from_db()
    assert job.state == JobState.CANCELLED
    assert job.cancelled_by is None and "from the command line" in job.error
    assert not Query.objects.filter(external_id="half").exists()


def test_the_job_page_cancels_with_a_csrf_protected_post(eve, recall_v1, job_dir):
    job = queued_import(recall_v1.collection, eve)
    page = Client(enforce_csrf_checks=True)
    page.force_login(eve)
    shown = page.get(f"/jobs/{job.pk}/")
    assert f'action="/jobs/{job.pk}/cancel/"' in shown.content.decode()

    forged = page.post(f"/jobs/{job.pk}/cancel/")
    assert forged.status_code == 403
    job.refresh_from_db()
    assert job.state == JobState.QUEUED

    token = page.cookies["csrftoken"].value
    done = page.post(f"/jobs/{job.pk}/cancel/", {"csrfmiddlewaretoken": token}, follow=True)
    assert done.status_code == 200
    text = done.content.decode()
    assert "cancelled; nothing of it was stored" in text
    assert "Cancelled by eve. Nothing of it was stored." in text
    job.refresh_from_db()
    assert (job.state, job.cancelled_by) == (JobState.CANCELLED, eve)


def test_the_command_cancels_a_job_and_refuses_an_ended_one(eve, recall_v1, job_dir):
    job = queued_import(recall_v1.collection, eve)
    out = io.StringIO()

    call_command("jobs", "--cancel", str(job.pk), stdout=out)

    assert out.getvalue() == f"job {job.pk} cancelled; nothing of it was stored.\n"
    job.refresh_from_db()
    assert (job.state, job.cancelled_by) == (JobState.CANCELLED, None)
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="is cancelled; only a queued or running"):
        call_command("jobs", "--cancel", str(job.pk), stdout=io.StringIO())


def test_only_who_may_retry_a_job_may_cancel_it(eve, recall_v1, django_user_model, job_dir):
    job = queued_import(recall_v1.collection, eve)
    other = django_user_model.objects.create_user("otto")
    set_membership(collection=recall_v1.collection, user=other, role="evaluator")

    response = api_for(other).post(f"/api/jobs/{job.pk}/cancel/")

    assert response.status_code == 403
    assert "may cancel it" in response.json()["detail"]
    job.refresh_from_db()
    assert job.state == JobState.QUEUED


CANCEL_ON_A_LINE = (
    "import sys, django; django.setup(); from django.core.management import call_command; "
    "sys.stdin.readline(); call_command('jobs', '--cancel', sys.argv[1])"
)


@pytest.mark.django_db(transaction=True)
def test_cancelling_a_real_workers_import_mid_storing_leaves_no_rows(tmp_path, job_dir):
    """A worker process imports a 300,000-line run; ``manage.py jobs --cancel`` while it
    stores the lists answers at once (on SQLite the import holds the one write lock: the
    cancel writes nothing to the database), and the worker rolls the import back."""
    import subprocess
    import sys
    import time

    from jobs.progress import read_progress
    from tests.factories import make_collection
    from tests.jobs.test_kill import (
        POLL,
        QUERIES,
        REPO,
        SharedDatabase,
        counts,
        env_for,
        kill_9,
        write_run,
    )

    collection = make_collection(slug="cancelled", pool_depth=10)
    Query.objects.bulk_create(
        Query(collection=collection, external_id=f"q{q}", text=f"query {q}") for q in range(QUERIES)
    )
    run_file = tmp_path / "big.trec"
    write_run(run_file)
    job = start_run_import(collection=collection, upload=run_file, filename="big.trec", name="big")
    db = SharedDatabase(tmp_path)
    db.publish()
    before = counts(db)
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
        # The cancelling command, started up front: it waits for a line on stdin.
        canceller = subprocess.Popen(
            [sys.executable, "-c", CANCEL_ON_A_LINE, str(job.pk)],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                if (read_progress(job.key) or {}).get("phase") == "storing ranked lists":
                    break
                assert worker.poll() is None, log_path.read_text()[-3000:]
                time.sleep(POLL)
            asked = time.monotonic()
            out, _ = canceller.communicate("go\n", timeout=60)
            answered = time.monotonic() - asked
            state = ""
            while time.monotonic() < deadline and state != "cancelled":
                (state,) = db.one(f"SELECT state FROM jobs_job WHERE id = {job.pk}")
                time.sleep(0.2)
        finally:
            kill_9(worker.pid)
            worker.wait()
            if canceller.poll() is None:
                canceller.kill()
                canceller.wait()

    assert out == f"job {job.pk}: cancel requested; its worker stops it.\n"
    assert answered < 2  # at once: nothing waits for the import's write lock
    assert state == "cancelled", log_path.read_text()[-3000:]
    assert db.one(f"SELECT error FROM jobs_job WHERE id = {job.pk}") == (
        "Cancelled from the command line. Nothing of it was stored.",
    )
    assert counts(db) == before
