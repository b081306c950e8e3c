"""Bad input at the API's edges: numbers past their column, unbounded notes, bodies over
the limit, and the 409 that the schema describes (issue 10, items 3, 4 and 9).

Each answer is JSON with a status under 500, and nothing is written.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from judgments.models import Collection, Judgment, JudgmentChange
from verity_limits import INT32_MAX, NOTE_MAX


def _judgments(world) -> str:
    return f"/api/collections/{world.slug}/judgments/"


@pytest.mark.parametrize("value", [INT32_MAX + 1, 10**30, -(2**31) - 1])
def test_pool_depth_past_the_integer_column_is_400_naming_the_field(api_world, api_client, value):
    before = Collection.objects.get(pk=api_world.collection.pk).pool_depth
    response = api_client("admin").patch(
        f"/api/collections/{api_world.slug}/", {"pool_depth": value}, format="json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == "pool_depth"
    assert Collection.objects.get(pk=api_world.collection.pk).pool_depth == before


def test_the_largest_pool_depth_that_fits_is_stored(api_world, api_client):
    response = api_client("admin").patch(
        f"/api/collections/{api_world.slug}/", {"pool_depth": INT32_MAX}, format="json"
    )
    assert response.status_code == 200, response.content
    assert Collection.objects.get(pk=api_world.collection.pk).pool_depth == INT32_MAX


@pytest.mark.parametrize(
    "field,value",
    [("snapshot", INT32_MAX + 1), ("mapping", 2**63), ("rel_level", 40000)],
)
def test_evaluation_integers_past_their_columns_are_400(api_world, api_client, field, value):
    payload = {"run": "example", "snapshot": 1, "ks": [2], field: value}
    response = api_client("evaluator").post(
        f"/api/collections/{api_world.slug}/evaluations/", payload, format="json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == field


def test_a_note_over_the_limit_is_refused_on_create_and_nothing_is_written(api_world, api_client):
    count = JudgmentChange.objects.count()
    response = api_client("reviewer").post(
        _judgments(api_world),
        {"query": "B", "item": "a", "grade": 1, "note": "n" * (NOTE_MAX + 1)},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == "note"
    assert f"{NOTE_MAX}" in response.json()["detail"]
    assert JudgmentChange.objects.count() == count


def test_a_note_at_the_limit_is_kept_whole(api_world, api_client):
    response = api_client("reviewer").post(
        _judgments(api_world),
        {"query": "B", "item": "a", "grade": 1, "note": "n" * NOTE_MAX},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert len(Judgment.objects.get(pk=response.json()["id"]).note) == NOTE_MAX


def test_a_note_over_the_limit_is_refused_on_edit_and_on_a_task(api_world, api_client):
    reviewer = api_client("reviewer")
    judgment = api_world.judgment
    edit = reviewer.patch(
        f"{_judgments(api_world)}{judgment.pk}/",
        {"note": "n" * (NOTE_MAX + 1)},
        format="json",
        HTTP_IF_MATCH='"1"',
    )
    assert edit.status_code == 400, edit.content
    task = reviewer.post(
        f"/api/collections/{api_world.slug}/tasks/{api_world.task.pk}/judge/",
        {"grade": 0, "note": "n" * (NOTE_MAX + 1)},
        format="json",
    )
    assert task.status_code == 400, task.content
    assert Judgment.objects.get(pk=judgment.pk).version == 1


def test_the_service_refuses_a_long_note_from_any_caller(api_world):
    from judgments.services import InvariantError, record_judgment

    judgment = api_world.judgment
    with pytest.raises(InvariantError, match="at most 2,000"):
        record_judgment(
            query=judgment.query,
            item=judgment.item,
            grade=1,
            reviewer=api_world.users["reviewer"],
            expected_version=1,
            note="n" * (NOTE_MAX + 1),
        )


def test_a_body_over_the_memory_limit_is_a_json_413(api_world, api_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100_000
    count = JudgmentChange.objects.count()
    body = json.dumps({"query": "B", "item": "a", "grade": 1, "note": "n" * 200_000})
    response = api_client("reviewer").post(
        _judgments(api_world), body, content_type="application/json"
    )
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    data = response.json()
    assert "100,000 bytes" in data["detail"] and data["errors"] == []
    assert JudgmentChange.objects.count() == count


def _json_schema(node):
    """OpenAPI 3.0's ``nullable`` as JSON Schema's ``"type": [..., "null"]``."""
    if isinstance(node, list):
        return [_json_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") and "type" in node:
        out["type"] = [node["type"], "null"]
    return out


def _conflict_schema() -> dict:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        "$ref": "#/components/schemas/JudgmentConflict",
        "components": _json_schema(schema["components"]),
    }


def test_every_409_of_a_judgment_create_matches_the_judgment_conflict_schema(api_world, api_client):
    reviewer = api_client("reviewer")
    url = _judgments(api_world)
    reviewer.post(
        url, {"query": "C", "item": "y", "grade": 0}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    other_pair = reviewer.post(
        url, {"query": "B", "item": "a", "grade": 0}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    judged_pair = reviewer.post(url, {"query": "A", "item": "x", "grade": 1}, format="json")
    schema = _conflict_schema()
    for response in (other_pair, judged_pair):
        assert response.status_code == 409
        jsonschema.validate(response.json(), schema)
    assert "current" not in other_pair.json()  # the other judgment may be out of sight
    assert judged_pair.json()["current"]["item"] == "x"
