"""Redis unreachable when a job is started (the RQ backend): the request answers 503 with
the reason (JSON under /api/, a page in the browser), the job is failed as retryable with
its input kept, and /healthz says the job queue is down. Nothing here needs a Redis: the
point is that none answers."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from jobs import files
from jobs.models import Job, JobState
from judgments.services import set_membership
from scoring.tasks import start_run_import
from tests.scoring.conftest import RECALL_EXAMPLE

# The job is queued when the request's transaction commits, as in production.
pytestmark = pytest.mark.django_db(transaction=True)

RUN = (RECALL_EXAMPLE / "run.trec").read_bytes()
NOBODY = "redis://127.0.0.1:1/0"  # port 1: connection refused at once


@pytest.fixture
def redis_down(settings, job_dir):
    return down(settings)


def down(settings):
    """VERITY_JOBS_BACKEND=rq with a Redis that does not answer."""
    settings.RQ_QUEUES = {"default": {"URL": NOBODY, "DEFAULT_TIMEOUT": 600}}
    settings.TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["default"]}}
    settings.CACHES = {
        **settings.CACHES,
        "jobs": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": NOBODY},
    }


@pytest.fixture
def eve(recall_v1, django_user_model):
    user = django_user_model.objects.create_user("eve", password="pw-for-eve-1")
    set_membership(collection=recall_v1.collection, user=user, role="evaluator")
    return user


def test_an_upload_answers_json_503_and_the_job_is_failed_retryable(eve, redis_down):
    api = APIClient()
    api.force_authenticate(eve)
    response = api.post(
        "/api/collections/recall-example/runs/",
        {"file": SimpleUploadedFile("run.trec", RUN), "name": "later"},
        format="multipart",
        HTTP_PREFER="respond-async",
    )

    assert response.status_code == 503, response.content[:300]
    assert response["Content-Type"] == "application/json"
    assert response["Retry-After"] == "30"
    body = response.json()
    job = Job.objects.get()
    assert body["job"] == job.pk and body["job_url"] == f"/api/jobs/{job.pk}/"
    assert "could not be queued" in body["detail"] and "Redis" in body["detail"]
    assert "ConnectionError" in body["detail"] and "Retry" in body["detail"]
    assert job.state == JobState.FAILED and job.error == body["detail"]
    assert files.has_input(job)  # not orphaned: the job keeps it for Retry
    shown = api.get(f"/api/jobs/{job.pk}/").json()  # the job's page works without Redis
    assert (shown["state"], shown["can_retry"]) == ("failed", True)


def test_retry_on_the_job_page_answers_a_503_page_while_redis_is_down(
    eve, recall_v1, settings, job_dir
):
    job = start_run_import(
        collection=recall_v1.collection,
        upload=SimpleUploadedFile("run.trec", RUN),
        filename="run.trec",
        name="later",
        by=eve,
    )
    Job.objects.filter(pk=job.pk).update(state=JobState.FAILED, error="it failed")
    down(settings)
    page = Client()
    page.force_login(eve)

    response = page.post(f"/jobs/{job.pk}/retry/")

    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/html")
    text = response.content.decode()
    again = Job.objects.get(retry_of=job)
    assert "The job could not be started" in text and "could not be queued" in text
    assert f'href="/jobs/{again.pk}/"' in text
    assert again.state == JobState.FAILED and files.has_input(again)


def test_healthz_is_503_when_the_job_queue_is_down(redis_down):
    response = Client().get("/healthz")

    assert response.status_code == 503
    assert response.json() == {
        "status": "error",
        "database": "ok",
        "jobs": "unavailable: Redis ConnectionError",
    }


@pytest.mark.redis
def test_healthz_is_ok_when_redis_answers(rq_backend, settings):
    response = Client().get("/healthz")
    assert (response.status_code, response.json()["jobs"]) == (200, "ok")
