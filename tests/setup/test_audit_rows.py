"""Issue 25: every setting and membership change is recorded once, whichever door it
came in by (page, API, Django admin, service), with who, before and after; a change
that changes nothing records nothing; a refused change records nothing."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from audit.models import AuditEvent
from judgments.models import Collection, Membership, Role
from judgments.services import (
    InvariantError,
    set_member_access,
    set_member_role,
    update_collection_settings,
)
from tests.factories import make_collection, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    boss = make_user("boss", is_superuser=True, is_staff=True)
    c = make_collection(slug="news")
    set_member_access(collection=c, user=boss, role=Role.ADMIN, actor=boss)
    ana = make_user("ana", email="ana@example.org")
    return c, boss, ana


def rows(c, *actions):
    found = AuditEvent.objects.filter(collection_id=c.pk).order_by("id")
    if actions:
        found = found.filter(action__in=actions)
    return [(e.action, e.actor_name, e.target, e.before, e.after) for e in found]


def test_each_member_change_is_one_row_from_the_service(world):
    c, boss, ana = world
    set_member_access(collection=c, user=ana, role="reviewer", can_adjudicate=True, actor=boss)
    set_member_access(collection=c, user=ana, role="reviewer", can_adjudicate=True, actor=boss)
    set_member_access(collection=c, user=ana, role="evaluator", can_adjudicate=False, actor=boss)
    set_member_role(collection=c, user=ana, role=None, actor=boss)
    assert rows(c)[2:] == [  # after collection.create and boss's member.add
        ("member.add", "boss", "ana", None, {"role": "reviewer", "can_adjudicate": True}),
        ("member.role", "boss", "ana", {"role": "reviewer"}, {"role": "evaluator"}),
        ("member.adjudicate", "boss", "ana", {"can_adjudicate": True}, {"can_adjudicate": False}),
        ("member.remove", "boss", "ana", {"role": "evaluator", "can_adjudicate": False}, None),
    ]


def test_the_last_admin_stays_and_the_refusal_records_nothing(world):
    c, boss, _ = world
    before = rows(c)
    with pytest.raises(
        InvariantError, match="boss is the last admin of 'news' and cannot be removed"
    ):
        set_member_role(collection=c, user=boss, role=None, actor=boss)
    with pytest.raises(InvariantError, match="cannot be made reviewer"):
        set_member_access(collection=c, user=boss, role="reviewer", actor=boss)
    assert rows(c) == before
    assert Membership.objects.get(collection=c, user=boss).role == Role.ADMIN


def test_settings_rows_hold_only_what_changed(world):
    c, boss, _ = world
    update_collection_settings(collection=c, actor=boss, name=c.name, pool_depth=25)
    update_collection_settings(collection=c, actor=boss, pool_depth=25)  # nothing changes
    update_collection_settings(
        collection=c, actor=boss, assessors_per_item=2, resolution_policy="adjudicate"
    )
    assert rows(c, "collection.settings") == [
        ("collection.settings", "boss", "news", {"pool_depth": 10}, {"pool_depth": 25}),
        (
            "collection.settings",
            "boss",
            "news",
            {"assessors_per_item": 1, "resolution_policy": "single"},
            {"assessors_per_item": 2, "resolution_policy": "adjudicate"},
        ),
    ]


def test_the_api_records_once_per_change_and_reads_and_writes_can_adjudicate(world):
    c, boss, ana = world
    api = APIClient()
    api.force_authenticate(boss)
    base = "/api/collections/news/"
    added = api.post(f"{base}members/", {"username": "ana", "role": "reviewer"}, format="json")
    assert added.status_code == 201 and added.json()["can_adjudicate"] is False
    granted = api.patch(f"{base}members/ana/", {"can_adjudicate": True}, format="json")
    assert granted.status_code == 200 and granted.json()["can_adjudicate"] is True
    assert api.get(f"{base}members/ana/").json()["can_adjudicate"] is True
    assert Membership.objects.get(collection=c, user=ana).can_adjudicate is True
    patched = api.patch(base, {"assessors_per_item": 3, "adjudicate_distance": 0}, format="json")
    assert patched.status_code == 200
    body = api.get(base).json()
    assert (body["assessors_per_item"], body["adjudicate_distance"]) == (3, 0)
    assert body["resolution_policy"] == "single"
    assert api.delete(f"{base}members/ana/").status_code == 204
    assert [r[0] for r in rows(c)][2:] == [
        "member.add",
        "member.adjudicate",
        "collection.settings",
        "member.remove",
    ]
    assert all(r[1] == "boss" for r in rows(c)[1:])


def test_the_admin_add_and_change_forms_work_and_record(client, world):
    _c, boss, _ = world
    client.force_login(boss)
    form = {
        "slug": "added",
        "name": "Added",
        "description": "",
        "unit": "chunk",
        "scale": json.dumps([{"grade": 0, "name": "no"}, {"grade": 1, "name": "yes"}]),
        "relevant_grade": 1,
        "guidelines": "",
        "pool_depth": 10,
    }
    assert client.post("/admin/judgments/collection/add/", form).status_code == 302
    added = Collection.objects.get(slug="added")
    assert added.unit == "chunk"
    assert Membership.objects.get(collection=added, user=boss).role == Role.ADMIN
    assert [r[0] for r in rows(added)] == ["collection.create", "member.add"]
    page = client.get(f"/admin/judgments/collection/{added.pk}/change/").content.decode()
    assert 'href="/c/added/settings/"' in page and 'href="/c/added/members/"' in page
    assert 'name="assessors_per_item"' not in page
    change = {**form, "name": "Renamed", "pool_depth": 30}
    assert client.post(f"/admin/judgments/collection/{added.pk}/change/", change).status_code == 302
    assert rows(added, "collection.settings") == [
        (
            "collection.settings",
            "boss",
            "added",
            {"name": "Added", "pool_depth": 10},
            {"name": "Renamed", "pool_depth": 30},
        )
    ]
    bad = client.post("/admin/judgments/collection/add/", {**form, "slug": "new"})
    assert bad.status_code == 200 and "names a page of Verity" in bad.content.decode()
    members = client.get("/admin/judgments/membership/").content.decode()
    assert 'href="/c/added/members/"' in members
    assert client.get("/admin/judgments/membership/add/").status_code == 403
