"""Issue 22, item 6: the Django admin's add pages. "Add collection" answered 500 (the
scale was read-only, so NULL) and "add judge" with a name the collection has already
answered 500 (IntegrityError). Both fail on main; now the collection is added with a
validated scale, a bad scale is a form error, and a second judge of the same name is a
form error with nothing stored."""

from __future__ import annotations

import json

import pytest

from judges.models import JudgeConfig
from judgments.models import Collection
from tests.factories import make_collection, make_user

pytestmark = pytest.mark.django_db

BINARY = [{"grade": 0, "name": "not relevant"}, {"grade": 1, "name": "relevant"}]


@pytest.fixture
def root(client):
    client.force_login(make_user("root", is_superuser=True, is_staff=True))
    return client


def collection_form(**fields):
    return {
        "slug": "added",
        "name": "Added",
        "description": "",
        "unit": "document",
        "scale": json.dumps(BINARY),
        "relevant_grade": 1,
        "guidelines": "",
        "pool_depth": 10,
        **fields,
    }


def test_the_add_collection_page_adds_one_with_its_scale(root):
    page = root.get("/admin/judgments/collection/add/")
    assert page.status_code == 200 and 'name="scale"' in page.content.decode()

    answer = root.post("/admin/judgments/collection/add/", collection_form())

    assert answer.status_code == 302
    added = Collection.objects.get(slug="added")
    assert (added.scale, added.relevant_grade) == (BINARY, 1)
    change = root.get(f"/admin/judgments/collection/{added.pk}/change/")
    assert change.status_code == 200 and 'name="scale"' not in change.content.decode()


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"scale": json.dumps({"grade": 0})}, "scale must be a non-empty list"),
        ({"relevant_grade": 5}, "relevant grade 5 is not on the scale [0, 1]"),
        ({"scale": json.dumps([{"grade": 1, "name": "a"}, {"grade": 0, "name": "b"}])},
         "distinct and ascending"),
    ],
)  # fmt: skip
def test_a_bad_scale_is_a_form_error(root, fields, message):
    answer = root.post("/admin/judgments/collection/add/", collection_form(**fields))
    assert answer.status_code == 200
    assert message in answer.content.decode()
    assert not Collection.objects.filter(slug="added").exists()


def test_a_second_judge_of_the_same_name_is_a_form_error(root):
    collection = make_collection(slug="judged")
    JudgeConfig.objects.create(collection=collection, name="first", model="m")
    page = root.get("/admin/judges/judgeconfig/add/")
    assert page.status_code == 200
    form = {
        "collection": collection.pk,
        "name": "first",
        "provider": "local-baseline",
        "base_url": "",
        "model": "m2",
        "api_key_env": "",
        "timeout": 60,
        "retries": 2,
        "concurrency": 4,
        "request_budget": 1000,
        "backoff": 1,
        "temperature": 0,
        "prompt_version": "umbrela-v1",
        "max_tokens": 512,
        "show_in_queue": "on",
    }
    fresh = root.post("/admin/judges/judgeconfig/add/", {**form, "name": "second"})
    assert fresh.status_code == 302  # the form is complete: only the name decides
    answer = root.post("/admin/judges/judgeconfig/add/", form)
    assert answer.status_code == 200, answer.status_code
    assert "already exists" in answer.content.decode()
    assert JudgeConfig.objects.filter(collection=collection, name="first").count() == 1


def test_the_judges_page_refuses_a_second_judge_of_the_same_name(client):
    """The 500 (IntegrityError) was here: the page's form leaves the collection out, so
    Django skipped the (collection, name) constraint."""
    from judgments.services import set_membership

    collection = make_collection(slug="judged")
    JudgeConfig.objects.create(collection=collection, name="first", model="m")
    ada = make_user("ada")
    set_membership(collection=collection, user=ada, role="admin")
    client.force_login(ada)
    form = {
        "name": "first",
        "base_url": "",
        "model": "m2",
        "api_key_env": "",
        "timeout": 60,
        "retries": 2,
        "concurrency": 4,
        "request_budget": 1000,
        "backoff": 1,
        "temperature": 0,
        "prompt_version": "umbrela-v1",
        "max_tokens": 512,
    }
    answer = client.post("/c/judged/judges/new/", form)
    assert answer.status_code == 200
    assert "Judge config with this Collection and Name already exists." in (
        answer.content.decode().replace("&#x27;", "'")
    )
    assert JudgeConfig.objects.get(collection=collection).model == "m"
    fresh = client.post("/c/judged/judges/new/", {**form, "name": "second"})
    assert fresh.status_code == 302


def test_the_admin_collection_and_membership_pages_answer_and_point_to_the_pages(root):
    """Issue 25: the admin's collection forms work, and what is read-only there points to
    the pages that change it (settings, members)."""
    from judgments.models import Membership
    from judgments.services import set_member_access

    collection = make_collection(slug="pointed")
    ana = make_user("ana")
    set_member_access(collection=collection, user=ana, role="reviewer", can_adjudicate=True)
    membership = Membership.objects.get(collection=collection, user=ana)
    add = root.get("/admin/judgments/collection/add/")
    assert add.status_code == 200
    assert "On the collection&#x27;s settings page, once it is added." in add.content.decode()
    change = root.get(f"/admin/judgments/collection/{collection.pk}/change/")
    text = change.content.decode()
    assert change.status_code == 200
    assert 'href="/c/pointed/settings/"' in text and 'href="/c/pointed/members/"' in text
    for setting in ("assessors_per_item", "pool_strategy", "pool_floor"):
        assert f'name="{setting}"' not in text  # read-only: changed on the settings page
    assert root.get("/admin/judgments/membership/").status_code == 200
    assert root.get("/admin/judgments/membership/add/").status_code == 403
    view = root.get(f"/admin/judgments/membership/{membership.pk}/change/")
    assert view.status_code == 200
    assert 'href="/c/pointed/members/"' in view.content.decode()
