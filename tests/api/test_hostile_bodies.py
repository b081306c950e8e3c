"""Hostile JSON bodies answer 400 on every JSON write endpoint, and change nothing
(issue 23, item 11): nesting 100,000 levels deep (``RecursionError`` in DRF's parser), a
lone UTF-16 surrogate (the error naming it could not be encoded), a NUL in a string.
"""

from __future__ import annotations

import pytest

from judgments.models import Collection, Judgment, JudgmentChange, Query, Snapshot


def _endpoints(world) -> list[tuple[str, str]]:
    base = f"/api/collections/{world.slug}"
    return [
        ("patch", f"{base}/"),
        ("post", f"{base}/evaluations/"),
        ("post", f"{base}/judges/nobody/proposals/"),
        ("post", f"{base}/judgments/"),
        ("patch", f"{base}/judgments/{world.judgment.pk}/"),
        ("post", f"{base}/members/"),
        ("patch", f"{base}/members/reviewer/"),
        ("patch", f"{base}/queries/C/"),
        ("post", f"{base}/snapshots/"),
        ("post", f"{base}/snapshots/{world.v1.number}/exports/"),
        ("post", f"{base}/tasks/{world.task.pk}/judge/"),
    ]


DEEP = "[" * 100_000 + "]" * 100_000
BODIES = {
    "nested 100,000 deep": DEEP,
    "nested 100,000 deep in a field": '{"note": ' + DEEP + "}",
    "nested 65 deep": "[" * 65 + "]" * 65,
    "lone surrogate": '{"status": "\\ud800", "note": "\\udfff"}',
    "NUL": '{"status": "relevant\\u0000", "note": "a\\u0000b"}',
}


def _state(world) -> tuple:
    return (
        JudgmentChange.objects.count(),
        Snapshot.objects.count(),
        list(Query.objects.order_by("pk").values_list("status", flat=True)),
        Collection.objects.get(pk=world.collection.pk).pool_depth,
    )


@pytest.mark.parametrize("body", list(BODIES.values()), ids=list(BODIES))
def test_every_json_write_endpoint_answers_400_to_a_hostile_body(api_world, api_client, body):
    client = api_client("superuser")
    before = _state(api_world)
    for method, url in _endpoints(api_world):
        response = getattr(client, method)(
            url, body, content_type="application/json", HTTP_IF_MATCH='"1"'
        )
        if "/judges/nobody/" in url and response.status_code == 404:
            continue  # no such judge: refused before the body is read, which is fine too
        assert response.status_code == 400, (method, url, response.content[:300])
        assert response["Content-Type"] == "application/json"
        assert response.json()["detail"].startswith("JSON parse error"), response.json()
    assert _state(api_world) == before


def test_a_lone_surrogate_in_a_choice_field_names_the_problem(api_world, api_client):
    before = Query.objects.get(collection=api_world.collection, external_id="C").status
    response = api_client("admin").patch(
        f"/api/collections/{api_world.slug}/queries/C/",
        '{"status": "\\ud800"}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "lone UTF-16 surrogate" in response.json()["detail"]
    assert Query.objects.get(collection=api_world.collection, external_id="C").status == before


def test_a_body_nested_64_deep_is_still_read(api_world, api_client):
    # 64 levels pass the parser; the serializer then refuses the shape, by field.
    body = '{"query": "B", "item": "a", "grade": 1, "note": ' + "[" * 63 + "]" * 63 + "}"
    response = api_client("reviewer").post(
        f"/api/collections/{api_world.slug}/judgments/", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "note"
    assert not Judgment.objects.filter(query__external_id="B", item__external_id="a").exists()
