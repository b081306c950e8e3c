"""Issue 25, item 1: /c/new/ makes a collection in the browser: its creator its admin,
its review settings applied, and its start files (TREC or a JSONL bundle) imported by a
job, all or nothing, a refusal naming file and line."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from audit.models import AuditEvent
from jobs.models import Job, JobState
from judgments.models import Assessment, Collection, Membership, ReviewTask, Role
from tests.factories import make_collection, make_user

pytestmark = pytest.mark.django_db

QRELS = b"q1 0 d1 3\nq1 0 d2 0\nq1 0 d3 -1\nq2 Q0 d4 1\nq2 Q0 d5 -1\n"
TOPICS = b"q1\tcost of a vaccine\nq2\tside effects\n"
DOCS = b"d1\tVaccines cost ...\nd2\tWeather\nd3\tPrices\nd4\tEffects\nd9\tunnamed\n"
DL_SCALE = "0 irrelevant\n1 related\n2 highly relevant\n3 perfectly relevant"


def form(**fields):
    return {
        "name": "DL sample",
        "slug": "dl-sample",
        "unit": "document",
        "scale": DL_SCALE,
        "relevant_grade": 2,
        "description": "MS MARCO passages",
        "guidelines": "**Grade** by the *passage* alone.",
        "pool_depth": 10,
        "assessors_per_item": 1,
        "resolution_policy": "single",
        "adjudicate_distance": 1,
        "start": "",
        **fields,
    }


@pytest.fixture
def boss(client):
    user = make_user("boss", is_superuser=True, email="boss@example.org")
    client.force_login(user)
    return user


def test_only_those_the_setting_allows_may_create(client, settings):
    alice = make_user("alice", is_staff=True)
    client.force_login(alice)
    assert client.get("/c/new/").status_code == 403
    assert client.post("/c/new/", form()).status_code == 403
    assert "New collection" not in client.get("/").content.decode()
    settings.VERITY_COLLECTION_CREATORS = "staff"
    assert client.get("/c/new/").status_code == 200
    assert "New collection" in client.get("/").content.decode()
    client.force_login(make_user("bob"))
    assert client.get("/c/new/").status_code == 403
    settings.VERITY_COLLECTION_CREATORS = "everyone"
    assert client.get("/c/new/").status_code == 200


def test_an_empty_collection_is_made_now_with_its_creator_as_admin(client, boss):
    answer = client.post("/c/new/", form(assessors_per_item=2, resolution_policy="adjudicate"))
    assert answer.status_code == 302 and answer["Location"] == "/c/dl-sample/"
    c = Collection.objects.get(slug="dl-sample")
    assert c.scale == [
        {"grade": 0, "name": "irrelevant"},
        {"grade": 1, "name": "related"},
        {"grade": 2, "name": "highly relevant"},
        {"grade": 3, "name": "perfectly relevant"},
    ]
    assert (c.relevant_grade, c.assessors_per_item, c.resolution_policy) == (2, 2, "adjudicate")
    assert Membership.objects.get(collection=c, user=boss).role == Role.ADMIN
    rows = AuditEvent.objects.filter(collection_id=c.pk).order_by("id")
    actions = list(rows.values_list("action", flat=True))
    assert actions == ["collection.create", "member.add", "collection.settings"]
    page = client.get("/c/dl-sample/").content.decode()
    assert "<strong>Grade</strong> by the <em>passage</em> alone." in page
    assert 'href="/c/dl-sample/settings/"' in page and 'href="/c/dl-sample/members/"' in page


@pytest.mark.parametrize(
    "fields, field, message",
    [
        ({"scale": "0 no\nyes"}, "scale", "line 2: 'yes' must be a grade"),
        ({"relevant_grade": 5}, "scale", "relevant grade 5 is not on the scale [0, 1, 2, 3]"),
        ({"relevant_grade": 0}, "scale", "is the lowest grade"),
        ({"slug": "new"}, "slug", "names a page of Verity"),
        ({"slug": "a b"}, "slug", "Enter a valid"),
        ({"start": "trec"}, "qrels", "choose the TREC qrels file"),
        ({"start": "bundle"}, "bundle", "choose the JSONL bundle file"),
    ],
)
def test_a_bad_form_is_refused_with_the_field_named(client, boss, fields, field, message):
    answer = client.post("/c/new/", form(**fields))
    assert answer.status_code == 400
    assert message in " ".join(answer.context["form"].errors[field])
    assert not Collection.objects.exists()


def test_a_taken_slug_is_a_form_error(client, boss):
    make_collection(slug="dl-sample")
    answer = client.post("/c/new/", form())
    assert answer.status_code == 400
    assert "exists already" in answer.context["form"].errors["slug"][0]


def trec_files(qrels=QRELS):
    return {
        "qrels": SimpleUploadedFile("2019qrels-pass.txt", qrels),
        "topics": SimpleUploadedFile("msmarco-test2019-queries.tsv", TOPICS),
        "docs": SimpleUploadedFile("collection.tsv", DOCS),
    }


def test_trec_files_are_imported_by_a_job_then_overlap_starts(client, boss, jobs_inline):
    with jobs_inline():
        answer = client.post(
            "/c/new/",
            form(
                start="trec", assessors_per_item=2, resolution_policy="adjudicate", **trec_files()
            ),
        )
    assert answer.status_code == 302
    job = Job.objects.get()
    assert answer["Location"] == f"/jobs/{job.pk}/"
    job.refresh_from_db()
    assert job.state == JobState.DONE, job.error
    c = Collection.objects.get(slug="dl-sample")
    assert job.collection_id == c.pk
    assert c.queries.count() == 2 and c.items.filter(placeholder=False).count() == 4
    assert c.items.filter(placeholder=True).count() == 1  # d5: named, no text
    # d3 and d5 (-1) queued, each given its second slot when overlap started
    assert ReviewTask.objects.filter(collection=c).count() == 4
    assert Assessment.objects.filter(collection=c, assessor_name="import").count() == 3
    assert Membership.objects.get(collection=c, user=boss).role == Role.ADMIN
    assert c.queries.get(external_id="q1").status == "relevant"  # grade 3 ≥ 2
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Created collection &#x27;dl-sample&#x27;" in page


def test_a_refused_file_leaves_no_collection_and_names_file_and_line(client, boss, jobs_inline):
    with jobs_inline():
        client.post("/c/new/", form(start="trec", **trec_files(QRELS + b"q3 0 d6 2\nq1 x\n")))
    job = Job.objects.get()
    assert job.state == JobState.FAILED
    assert not Collection.objects.exists()
    assert not AuditEvent.objects.filter(action="collection.create").exists()
    text = job.error + "\n" + "\n".join(job.errors)
    assert "2019qrels-pass.txt, line 7" in text


def test_a_bundle_is_imported_through_import_collection(client, boss, jobs_inline):
    scale = [{"grade": g, "name": n} for g, n in enumerate(
        ["irrelevant", "related", "highly relevant", "perfectly relevant"])]  # fmt: skip
    lines = [
        {
            "type": "collection",
            "slug": "elsewhere",
            "name": "Old name",
            "unit": "document",
            "relevant_grade": 2,
            "scale": scale,
        },
        {"type": "query", "id": "q1", "text": "cost"},
        {"type": "item", "id": "d1", "text": "Vaccines cost"},
        {"type": "judgment", "query": "q1", "item": "d1", "grade": 3},
    ]
    bundle = SimpleUploadedFile("start.jsonl", "\n".join(json.dumps(x) for x in lines).encode())
    with jobs_inline():
        client.post("/c/new/", form(start="bundle", bundle=bundle))
    job = Job.objects.get()
    assert job.state == JobState.DONE, (job.error, job.errors)
    c = Collection.objects.get(slug="dl-sample")  # the form's slug and name win
    assert (c.name, c.queries.get().external_id) == ("DL sample", "q1")
    assert c.queries.get().judgments.get().grade == 3
    assert Membership.objects.get(collection=c, user=boss).role == Role.ADMIN


def test_a_bundle_whose_scale_differs_is_refused(client, boss, jobs_inline):
    lines = [
        {"type": "collection", "slug": "x", "name": "X", "relevant_grade": 1,
         "scale": [{"grade": 0, "name": "no"}, {"grade": 1, "name": "yes"}]},
        {"type": "query", "id": "q1", "text": "cost"},
    ]  # fmt: skip
    bundle = SimpleUploadedFile("other.jsonl", "\n".join(json.dumps(x) for x in lines).encode())
    with jobs_inline():
        client.post("/c/new/", form(start="bundle", bundle=bundle))
    job = Job.objects.get()
    assert job.state == JobState.FAILED
    assert "other.jsonl, line 1" in "\n".join(job.errors)
    assert not Collection.objects.exists()


def test_a_bundle_s_options_make_placeholders_and_statuses(client, boss, jobs_inline):
    lines = [
        {"type": "collection", "slug": "x", "name": "X", "relevant_grade": 2,
         "scale": [{"grade": g, "name": n} for g, n in enumerate(
             ["irrelevant", "related", "highly relevant", "perfectly relevant"])]},
        {"type": "query", "id": "q1", "text": "cost"},
        {"type": "judgment", "query": "q1", "item": "d7", "grade": 2},
    ]  # fmt: skip
    body = "\n".join(json.dumps(x) for x in lines).encode()
    with jobs_inline():
        client.post("/c/new/", form(start="bundle", bundle=SimpleUploadedFile("b.jsonl", body)))
    refused = Job.objects.get()
    assert refused.state == JobState.FAILED and "b.jsonl, line 3" in "\n".join(refused.errors)
    with jobs_inline():
        client.post(
            "/c/new/",
            form(start="bundle", bundle=SimpleUploadedFile("b.jsonl", body),
                 create_missing_items="on", set_status="on"),
        )  # fmt: skip
    done = Job.objects.exclude(pk=refused.pk).get()
    assert done.state == JobState.DONE, done.errors
    c = Collection.objects.get(slug="dl-sample")
    assert c.items.get().placeholder is True
    assert c.queries.get().status == "relevant"


def test_a_slug_taken_while_the_job_waited_fails_it_in_words(client, boss, jobs_inline):
    with jobs_inline():  # the job runs when the block ends: after the other collection
        client.post("/c/new/", form(start="trec", **trec_files()))
        make_collection(slug="dl-sample", name="Someone else's")
    job = Job.objects.get()
    assert job.state == JobState.FAILED
    assert "a collection 'dl-sample' was made since this job was queued" in job.error
    assert Collection.objects.get(slug="dl-sample").name == "Someone else's"
