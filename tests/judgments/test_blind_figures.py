"""Issue 22, item 2: blind overlap. No reviewer of a collection with several assessors can
read another assessor's grades off a figure derived from the assessments: the agreement
page refuses them as the API does (``may_see_assessments``, the one rule), and the
collection page does not link it. Fails on main: the page answered 200 to a reviewer.
"""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from judgments.models import Role
from judgments.selectors import may_see_assessments
from judgments.services import (
    queue_unjudged,
    record_assessment,
    set_adjudicator,
    set_membership,
    update_collection_settings,
)
from tests.factories import make_collection, make_item, make_query, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair():
    """Collection ``blind``, two assessors per item: ana (reviewer) gave 3, ben (reviewer)
    gave 0 to (q1, i1); eve is an evaluator, ada a reviewer granted ``can_adjudicate``."""
    collection = update_collection_settings(
        collection=make_collection(slug="blind"),
        assessors_per_item=2,
        resolution_policy="adjudicate",
        adjudicate_distance=0,
    )
    query = make_query(collection, external_id="q1")
    item = make_item(collection, external_id="i1")
    queue_unjudged(collection=collection, pairs=[(query.pk, item.pk, 1)], source="run x")
    users = {}
    for name, role in (("ana", "reviewer"), ("ben", "reviewer"), ("ada", "reviewer")):
        users[name] = make_user(name)
        set_membership(collection=collection, user=users[name], role=role)
    users["eve"] = make_user("eve")
    set_membership(collection=collection, user=users["eve"], role=Role.EVALUATOR)
    set_adjudicator(collection=collection, user=users["ada"], allowed=True)
    record_assessment(query=query, item=item, grade=3, assessor=users["ana"])
    record_assessment(query=query, item=item, grade=0, assessor=users["ben"])
    return collection, users


def page(user, path: str):
    client = Client()
    client.force_login(user)
    return client.get(path)


@pytest.mark.parametrize("name", ["ana", "ada"])
def test_the_agreement_page_refuses_reviewers_even_adjudicators(pair, name):
    collection, users = pair
    response = page(users[name], "/c/blind/agreement/")
    assert response.status_code == 403
    body = response.content.decode()
    assert "confusion" not in body.lower() and "kappa" not in body.lower()
    assert "evaluator" in body
    collection_page = page(users[name], "/c/blind/").content.decode()
    assert "/c/blind/agreement/" not in collection_page
    api = APIClient()
    api.force_authenticate(users[name])
    assert api.get("/api/collections/blind/agreement/").status_code == 403
    assert may_see_assessments(users[name], collection) is False


def test_evaluators_read_the_agreement_on_page_and_api(pair):
    collection, users = pair
    response = page(users["eve"], "/c/blind/agreement/")
    assert response.status_code == 200
    assert "/c/blind/agreement/" in page(users["eve"], "/c/blind/").content.decode()
    api = APIClient()
    api.force_authenticate(users["eve"])
    report = api.get("/api/collections/blind/agreement/").json()
    assert report["confusion"]["grades"] == [0, 1, 2, 3]
    assert may_see_assessments(users["eve"], collection) is True


def test_a_reviewer_cannot_export_one_assessors_qrels_or_the_canonical_form(pair):
    from judgments.services import freeze_snapshot

    collection, users = pair
    freeze_snapshot(collection=collection, by=users["eve"])
    api = APIClient()
    api.force_authenticate(users["ana"])
    base = "/api/collections/blind/snapshots/1/qrels"
    assert api.get(base + "?assessor=ben").status_code == 403
    assert api.get(base + "?format=jsonl").status_code == 403
    api.force_authenticate(users["eve"])
    assert api.get(base + "?assessor=ben").status_code == 200
