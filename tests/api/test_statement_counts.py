"""The reviewer's hot path in SQL statements (issue 29): claim and judge over the API.

Counted as a test sees them: the request's transaction shows as SAVEPOINT / RELEASE
(BEGIN and COMMIT in production, which Django does not log), so these are upper bounds
of what production sends. Before issue 29 (PostgreSQL / SQLite): claim 9 / 9, judge
17 / 15, If-Match edit 13 / 11. The queue stays cheap however many tasks it holds: the
counts are taken with 60 open tasks over 3 queries, several sources per task.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from judgments.models import ApiToken, Judgment, JudgmentChange, ReviewTask, TaskStatus
from judgments.services import create_api_token, queue_unjudged, set_membership
from tests.factories import make_collection, make_item, make_query, make_user

POSTGRES = connection.vendor == "postgresql"
# judge: auth, collection + role, [SAVEPOINT], lock-and-read, write, [RELEASE]; SQLite
# writes the judgment, its history row and the task's completion in three statements
# (no data-modifying CTEs), PostgreSQL in one.
JUDGE_MAX = 6 if POSTGRES else 8
CLAIM_MAX = 4  # auth, collection + role, the claim (one UPDATE), the task with its sources


@pytest.fixture
def team(db):
    collection = make_collection(slug="hot")
    queries = [make_query(collection, external_id=f"q{n}") for n in range(3)]
    items = [make_item(collection, external_id=f"d{n}") for n in range(20)]
    for source in ("run bm25", "run dense"):
        queue_unjudged(
            collection=collection,
            pairs=[(q.pk, i.pk, rank) for q in queries for rank, i in enumerate(items, 1)],
            source=source,
        )
    clients = {}
    for name in ("ana", "ben"):
        user = make_user(name)
        set_membership(collection=collection, user=user, role="reviewer")
        client = APIClient()
        issued = create_api_token(user=user)
        # Used a moment ago: the once-a-minute write of its last use is not counted here.
        ApiToken.objects.filter(pk=issued.token.pk).update(last_used_at=timezone.now())
        client.credentials(HTTP_AUTHORIZATION=f"Token {issued.key}")
        clients[name] = client
    return collection, clients


def test_claim_takes_at_most_four_statements(team, django_assert_max_num_queries):
    collection, clients = team
    url = f"/api/collections/{collection.slug}/tasks/claim/"
    with django_assert_max_num_queries(CLAIM_MAX):
        first = clients["ana"].post(url)
    assert first.status_code == 200
    body = first.json()
    assert body["query"] == "q0" and body["item"] == "d0" and body["claimed_by"] == "ana"
    assert [s["label"] for s in body["sources"]] == ["run bm25", "run dense"]
    with django_assert_max_num_queries(CLAIM_MAX):  # a reload hands the same task back
        again = clients["ana"].post(url)
    assert again.json()["id"] == body["id"]
    assert again.json()["lease_expires_at"] == body["lease_expires_at"]
    with django_assert_max_num_queries(CLAIM_MAX):  # another reviewer: another query
        other = clients["ben"].post(url).json()
    assert other["id"] != body["id"] and other["query"] == "q1"
    assert ReviewTask.objects.filter(status=TaskStatus.CLAIMED).count() == 2


def test_judge_takes_at_most_six_statements_on_postgresql(team, django_assert_max_num_queries):
    collection, clients = team
    base = f"/api/collections/{collection.slug}"
    task = clients["ana"].post(f"{base}/tasks/claim/").json()
    with django_assert_max_num_queries(JUDGE_MAX):
        judged = clients["ana"].post(
            f"{base}/tasks/{task['id']}/judge/", {"grade": 1, "client_key": "k-1"}, format="json"
        )
    assert judged.status_code == 201, judged.content
    body = judged.json()
    assert (body["query"], body["item"], body["grade"], body["version"]) == ("q0", "d0", 1, 1)
    assert body["reviewer"] == "ana" and body["client_key"] == "k-1"
    assert judged["ETag"] == '"1"'
    stored = Judgment.objects.get(pk=body["id"])
    assert (stored.grade, stored.version, stored.client_key) == (1, 1, "k-1")
    change = JudgmentChange.objects.get(query=stored.query, item=stored.item)
    assert (change.old_grade, change.new_grade, change.version) == (None, 1, 1)
    assert change.changed_by.username == "ana" and change.source == "api"
    assert ReviewTask.objects.get(pk=task["id"]).status == TaskStatus.DONE
    # A retry with the same key replays the judgment; nothing more is written.
    replay = clients["ana"].post(
        f"{base}/tasks/{task['id']}/judge/", {"grade": 1, "client_key": "k-1"}, format="json"
    )
    assert replay.status_code == 200 and replay.json()["id"] == body["id"]
    assert JudgmentChange.objects.count() == 1


def test_if_match_edit_takes_at_most_six_statements_on_postgresql(
    team, django_assert_max_num_queries
):
    collection, clients = team
    base = f"/api/collections/{collection.slug}"
    task = clients["ana"].post(f"{base}/tasks/claim/").json()
    made = clients["ana"].post(f"{base}/tasks/{task['id']}/judge/", {"grade": 1}, format="json")
    pk = made.json()["id"]
    with django_assert_max_num_queries(JUDGE_MAX):
        edited = clients["ben"].patch(
            f"{base}/judgments/{pk}/", {"grade": 2}, format="json", HTTP_IF_MATCH='"1"'
        )
    assert edited.status_code == 200, edited.content
    body = edited.json()
    assert (body["grade"], body["version"], body["reviewer"]) == (2, 2, "ben")
    assert edited["ETag"] == '"2"'
    history = JudgmentChange.objects.filter(version=2).get()
    assert (history.old_grade, history.new_grade, history.changed_by.username) == (1, 2, "ben")
    # The same If-Match again is stale: 412 with the judgment as it is, nothing written.
    stale = clients["ana"].patch(
        f"{base}/judgments/{pk}/", {"grade": 0}, format="json", HTTP_IF_MATCH='"1"'
    )
    assert stale.status_code == 412 and stale.json()["current"]["version"] == 2
    assert stale["ETag"] == '"2"'
    assert JudgmentChange.objects.count() == 2
    assert Judgment.objects.get(pk=pk).grade == 2


def test_claim_answer_is_the_task_serializers(team):
    """The claim writes its answer out (``task_answer``, issue 29): it must stay what
    ``TaskSerializer`` renders for the same task, a live lease and two sources included,
    and likewise for a task with no lease, no rank and no source."""
    from judgments.api.serializers import TaskSerializer, task_answer
    from judgments.selectors import task_for_review

    collection, clients = team
    body = clients["ana"].post(f"/api/collections/{collection.slug}/tasks/claim/").json()
    task = task_for_review(collection, body["id"])
    assert task.claimed_by.username == "ana"
    assert body == dict(TaskSerializer(task).data) == task_answer(task)
    assert body["lease_expires_at"].endswith("Z") and body["status"] == "claimed"
    assert [(x["label"], x["rank"]) for x in body["sources"]] == [("run bm25", 1), ("run dense", 1)]
    bare = ReviewTask.objects.filter(status=TaskStatus.PENDING).order_by("pk").last()
    bare.sources.all().delete()
    ReviewTask.objects.filter(pk=bare.pk).update(best_rank=None)
    plain = task_for_review(collection, bare.pk)
    assert plain.lease_expires_at is None and plain.claimed_by is None
    assert task_answer(plain) == dict(TaskSerializer(plain).data)
    assert task_answer(plain)["sources"] == [] and task_answer(plain)["best_rank"] is None
