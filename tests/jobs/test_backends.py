"""The same jobs through real queues: the database backend with its worker (on SQLite and
on PostgreSQL, whichever the suite runs on) and RQ on the real Redis (marked ``redis``).
The worker runs in this process, so its work is the test's to inspect."""

from __future__ import annotations

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult
from rest_framework.test import APIClient

from jobs.models import Job, JobState
from judgments.services import set_membership
from scoring.models import Evaluation, Run
from tests.scoring.conftest import RECALL_EXAMPLE

RUN = (RECALL_EXAMPLE / "run.trec").read_bytes()
URL = "/api/collections/recall-example"
ASYNC = {"HTTP_PREFER": "respond-async"}


def client_for(collection, django_user_model) -> APIClient:
    user = django_user_model.objects.create_user("eve")
    set_membership(collection=collection, user=user, role="evaluator")
    client = APIClient()
    client.force_authenticate(user)
    return client


def start_import(client) -> Job:
    imported = client.post(
        f"{URL}/runs/",
        {"file": SimpleUploadedFile("run.trec", RUN), "name": "queued"},
        format="multipart",
        **ASYNC,
    )
    assert imported.status_code == 202, imported.content
    return Job.objects.get(pk=imported.json()["id"])


def assert_founding_numbers(job: Job) -> None:
    job.refresh_from_db()
    assert job.state == JobState.DONE, job.error
    run = Run.objects.get(name="queued")
    assert run.stages.get().n_rows == 8
    assert job.result["api_url"] == f"{URL}/runs/queued/"


@pytest.mark.django_db(transaction=True)
def test_the_database_queue_and_its_worker_run_the_jobs(recall_v1, django_user_model, job_dir):
    client = client_for(recall_v1.collection, django_user_model)
    job = start_import(client)
    queued = DBTaskResult.objects.get(id=job.task_id)

    call_command("jobs_worker", "--batch", stdout=io.StringIO(), stderr=io.StringIO())

    assert queued.task_path == "scoring.tasks.import_run_task"
    assert_founding_numbers(job)
    scored = client.post(
        f"{URL}/evaluations/", {"run": "queued", "snapshot": 1, "ks": [2]}, **ASYNC
    )
    call_command("jobs_worker", "--batch", stdout=io.StringIO(), stderr=io.StringIO())
    scoring = client.get(scored["Location"]).json()
    evaluation = Evaluation.objects.get(pk=scoring["result"]["evaluation"])
    # The founding example: macro R@2 = (1/3 + 1 + 0) / 3 = 4/9, pooled 2/5.
    assert evaluation.aggregates["R@2"]["macro"] == pytest.approx(4 / 9)
    assert evaluation.aggregates["R@2"]["pooled"] == pytest.approx(2 / 5)
    assert DBTaskResult.objects.filter(status="SUCCESSFUL").count() == 2


@pytest.mark.redis
@pytest.mark.django_db
def test_the_rq_queue_on_redis_runs_the_same_jobs(
    recall_v1, django_user_model, rq_backend, django_capture_on_commit_callbacks
):
    import django_rq
    from rq.worker import SimpleWorker

    client = client_for(recall_v1.collection, django_user_model)
    with django_capture_on_commit_callbacks(execute=True):
        job = start_import(client)
    job.refresh_from_db()
    queue = django_rq.get_queue("default")

    assert queue.count == 1 and queue.job_ids == [job.task_id]
    worker = django_rq.get_worker("default", worker_class=SimpleWorker)
    worker.work(burst=True)

    assert_founding_numbers(job)
    assert queue.count == 0
    with django_capture_on_commit_callbacks(execute=True):
        scored = client.post(
            f"{URL}/evaluations/", {"run": "queued", "snapshot": 1, "ks": [2]}, **ASYNC
        )
    worker.work(burst=True)
    scoring = client.get(scored["Location"]).json()
    assert scoring["state"] == "done"
    evaluation = Evaluation.objects.get(pk=scoring["result"]["evaluation"])
    assert evaluation.aggregates["R@2"]["macro"] == pytest.approx(4 / 9)
