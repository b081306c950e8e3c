"""Work done inside a request is bounded by work, not bytes: a unit mapping is always a
job (a 1M-line mapping imported inline ran into gunicorn's 30 s timeout); a run upload is
imported in the request only when it has few ranked ids and few stages, however few its
bytes (a 97 KB JSON Lines run with 5,000 stages took 30 s)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from jobs.models import Job, JobKind, JobState
from judgments.services import set_membership
from scoring.models import Run, UnitMapping
from tests.scoring.conftest import RECALL_EXAMPLE

pytestmark = pytest.mark.django_db

URL = "/api/collections/recall-example"
RUN = (RECALL_EXAMPLE / "run.trec").read_bytes()  # 8 lines, 1 stage


@pytest.fixture
def api(recall_v1, django_user_model, job_dir) -> APIClient:
    user = django_user_model.objects.create_user("eve")
    set_membership(collection=recall_v1.collection, user=user, role="evaluator")
    client = APIClient()
    client.force_authenticate(user)
    return client


def post_run(api, name: str, filename: str, content: bytes):
    return api.post(
        f"{URL}/runs/",
        {"file": SimpleUploadedFile(filename, content), "name": name},
        format="multipart",
    )


def test_a_unit_mapping_always_goes_through_a_job(api):
    response = api.post(
        f"{URL}/mappings/",
        {"file": SimpleUploadedFile("m.tsv", b"a#1\ta\n"), "note": "tiny"},
        format="multipart",
    )

    assert response.status_code == 202, response.content[:300]
    job = Job.objects.get(pk=response.json()["id"])
    assert (job.kind, job.state) == (JobKind.MAPPING_IMPORT, JobState.QUEUED)
    assert response["Location"] == f"/api/jobs/{job.pk}/"
    assert not UnitMapping.objects.filter(note="tiny").exists()  # nothing in the request


def test_a_few_kilobytes_of_jsonl_with_5000_stages_is_a_job(api):
    line = {"query": "A", "stages": {f"s{n}": ["a"] for n in range(5000)}}
    content = (json.dumps(line) + "\n").encode()
    assert len(content) < 100_000

    response = post_run(api, "stages", "many.jsonl", content)

    assert response.status_code == 202, response.content[:300]
    assert not Run.objects.filter(name="stages").exists()
    assert Job.objects.get(pk=response.json()["id"]).params["name"] == "stages"


def test_a_run_over_the_id_bound_is_a_job_under_it_inline(api, settings):
    inline = post_run(api, "small", "run.trec", RUN)
    assert inline.status_code == 201, inline.content[:300]

    settings.VERITY_INLINE_MAX_IDS = 5  # the founding run's 8 lines are now too many
    queued = post_run(api, "many-ids", "run.trec", RUN)
    assert queued.status_code == 202
    assert not Run.objects.filter(name="many-ids").exists()


def test_a_jsonl_run_within_the_bounds_is_still_imported_inline(api):
    lines = [{"query": q, "stages": {"first": ["a", "b"], "second": ["a"]}} for q in "AB"]
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()

    response = post_run(api, "two-stages", "two.jsonl", content)

    assert response.status_code == 201, response.content[:300]
    assert [s["name"] for s in response.json()["stages"]] == ["first", "second"]
