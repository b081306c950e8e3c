"""Judgments over HTTP: ETag / If-Match on edits, idempotent creates, errors that name
the field."""

from __future__ import annotations

import pytest

from judgments.models import Judgment


@pytest.fixture
def reviewer(api_client):
    return api_client("reviewer")


def judgment_url(world, pk=None) -> str:
    return f"/api/collections/{world.slug}/judgments/{pk or world.judgment.pk}/"


def test_a_judgment_reads_with_its_version_as_etag(api_world, reviewer):
    response = reviewer.get(judgment_url(api_world))
    assert response.status_code == 200
    assert response["ETag"] == '"1"'
    data = response.json()
    assert (data["query"], data["item"], data["grade"], data["version"]) == ("A", "x", 0, 1)
    assert data["grade_name"] == "not relevant" and data["relevant"] is False


def test_an_edit_with_the_current_etag_succeeds_and_returns_the_next(api_world, reviewer):
    response = reviewer.patch(
        judgment_url(api_world), {"grade": 1, "note": "x answers it"}, HTTP_IF_MATCH='"1"'
    )
    assert response.status_code == 200, response.json()
    assert response["ETag"] == '"2"'
    assert response.json()["grade"] == 1
    judgment = Judgment.objects.get(pk=api_world.judgment.pk)
    assert (judgment.grade, judgment.note, judgment.version) == (1, "x answers it", 2)
    assert judgment.reviewer == api_world.users["reviewer"]


def test_an_edit_with_a_stale_etag_is_412_with_the_current_value(api_world, reviewer):
    assert (
        reviewer.patch(judgment_url(api_world), {"grade": 1}, HTTP_IF_MATCH='"1"').status_code
        == 200
    )
    stale = reviewer.patch(judgment_url(api_world), {"grade": 0}, HTTP_IF_MATCH='"1"')
    assert stale.status_code == 412
    assert stale["ETag"] == '"2"'
    data = stale.json()
    assert data["current"]["grade"] == 1 and data["current"]["version"] == 2
    assert "now version 2" in data["detail"]
    assert Judgment.objects.get(pk=api_world.judgment.pk).grade == 1  # nothing overwritten


def test_an_edit_without_if_match_is_428_and_changes_nothing(api_world, reviewer):
    response = reviewer.patch(judgment_url(api_world), {"grade": 1}, format="json")
    assert response.status_code == 428
    assert "If-Match" in response.json()["detail"]
    assert Judgment.objects.get(pk=api_world.judgment.pk).version == 1


@pytest.mark.parametrize("header", ['"v1"', '"1", "2"', "one"])
def test_an_if_match_that_is_no_etag_is_400(api_world, reviewer, header):
    response = reviewer.patch(judgment_url(api_world), {"grade": 1}, HTTP_IF_MATCH=header)
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "If-Match"


def test_a_weak_etag_from_a_compressing_proxy_still_names_the_version(api_world, reviewer):
    response = reviewer.patch(judgment_url(api_world), {"note": "seen"}, HTTP_IF_MATCH='W/"1"')

    assert response.status_code == 200
    assert response["ETag"] == '"2"'
    stored = Judgment.objects.get(pk=api_world.judgment.pk)
    assert (stored.note, stored.version) == ("seen", 2)
    assert stored.reviewer.get_username() == "reviewer"


def test_removal_needs_if_match_too(api_world, reviewer):
    assert reviewer.delete(judgment_url(api_world)).status_code == 428
    assert reviewer.delete(judgment_url(api_world), HTTP_IF_MATCH='"7"').status_code == 412
    assert reviewer.delete(judgment_url(api_world), HTTP_IF_MATCH='"1"').status_code == 204
    assert not Judgment.objects.filter(pk=api_world.judgment.pk).exists()


def test_a_retried_create_with_the_same_key_returns_the_stored_judgment(api_world, reviewer):
    url = f"/api/collections/{api_world.slug}/judgments/"
    payload = {"query": "C", "item": "y", "grade": 0}
    first = reviewer.post(url, payload, format="json", HTTP_IDEMPOTENCY_KEY="k-123")
    again = reviewer.post(url, payload, format="json", HTTP_IDEMPOTENCY_KEY="k-123")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert again["Idempotent-Replayed"] == "true"
    assert first.json()["client_key"] == "k-123"
    assert Judgment.objects.filter(query__external_id="C", item__external_id="y").count() == 1


def test_the_key_may_come_in_the_body(api_world, reviewer):
    url = f"/api/collections/{api_world.slug}/judgments/"
    payload = {"query": "C", "item": "y", "grade": 0, "client_key": "body-key"}
    assert reviewer.post(url, payload, format="json").status_code == 201
    assert reviewer.post(url, payload, format="json").status_code == 200


def test_a_key_used_for_another_pair_is_refused(api_world, reviewer):
    url = f"/api/collections/{api_world.slug}/judgments/"
    reviewer.post(
        url, {"query": "C", "item": "y", "grade": 0}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    response = reviewer.post(
        url, {"query": "B", "item": "a", "grade": 0}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert response.status_code == 409
    assert "already used for another judgment" in response.json()["detail"]


def test_a_create_on_a_judged_pair_without_a_key_is_409_with_the_current_one(api_world, reviewer):
    response = reviewer.post(
        f"/api/collections/{api_world.slug}/judgments/",
        {"query": "A", "item": "x", "grade": 1},
        format="json",
    )
    assert response.status_code == 409
    data = response.json()
    assert data["current"]["version"] == 1
    assert 'If-Match: "1"' in data["detail"]


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        ({"query": "Z", "item": "y", "grade": 0}, "query", "has no query 'Z'"),
        ({"query": "C", "item": "zz", "grade": 0}, "item", "has no item 'zz'"),
        ({"query": "C", "item": "y", "grade": 3}, "grade", "3 is not on the scale"),
        ({"query": "C", "item": "y", "grade": 1.5}, "grade", "valid integer"),
        ({"query": "C", "item": "y"}, "grade", "required"),
    ],
    ids=["unknown-query", "unknown-item", "off-scale", "fraction", "missing"],
)
def test_invalid_creates_name_the_field(api_world, reviewer, payload, field, message):
    response = reviewer.post(
        f"/api/collections/{api_world.slug}/judgments/", payload, format="json"
    )
    assert response.status_code == 400
    data = response.json()
    assert [e["field"] for e in data["errors"]] == [field]
    assert message in data["errors"][0]["message"]
    assert data["detail"].startswith(f"{field}: ")


def test_a_state_refusal_is_409_saying_what_to_do(api_world, reviewer):
    # x is judged 0 for A; making C 'no answer' is refused while C has a relevant item.
    response = reviewer.patch(
        f"/api/collections/{api_world.slug}/queries/C/", {"status": "no_answer"}, format="json"
    )
    assert response.status_code == 409
    assert "regrade them first" in response.json()["detail"]


def test_lists_filter_and_paginate(api_world, reviewer):
    url = f"/api/collections/{api_world.slug}/judgments/"
    data = reviewer.get(url, {"query": "A", "page_size": 2}).json()
    assert data["count"] == 4 and len(data["results"]) == 2 and data["next"]
    assert {j["query"] for j in data["results"]} == {"A"}
    queries = reviewer.get(f"/api/collections/{api_world.slug}/queries/", {"status": "relevant"})
    assert [q["id"] for q in queries.json()["results"]] == ["A", "B", "C"]
