"""Another collection's objects answer 404 and never appear in a list."""

from __future__ import annotations

import pytest


def slugs(response) -> list[str]:
    return [c["slug"] for c in response.json()["results"]]


def test_each_user_lists_only_the_collections_they_are_a_member_of(api_world, api_client):
    assert slugs(api_client("stranger").get("/api/collections/")) == ["elsewhere"]
    reviewer = api_client("reviewer").get("/api/collections/").json()["results"]
    assert [(c["slug"], c["role"]) for c in reviewer] == [("recall-example", "reviewer")]
    everything = api_client("superuser").get("/api/collections/").json()["results"]
    assert [(c["slug"], c["role"]) for c in everything] == [
        ("elsewhere", "admin"),
        ("recall-example", "admin"),
    ]


@pytest.mark.parametrize(
    "path",
    [
        "judgments/{judgment}/",
        "queries/E1/",
        "items/e-doc/",
        "members/stranger/",
    ],
)
def test_objects_of_another_collection_are_not_found_through_this_one(api_world, api_client, path):
    url = f"/api/collections/{api_world.slug}/" + path.format(
        judgment=api_world.foreign["judgment"].pk
    )
    response = api_client("superuser").get(url)
    assert response.status_code == 404
    assert response.json()["detail"].endswith("not found in this collection.")


def test_an_edit_through_another_collection_changes_nothing(api_world, api_client):
    foreign = api_world.foreign["judgment"]
    response = api_client("admin").patch(
        f"/api/collections/{api_world.slug}/judgments/{foreign.pk}/",
        {"grade": 0},
        HTTP_IF_MATCH='"1"',
    )
    assert response.status_code == 404
    foreign.refresh_from_db()
    assert (foreign.grade, foreign.version) == (1, 1)


def test_a_body_cannot_name_another_collections_query(api_world, api_client):
    response = api_client("admin").post(
        f"/api/collections/{api_world.slug}/judgments/",
        {"query": "E1", "item": "e-doc", "grade": 1},
    )
    assert response.status_code == 400
    assert {e["field"] for e in response.json()["errors"]} == {"query", "item"}


@pytest.mark.parametrize("resource", ["judgments", "queries", "items", "tasks", "members"])
def test_lists_hold_only_this_collections_objects(api_world, api_client, resource):
    results = (
        api_client("superuser")
        .get(f"/api/collections/{api_world.slug}/{resource}/", {"page_size": 1000})
        .json()["results"]
    )
    assert results
    ids = {str(r.get("id", r.get("username"))) for r in results}
    assert not ids & {"E1", "e-doc", "stranger", str(api_world.foreign["judgment"].pk)}


def test_a_stranger_cannot_learn_whether_a_collection_exists(api_world, api_client):
    known = api_client("stranger").get(f"/api/collections/{api_world.slug}/")
    unknown = api_client("stranger").get("/api/collections/no-such-thing/")
    assert known.status_code == unknown.status_code == 404
    assert known.json()["detail"].replace(api_world.slug, "X") == unknown.json()["detail"].replace(
        "no-such-thing", "X"
    )
