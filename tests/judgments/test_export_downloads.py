"""Downloads from the pages: a snapshot's qrels and bundle, the collection's bundle.

Who may: evaluators and admins for qrels (the REST qrels export's rule; a plain reviewer
of a several-assessor collection gets no grades of anyone), admins for bundles. Every
download is a POST that writes its audit row; large ones and bundles are jobs whose
file a GET fetches.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from jobs.models import Job, JobKind, JobState
from judgments.models import Collection
from judgments.selectors import snapshot_canonical_lines
from judgments.services import freeze_snapshot, set_membership
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def v1(rt_world):
    snapshot, _ = freeze_snapshot(collection=rt_world, by=None)
    return snapshot


def client_as(collection: Collection, username: str, role: str | None) -> Client:
    user = make_user(username)
    if role:
        set_membership(collection=collection, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


def download(client: Client, collection: Collection, what: str, number: int = 1):
    url = reverse("judgments:snapshot-download", args=[collection.slug, number])
    return client.post(url, {"what": what})


def body(response) -> bytes:
    return b"".join(response.streaming_content)


def test_an_evaluator_downloads_each_form_of_a_version(v1):
    c = v1.collection
    client = client_as(c, "eva", "evaluator")

    trec = download(client, c, "trec")
    with_unjudged = download(client, c, "trec-unjudged")
    jsonl = download(client, c, "jsonl")
    ben = download(client, c, "assessor:bén")

    assert trec["Content-Disposition"] == 'attachment; filename="rt-v1.qrels"'
    assert body(trec).decode() == "Q-2 0 plain 0\nQ/1 0 d/1?x=ü 3\nQ/1 0 😀 2\n"
    lines = body(with_unjudged).decode().splitlines()
    assert sorted(line for line in lines if line.endswith(" -1")) == [
        "Q-2 0 back\\slash -1",
        'Q-2 0 quote"d -1',
        "Q/1 0 日本語-文書 -1",  # awaiting adjudication: unjudged in the snapshot
    ]
    assert body(jsonl) == b"".join(snapshot_canonical_lines(v1))
    assert body(ben).decode() == "Q/1 0 d/1?x=ü 3\nQ/1 0 日本語-文書 2\nQ/1 0 😀 3\n"
    events = AuditEvent.objects.filter(action="export.qrels").order_by("pk")
    assert [(e.actor_name, e.collection_slug, e.target) for e in events] == [
        ("eva", "rt", "v1")
    ] * 4
    assert [e.detail for e in events] == [
        {"format": "trec", "with_unjudged": False, "as_job": False},
        {"format": "trec", "with_unjudged": True, "as_job": False},
        {"format": "jsonl", "with_unjudged": False, "as_job": False},
        {"format": "trec", "with_unjudged": False, "as_job": False, "assessor": "bén"},
    ]


def test_the_page_offers_each_assessors_qrels_to_evaluators_only(v1):
    c = v1.collection
    url = reverse("judgments:snapshots", args=[c.slug])
    page = client_as(c, "eva", "evaluator").get(url).content.decode()
    assert 'value="assessor:bén"' in page and 'value="assessor:ext Ω"' in page
    assert 'value="bundle"' not in page  # admins only
    assert 'value="bundle"' in client_as(c, "adm", "admin").get(url).content.decode()
    reviewer_page = client_as(c, "rev", "reviewer").get(url).content.decode()
    assert "download-form" not in reviewer_page


@pytest.mark.parametrize("what", ["trec", "trec-unjudged", "jsonl", "assessor:ana", "bundle"])
def test_a_plain_reviewer_gets_no_download(v1, what):
    c = v1.collection
    response = download(client_as(c, "rev", "reviewer"), c, what)
    assert response.status_code == 403
    assert not AuditEvent.objects.filter(action__startswith="export.").exists()
    assert not Job.objects.exists()


def test_an_evaluator_gets_no_bundle_and_a_non_member_nothing(v1):
    c = v1.collection
    assert download(client_as(c, "eva", "evaluator"), c, "bundle").status_code == 403
    bundle = reverse("judgments:collection-bundle", args=[c.slug])
    assert client_as(c, "eva2", "evaluator").post(bundle).status_code == 403
    assert download(client_as(c, "stranger", None), c, "trec").status_code == 404


def test_downloads_are_posts_only(v1):
    c = v1.collection
    client = client_as(c, "adm", "admin")
    assert client.get(reverse("judgments:snapshot-download", args=[c.slug, 1])).status_code == 405
    assert client.get(reverse("judgments:collection-bundle", args=[c.slug])).status_code == 405


def test_an_unknown_assessor_or_version_is_said_plainly(v1):
    c = v1.collection
    client = client_as(c, "eva", "evaluator")
    response = download(client, c, "assessor:zoe")
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "has no assessments by &#x27;zoe&#x27;" in page
    assert download(client, c, "trec", number=9).status_code == 404


def test_a_large_version_is_exported_by_a_job(v1, settings, jobs_inline):
    settings.VERITY_INLINE_MAX_ROWS = 2
    c = v1.collection
    client = client_as(c, "eva", "evaluator")
    with jobs_inline():
        response = download(client, c, "assessor:bén")
    job = Job.objects.get(kind=JobKind.QRELS_EXPORT)
    assert response["Location"] == reverse("jobs:job", args=[job.pk])
    job.refresh_from_db()
    assert job.state == JobState.DONE, job.error
    before = AuditEvent.objects.count()
    file = client.get(reverse("jobs-api:job-file", args=[job.pk]))
    assert b"".join(file.streaming_content).decode() == (
        "Q/1 0 d/1?x=ü 3\nQ/1 0 日本語-文書 2\nQ/1 0 😀 3\n"
    )
    assert AuditEvent.objects.count() == before  # fetching the file writes nothing
    event = AuditEvent.objects.get(action="export.qrels")
    assert event.detail == {
        "format": "trec",
        "with_unjudged": False,
        "as_job": True,
        "assessor": "bén",
    }


def test_an_admin_exports_the_bundle_live_and_of_a_version(v1, jobs_inline, run_command):
    c = v1.collection
    client = client_as(c, "adm", "admin")
    with jobs_inline():
        live = client.post(reverse("judgments:collection-bundle", args=[c.slug]))
        of_v1 = download(client, c, "bundle")
    jobs = list(Job.objects.filter(kind=JobKind.BUNDLE_EXPORT).order_by("pk"))
    assert [live["Location"], of_v1["Location"]] == [reverse("jobs:job", args=[j.pk]) for j in jobs]
    files = []
    for job in jobs:
        job.refresh_from_db()
        assert job.state == JobState.DONE, job.error
        response = client.get(reverse("jobs-api:job-file", args=[job.pk]))
        files.append(b"".join(response.streaming_content))
    assert files[0] == run_command("export_collection", "rt")[0].encode()
    assert files[1] == run_command("export_collection", "rt", "--snapshot", "1")[0].encode()
    events = AuditEvent.objects.filter(action="export.bundle").order_by("pk")
    assert [(e.actor_name, e.target) for e in events] == [("adm", "live"), ("adm", "v1")]
    page = client.get(reverse("jobs:job", args=[jobs[0].pk])).content.decode()
    assert "rt.bundle.jsonl" in page


def test_a_removed_admin_cannot_fetch_the_bundle_any_more(v1, jobs_inline):
    c = v1.collection
    client = client_as(c, "adm", "admin")
    with jobs_inline():
        client.post(reverse("judgments:collection-bundle", args=[c.slug]))
    job = Job.objects.get(kind=JobKind.BUNDLE_EXPORT)
    set_membership(collection=c, user=job.created_by, role="evaluator")
    assert client.get(reverse("jobs-api:job-file", args=[job.pk])).status_code == 404


def test_the_collection_page_bundle_can_carry_the_runs(db, jobs_inline, run_command):
    from tests.judgments.conftest import RECALL_EXAMPLE

    run_command("import_collection", RECALL_EXAMPLE / "bundle.jsonl")
    run_command("import_run", "recall-example", RECALL_EXAMPLE / "run.trec", "--name", "founding")
    c = Collection.objects.get(slug="recall-example")
    client = client_as(c, "adm", "admin")
    page = client.get(reverse("judgments:collection", args=[c.slug])).content.decode()
    assert 'name="runs"' in page
    with jobs_inline():
        client.post(reverse("judgments:collection-bundle", args=[c.slug]), {"runs": "1"})
    job = Job.objects.get(kind=JobKind.BUNDLE_EXPORT)
    job.refresh_from_db()
    assert job.state == JobState.DONE, job.error
    file = client.get(reverse("jobs-api:job-file", args=[job.pk]))
    expected = run_command("export_collection", "recall-example", "--runs")[0].encode()
    assert b"".join(file.streaming_content) == expected
    assert b'"type": "run"' in expected
    assert AuditEvent.objects.get(action="export.bundle").detail == {"snapshot": None, "runs": True}
