"""Behaviour of the endpoints beyond access: members, settings, tasks, snapshots,
evaluations."""

from __future__ import annotations

import pytest

from judgments.models import Membership, ReviewTask, TaskStatus
from judgments.services import claim_next_task


def url(world, tail: str) -> str:
    return f"/api/collections/{world.slug}/{tail}"


# -- members and settings -------------------------------------------------------------------


def test_an_admin_manages_members(api_world, api_client):
    admin = api_client("admin")
    added = admin.post(url(api_world, "members/"), {"username": "newbie", "role": "reviewer"})
    assert added.status_code == 201 and added.json()["role"] == "reviewer"
    again = admin.post(url(api_world, "members/"), {"username": "newbie", "role": "admin"})
    assert again.status_code == 409 and "PATCH" in again.json()["detail"]
    promoted = admin.patch(url(api_world, "members/newbie/"), {"role": "evaluator"})
    assert promoted.json()["role"] == "evaluator"
    assert admin.delete(url(api_world, "members/newbie/")).status_code == 204
    assert not Membership.objects.filter(user__username="newbie").exists()
    unknown = admin.post(url(api_world, "members/"), {"username": "ghost", "role": "reviewer"})
    assert unknown.status_code == 400 and unknown.json()["errors"][0]["field"] == "username"


def test_the_last_admin_cannot_leave_or_step_down(api_world, api_client):
    admin = api_client("admin")
    for request in (
        lambda: admin.patch(url(api_world, "members/admin/"), {"role": "reviewer"}),
        lambda: admin.delete(url(api_world, "members/admin/")),
    ):
        response = request()
        assert response.status_code == 409
        assert "last admin" in response.json()["detail"]
    admin.patch(url(api_world, "members/evaluator/"), {"role": "admin"})
    assert admin.patch(url(api_world, "members/admin/"), {"role": "reviewer"}).status_code == 200


def test_an_admin_changes_settings_but_never_the_scale(api_world, api_client):
    admin = api_client("admin")
    response = admin.patch(url(api_world, ""), {"pool_depth": 5, "guidelines": "Be strict."})
    assert response.status_code == 200
    assert (response.json()["pool_depth"], response.json()["guidelines"]) == (5, "Be strict.")
    fixed = admin.patch(url(api_world, ""), {"pool_depth": 6, "relevant_grade": 0})
    assert fixed.status_code == 400
    assert fixed.json()["errors"][0]["field"] == "relevant_grade"
    assert "fixed" in fixed.json()["errors"][0]["message"]
    bad = admin.patch(url(api_world, ""), {"pool_depth": 0})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "pool_depth"
    api_world.collection.refresh_from_db()
    assert (api_world.collection.pool_depth, api_world.collection.relevant_grade) == (5, 1)


# -- review tasks ---------------------------------------------------------------------------


def test_claim_judge_and_an_empty_queue(api_world, api_client):
    reviewer = api_client("reviewer")
    claimed = reviewer.post(url(api_world, "tasks/claim/"))
    assert claimed.status_code == 200
    task = claimed.json()
    assert (task["query"], task["item"], task["status"]) == ("C", "y", "claimed")
    assert task["claimed_by"] == "reviewer" and task["item_title"]
    assert reviewer.post(url(api_world, "tasks/claim/")).json()["id"] == task["id"]  # kept
    judged = reviewer.post(url(api_world, f"tasks/{task['id']}/judge/"), {"grade": 0})
    assert judged.status_code == 201 and judged["ETag"] == '"1"'
    assert ReviewTask.objects.get(pk=task["id"]).status == TaskStatus.DONE
    assert reviewer.post(url(api_world, "tasks/claim/")).status_code == 204


def test_a_task_held_by_another_reviewer_cannot_be_judged_or_skipped(api_world, api_client):
    claim_next_task(reviewer=api_world.users["evaluator"], collection=api_world.collection)
    reviewer = api_client("reviewer")
    judged = reviewer.post(url(api_world, f"tasks/{api_world.task.pk}/judge/"), {"grade": 0})
    assert judged.status_code == 409 and "claimed by evaluator" in judged.json()["detail"]
    skipped = reviewer.post(url(api_world, f"tasks/{api_world.task.pk}/skip/"))
    assert skipped.status_code == 409 and "not held by you" in skipped.json()["detail"]


