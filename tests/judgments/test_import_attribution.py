"""Issue 22, item 4: imports cannot forge attribution or tell which usernames exist.
Imported labels are recorded as imported by the importer (history ``changed_by``); a
named reviewer who is a member of the collection stays the judgment's reviewer; any other
name (a user outside the collection, the superuser, or nobody at all) is kept as an
external assessor's name (``Judgment.reviewer_name``), never as a user account. Fails on
main: the judgment and its history named 'stranger' and 'root' as their authors, and
'nobody' was refused with "no user has that username"."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from judgments.formats.jsonl import parse_judgments
from judgments.models import Judgment, JudgmentChange
from judgments.services import import_collection_data, set_membership
from tests.factories import make_collection, make_item, make_query, make_user

pytestmark = pytest.mark.django_db


def bundle(*reviewers: str | None) -> bytes:
    return "".join(
        json.dumps(
            {"type": "judgment", "query": "q1", "item": f"i{n}", "grade": 1, "reviewer": who}
        )
        + "\n"
        for n, who in enumerate(reviewers, 1)
    ).encode()


@pytest.fixture
def world():
    collection = make_collection(slug="attrib")
    query = make_query(collection, external_id="q1")
    for n in range(1, 6):
        make_item(collection, external_id=f"i{n}")
    ada, ben = make_user("ada"), make_user("ben")
    make_user("stranger")
    make_user("root", is_superuser=True)
    set_membership(collection=collection, user=ada, role="admin")
    set_membership(collection=collection, user=ben, role="reviewer")
    return collection, query, ada, ben


def test_names_outside_the_collection_are_names_and_the_importer_is_the_author(world):
    _collection, query, ada, ben = world
    data, problems = parse_judgments(bundle("stranger", "root", "nobody", "ben", None), "j.jsonl")
    assert problems == []

    import_collection_data(data=data, collection_slug="attrib", by=ada)

    got = {
        j.item.external_id: (j.reviewer, j.reviewer_name, j.who)
        for j in Judgment.objects.filter(query=query).select_related("item", "reviewer")
    }
    assert got == {
        "i1": (None, "stranger", "stranger"),
        "i2": (None, "root", "root"),
        "i3": (None, "nobody", "nobody"),
        "i4": (ben, "", "ben"),
        "i5": (None, "", ""),
    }
    history = JudgmentChange.objects.filter(query=query)
    assert history.count() == 5
    assert {c.changed_by for c in history} == {ada}
    assert {c.source for c in history} == {"import"}


def test_the_api_import_neither_attributes_nor_tells_which_users_exist(
    world, jobs_inline, settings
):
    collection, _query, ada, _ben = world
    api = APIClient()
    api.force_authenticate(ada)
    answers = {}
    head = (
        json.dumps(
            {
                "type": "collection",
                "slug": "attrib",
                "name": collection.name,
                "unit": collection.unit,
                "scale": collection.scale,
                "relevant_grade": collection.relevant_grade,
            }
        )
        + "\n"
    )
    for who, item in (("stranger", "i1"), ("nobody", "i2")):
        body = json.dumps(
            {"type": "judgment", "query": "q1", "item": item, "grade": 1, "reviewer": who}
        )
        with jobs_inline():
            accepted = api.post(
                "/api/collections/attrib/imports/",
                {"bundle": SimpleUploadedFile("b.jsonl", (head + body + "\n").encode())},
                format="multipart",
            )
        job = api.get(accepted["Location"]).json()
        answers[who] = (job["state"], job["error"], job["errors"])
    assert answers["stranger"] == answers["nobody"] == ("done", "", [])
    listed = api.get("/api/collections/attrib/judgments/?query=q1").json()["results"]
    assert sorted(j["reviewer"] for j in listed) == ["nobody", "stranger"]
    assert set(JudgmentChange.objects.values_list("changed_by__username", flat=True)) == {"ada"}


def test_a_person_who_grades_an_imported_label_takes_it_over(world):
    from judgments.services import record_judgment

    _collection, query, ada, ben = world
    data, _ = parse_judgments(bundle("stranger"), "j.jsonl")
    import_collection_data(data=data, collection_slug="attrib", by=ada)
    judgment = Judgment.objects.get(query=query)
    record_judgment(query=query, item=judgment.item, grade=0, reviewer=ben, expected_version=1)
    judgment.refresh_from_db()
    assert (judgment.reviewer, judgment.reviewer_name, judgment.grade) == (ben, "", 0)
