"""Long API operations as jobs: 202 Accepted with Location, the job's state and result,
refusals in the job, retry, exports; small ones still finish in the request (201/200)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import caches
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.test import APIClient

from jobs.models import Job, JobState
from jobs.progress import JobProgress, progress_key
from judgments.models import Query, Snapshot
from judgments.services import create_api_token, set_membership
from scoring.models import Evaluation, RankedList, Run
from tests.scoring.conftest import RECALL_EXAMPLE

pytestmark = pytest.mark.django_db

RUN = (RECALL_EXAMPLE / "run.trec").read_bytes()


@pytest.fixture
def evaluator(recall_v1, django_user_model):
    user = django_user_model.objects.create_user("eve")
    set_membership(collection=recall_v1.collection, user=user, role="evaluator")
    return user


@pytest.fixture
def api(evaluator) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=evaluator).key}")
    return client


URL = "/api/collections/recall-example"
ASYNC = {"HTTP_PREFER": "respond-async"}


def upload(api, name: str, content: bytes = RUN, **headers):
    data = {"file": SimpleUploadedFile("run.trec", content), "name": name}
    return api.post(f"{URL}/runs/", data, format="multipart", **headers)


def test_a_large_upload_answers_202_with_location_then_the_job_shows_the_run(
    api, settings, jobs_inline
):
    settings.VERITY_INLINE_MAX_BYTES = 10  # the 130-byte founding run counts as large

    with jobs_inline():
        accepted = upload(api, "big")
        queued = accepted.json()

    job = api.get(accepted["Location"]).json()
    run = api.get(job["result"]["api_url"])

    assert accepted.status_code == 202
    assert accepted["Location"] == f"/api/jobs/{queued['id']}/" == queued["api_url"]
    assert queued["state"] == "queued" and queued["kind"] == "run_import"
    assert job["state"] == "done" and job["percent"] == 100.0
    assert run.status_code == 200 and run.json()["stages"][0]["n_rows"] == 8
    assert job["result"]["import_report"] == {
        "unjudged_found": 1,
        "newly_queued": 1,
        "placeholders_created": 0,
        "queries_not_in_collection": [],
        "unknown_query_ids": 0,
        "unknown_query_lines_skipped": 0,
        "unknown_item_ids": 0,
        "unknown_item_ids_beyond_depth": 0,
    }
    assert "pool depth 10: 1 unjudged item found, 1 new to the review queue" in " ".join(
        job["result"]["details"]
    )


def test_a_small_upload_is_imported_in_the_request_unless_async_is_preferred(api, jobs_inline):
    inline = upload(api, "small")
    with jobs_inline():
        accepted = upload(api, "later", **ASYNC)

    assert inline.status_code == 201 and inline.json()["name"] == "small"
    assert accepted.status_code == 202
    assert Run.objects.filter(name="later").exists()


def test_a_refused_file_fails_its_job_with_the_lines_and_stores_nothing(api, jobs_inline):
    bad = RUN + b"A Q0 a 9 0.1 t\n"  # 'a' twice for query A

    with jobs_inline():
        accepted = upload(api, "dup", bad, **ASYNC)
    job = api.get(accepted["Location"]).json()

    assert job["state"] == "failed"
    assert job["error"].startswith("run.trec: the run was refused; nothing was imported")
    assert any(e.startswith("run.trec line 9:") and "dedup=first" in e for e in job["errors"])
    assert "/inputs/" not in job["error"] + " ".join(job["errors"])  # the client's file name
    assert not Run.objects.filter(name="dup").exists() and not RankedList.objects.exists()


def test_scoring_freezing_and_exporting_as_jobs(api, recall_v1, jobs_inline):
    upload(api, "example")
    with jobs_inline():
        scored = api.post(
            f"{URL}/evaluations/", {"run": "example", "snapshot": 1, "ks": [2]}, **ASYNC
        )
        frozen = api.post(f"{URL}/snapshots/", {"note": "v2"}, **ASYNC)
        unchanged = api.post(f"{URL}/snapshots/", {"note": "again"}, **ASYNC)
        exported = api.post(f"{URL}/snapshots/1/exports/", {"format": "trec"})

    scoring = api.get(scored["Location"]).json()
    report = api.get(scoring["result"]["api_url"]).json()
    freeze = api.get(frozen["Location"]).json()
    again = api.get(unchanged["Location"]).json()
    export = api.get(exported["Location"]).json()
    file = api.get(export["result"]["download_url"])
    streamed = api.get(f"{URL}/snapshots/1/qrels")

    assert [r.status_code for r in (scored, frozen, unchanged, exported)] == [202] * 4
    # The founding example: macro R@2 = (1/3 + 1 + 0) / 3, pooled = 2 / 5.
    assert report["aggregates"]["R@2"]["macro"] == pytest.approx(4 / 9)
    assert report["aggregates"]["R@2"]["pooled"] == pytest.approx(2 / 5)
    assert scoring["result"]["url"] == f"/c/recall-example/evaluations/{report['id']}/"
    assert freeze["result"]["snapshot"] == 2 and freeze["result"]["created"] is True
    assert again["result"]["created"] is False
    assert again["result"]["summary"].startswith("Nothing changed since v2")
    assert Snapshot.objects.filter(collection=recall_v1.collection).count() == 2
    assert file.status_code == 200
    assert b"".join(file.streaming_content) == b"".join(streamed.streaming_content)


def test_collection_import_as_a_job_refuses_with_lines_or_imports(
    recall_v1, django_user_model, jobs_inline
):
    admin = django_user_model.objects.create_user("adm")
    set_membership(collection=recall_v1.collection, user=admin, role="admin")
    client = APIClient()
    client.force_authenticate(admin)
    header = (RECALL_EXAMPLE / "bundle.jsonl").read_bytes().splitlines(keepends=True)[0]
    good = header + b'{"type": "query", "id": "D", "text": "a fourth query"}\n'
    bad = header + b'{"type": "query", "id": "E", "text": "ok"}\n{"type": "query", "text": "x"}\n'

    with jobs_inline():
        ok = client.post(
            f"{URL}/imports/",
            {"bundle": SimpleUploadedFile("more.jsonl", good)},
            format="multipart",
        )
        refused = client.post(
            f"{URL}/imports/", {"bundle": SimpleUploadedFile("bad.jsonl", bad)}, format="multipart"
        )

    done = client.get(ok["Location"]).json()
    failed = client.get(refused["Location"]).json()
    assert done["state"] == "done", done["error"]
    assert Query.objects.filter(collection=recall_v1.collection, external_id="D").exists()
    assert failed["state"] == "failed"
    assert failed["error"].startswith("Nothing was imported: 1 problem")
    assert failed["errors"][0] == "bad.jsonl, line 3: A 'query' record needs 'id'"
    assert not Query.objects.filter(external_id="E").exists()


def test_a_job_whose_worker_died_is_retried_from_the_same_file(api, settings, jobs_inline):
    settings.VERITY_JOB_STALE_SECONDS = 30
    immediate = settings.TASKS
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    accepted = upload(api, "orphan", **ASYNC)  # queued; no worker runs it
    settings.TASKS = immediate
    job = Job.objects.get(pk=accepted.json()["id"])
    # A worker took it, wrote some progress, and died a minute ago.
    Job.objects.filter(pk=job.pk).update(
        state=JobState.RUNNING, started_at=timezone.now() - timedelta(minutes=2)
    )
    JobProgress(job.key).phase("storing ranked lists", 8)

    entry = caches["jobs"].get(progress_key(job.key))
    entry["at"] -= 60
    caches["jobs"].set(progress_key(job.key), entry)

    shown = api.get(accepted["Location"]).json()
    with jobs_inline():
        retried = api.post(f"/api/jobs/{job.pk}/retry/")
    again = api.get(retried["Location"]).json()

    assert shown["state"] == "failed" and shown["stale"] and shown["can_retry"]
    assert "stopped answering" in shown["error"]
    assert retried.status_code == 202 and again["retry_of"] == job.pk
    assert again["state"] == "done"
    assert Run.objects.get(name="orphan").stages.get().n_rows == 8
    assert api.post(f"/api/jobs/{job.pk}/retry/").status_code == 409  # its input moved on


def test_a_job_is_private_to_its_author_and_its_collection(api, django_user_model, jobs_inline):
    with jobs_inline():
        accepted = upload(api, "mine", **ASYNC)
    outsider = APIClient()
    outsider.force_authenticate(django_user_model.objects.create_user("out"))

    assert outsider.get(accepted["Location"]).status_code == 404
    assert outsider.post(f"{accepted['Location']}retry/").status_code == 404
    assert Evaluation.objects.count() == 0
