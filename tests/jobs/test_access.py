"""Issue 22, item 3: jobs check the caller's role now. Reading, retrying a job and
fetching its file need the role its kind needs in its collection, held at the time of
the request (404 otherwise, as for a job that does not exist); the worker checks the
requester's role again when it starts the job. Fails on main: a demoted evaluator retried
a failed import (202), a removed member still read their job (200)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from jobs.models import Job, JobKind, JobState
from jobs.selectors import ROLE_FOR_KIND, ROLES_AT_LEAST, job_for, may_manage_job
from judgments.models import ROLE_RANK, Role
from judgments.services import set_membership
from scoring.models import Run
from tests.scoring.conftest import RECALL_EXAMPLE

pytestmark = pytest.mark.django_db

RUN = (RECALL_EXAMPLE / "run.trec").read_bytes()
URL = "/api/collections/recall-example"
ASYNC = {"HTTP_PREFER": "respond-async"}
DUMMY = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}


@pytest.fixture
def eve(recall_v1, django_user_model):
    user = django_user_model.objects.create_user("eve")
    set_membership(collection=recall_v1.collection, user=user, role="evaluator")
    return user


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def upload(client, name: str):
    data = {"file": SimpleUploadedFile("run.trec", RUN), "name": name}
    return client.post(f"{URL}/runs/", data, format="multipart", **ASYNC)


def failed_import(client, settings) -> Job:
    """An import queued (no worker ran it) and then failed: it can be retried."""
    kept = settings.TASKS
    settings.TASKS = DUMMY
    accepted = upload(client, "killed")
    settings.TASKS = kept
    job = Job.objects.get(pk=accepted.json()["id"])
    Job.objects.filter(pk=job.pk).update(state=JobState.FAILED, error="killed")
    return job


@pytest.mark.parametrize("role", ["reviewer", None], ids=["demoted", "removed"])
def test_a_demoted_or_removed_author_can_neither_read_nor_retry_their_job(
    eve, recall_v1, settings, job_dir, role
):
    api = client_of(eve)
    job = failed_import(api, settings)
    assert api.get(f"/api/jobs/{job.pk}/").json()["can_retry"] is True

    set_membership(collection=recall_v1.collection, user=eve, role=role)

    assert api.get(f"/api/jobs/{job.pk}/").status_code == 404
    assert api.post(f"/api/jobs/{job.pk}/retry/").status_code == 404
    assert api.get(f"/api/jobs/{job.pk}/file").status_code == 404
    page = APIClient()
    page.force_login(eve)
    assert page.get(f"/jobs/{job.pk}/").status_code == 404
    assert page.post(f"/jobs/{job.pk}/retry/").status_code == 404
    assert Job.objects.count() == 1 and not Run.objects.exists()
    assert job_for(eve, job.pk) is None and may_manage_job(eve, job) is False


def test_the_job_comes_back_with_the_role(eve, recall_v1, settings, job_dir, jobs_inline):
    api = client_of(eve)
    job = failed_import(api, settings)
    set_membership(collection=recall_v1.collection, user=eve, role="reviewer")
    set_membership(collection=recall_v1.collection, user=eve, role="admin")
    with jobs_inline():
        retried = api.post(f"/api/jobs/{job.pk}/retry/")
    assert retried.status_code == 202
    assert api.get(retried["Location"]).json()["state"] == "done"
    assert Run.objects.get(name="killed").stages.get().n_rows == 8


def test_another_evaluator_reads_the_job_but_only_its_author_retries_it(
    eve, recall_v1, settings, job_dir, django_user_model
):
    job = failed_import(client_of(eve), settings)
    eric = django_user_model.objects.create_user("eric")
    set_membership(collection=recall_v1.collection, user=eric, role="evaluator")
    carl = django_user_model.objects.create_user("carl")
    set_membership(collection=recall_v1.collection, user=carl, role="reviewer")
    assert client_of(eric).get(f"/api/jobs/{job.pk}/").status_code == 200
    assert client_of(eric).post(f"/api/jobs/{job.pk}/retry/").status_code == 403
    assert client_of(carl).get(f"/api/jobs/{job.pk}/").status_code == 404


def test_an_evaluator_does_not_see_an_admins_collection_import(eve, recall_v1, django_user_model):
    ada = django_user_model.objects.create_user("ada")
    set_membership(collection=recall_v1.collection, user=ada, role="admin")
    job = Job.objects.create(
        kind=JobKind.COLLECTION_IMPORT,
        label="import",
        collection=recall_v1.collection,
        created_by=ada,
        task_path="x",
    )
    assert client_of(ada).get(f"/api/jobs/{job.pk}/").status_code == 200
    assert client_of(eve).get(f"/api/jobs/{job.pk}/").status_code == 404


def test_the_worker_refuses_a_job_whose_requester_was_demoted_since(eve, recall_v1, jobs_inline):
    api = client_of(eve)
    with jobs_inline():  # the worker runs the job when the block ends, after the demotion
        accepted = upload(api, "late")
        set_membership(collection=recall_v1.collection, user=eve, role="reviewer")
    job = Job.objects.get(pk=accepted.json()["id"])
    assert job.state == JobState.FAILED
    assert job.error.startswith(
        "Not run: eve does not hold the evaluator role in collection 'recall-example' any "
        "more (removed or demoted since queuing this job)."
    )
    assert not Run.objects.filter(name="late").exists()


def test_every_kind_names_a_role_and_the_ranks_agree_with_judgments():
    assert set(ROLE_FOR_KIND) == set(JobKind.values)
    assert set(ROLE_FOR_KIND.values()) <= set(Role.values)
    for role in Role.values:
        expected = {r for r in Role.values if ROLE_RANK[Role(r)] >= ROLE_RANK[Role(role)]}
        assert set(ROLES_AT_LEAST[role]) == expected