def test_a_skipped_task_is_not_offered_again(api_world, api_client):
    reviewer = api_client("reviewer")
    task = reviewer.post(url(api_world, "tasks/claim/")).json()
    assert reviewer.post(url(api_world, f"tasks/{task['id']}/skip/")).status_code == 204
    assert reviewer.post(url(api_world, "tasks/claim/")).status_code == 204
    assert api_client("evaluator").post(url(api_world, "tasks/claim/")).status_code == 200


# -- snapshots ------------------------------------------------------------------------------


def test_freezing_twice_without_a_change_returns_the_latest(api_world, api_client):
    evaluator = api_client("evaluator")
    first = evaluator.post(url(api_world, "snapshots/"), {"note": "v3"})
    again = evaluator.post(url(api_world, "snapshots/"), {"note": "v4?"})
    assert (first.status_code, again.status_code) == (201, 200)
    assert (first.json()["number"], again.json()["number"]) == (3, 3)
    assert again.json()["created"] is False


def test_the_diff_says_what_changed(api_world, api_client):
    diff = api_client("reviewer").get(url(api_world, "snapshots/1/diff/2/")).json()
    assert (diff["from"], diff["to"]) == (1, 2)
    assert diff["unjudged_added"] == 1 and diff["added"] == [] and not diff["is_empty"]
    assert api_client("reviewer").get(url(api_world, "snapshots/1/diff/1/")).json()["is_empty"]


# -- evaluations ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        ({"run": "nope", "snapshot": 1}, "run", "has no run 'nope'; its runs are"),
        ({"run": "example", "snapshot": 7}, "snapshot", "has no snapshot v7"),
        ({"run": "example", "snapshot": 1, "stage": "x"}, "stage", "has no stage 'x'"),
        ({"run": "example", "snapshot": 1, "mapping": 9}, "mapping", "no unit mapping v9"),
        ({"run": "example", "snapshot": 1, "ks": [0]}, "ks.0", "greater than or equal to 1"),
        ({"run": "example", "snapshot": 1, "measures": ["R@x"]}, None, "not a positive"),
        ({"run": "example"}, "snapshot", "required"),
    ],
    ids=["run", "snapshot", "stage", "mapping", "k", "measure", "no-snapshot"],
)
def test_scoring_errors_name_the_field(api_world, api_client, payload, field, message):
    response = api_client("evaluator").post(url(api_world, "evaluations/"), payload)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert [e["field"] for e in errors] == [field]
    assert message in errors[0]["message"]


def test_an_evaluation_reads_back_with_its_rows_paginated(api_world, api_client):
    reviewer = api_client("reviewer")
    listed = reviewer.get(url(api_world, "evaluations/")).json()
    assert listed["count"] == 2
    assert {e["snapshot"] for e in listed["results"]} == {1}
    report = reviewer.get(url(api_world, f"evaluations/{api_world.evaluation.pk}/")).json()
    assert report["aggregates"]["R@2"]["pooled"] == pytest.approx(0.4)
    assert report["params"]["ks"] == [2] and report["snapshot"]["number"] == 1
    page = reviewer.get(report["per_query_url"], {"page_size": 2}).json()
    assert page["count"] == 3 and [r["query_id"] for r in page["results"]] == ["A", "B"]


def test_queries_filter_by_tag_and_status(api_world, api_client):
    from tests.factories import make_query

    make_query(api_world.collection, external_id="D", tags=["billing", "faq"])
    make_query(api_world.collection, external_id="E", tags=["faq"])
    make_query(api_world.collection, external_id="F", tags=["billing-extra"])
    reviewer = api_client("reviewer")

    def ids(**params):
        response = reviewer.get(url(api_world, "queries/"), params)
        assert response.status_code == 200, response.json()
        return [q["id"] for q in response.json()["results"]]

    assert ids(tag="billing") == ["B", "D"]  # B is tagged billing in the bundle
    assert ids(tag="billing", status="relevant") == ["B"]
    assert ids(tag="faq") == ["D", "E"]
    assert ids(tag="faq", status="unreviewed") == ["D", "E"]
    assert ids(tag="faq", status="relevant") == []
    bad = reviewer.get(url(api_world, "queries/"), {"status": "maybe"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "status"
