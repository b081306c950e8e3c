"""Two clients edit one judgment with the same If-Match, at the same moment, over HTTP.

Real threads, each with its own database connection (Django's connections are per
thread), released at the end of the thread. Exactly one edit succeeds; the other gets
412 with the winner's value in ``current``; the stored judgment is the winner's.
"""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connections
from rest_framework.test import APIClient

from judgments.models import Judgment
from judgments.services import create_api_token, set_membership
from tests.api.conftest import RECALL_EXAMPLE, import_bundle

ROUNDS = 5


def edit_at_once(url: str, etag: str, edits: dict[str, tuple[str, dict]]) -> dict[str, tuple]:
    """Send every edit (name -> (token, body)) at once, each from its own thread."""
    start = threading.Barrier(len(edits))
    results: dict[str, tuple] = {}

    def send(name: str, token: str, body: dict) -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
            start.wait(timeout=10)
            response = client.patch(url, body, HTTP_IF_MATCH=etag)
            results[name] = (response.status_code, response.json(), response.get("ETag"))
        except Exception as exc:  # reported by the assertion below, not lost in the thread
            results[name] = (None, repr(exc), None)
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=send, args=(name, token, body))
        for name, (token, body) in edits.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_one_of_two_simultaneous_edits_wins_and_the_other_gets_412():
    User = get_user_model()
    collection = import_bundle(RECALL_EXAMPLE / "bundle.jsonl")
    tokens = {}
    for name in ("ana", "ben"):
        user = User.objects.create_user(name)
        set_membership(collection=collection, user=user, role="reviewer")
        tokens[name] = create_api_token(user=user).key
    judgment = Judgment.objects.get(query__external_id="A", item__external_id="x")
    url = f"/api/collections/{collection.slug}/judgments/{judgment.pk}/"

    for round_ in range(ROUNDS):
        version = Judgment.objects.get(pk=judgment.pk).version
        edits = {
            name: (tokens[name], {"grade": i % 2, "note": f"{name} in round {round_}"})
            for i, name in enumerate(("ana", "ben"))
        }
        results = edit_at_once(url, f'"{version}"', edits)
        statuses = sorted(r[0] for r in results.values())
        assert statuses == [200, 412], results
        winner = next(name for name, r in results.items() if r[0] == 200)
        loser = next(name for name, r in results.items() if r[0] == 412)
        stored = Judgment.objects.select_related("reviewer").get(pk=judgment.pk)
        assert stored.version == version + 1
        assert stored.note == f"{winner} in round {round_}"
        assert stored.reviewer.username == winner
        current = results[loser][1]["current"]
        assert (current["note"], current["version"]) == (stored.note, stored.version)
        assert results[loser][2] == f'"{stored.version}"'


def create_at_once(url: str, token: str, body: dict, key: str, n: int) -> list[tuple]:
    start = threading.Barrier(n)
    results: list[tuple] = []

    def send() -> None:
        try:
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
            start.wait(timeout=10)
            response = client.post(url, body, HTTP_IDEMPOTENCY_KEY=key)
            results.append((response.status_code, response.json().get("id")))
        except Exception as exc:
            results.append((None, repr(exc)))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_simultaneous_retries_of_one_create_make_one_judgment():
    collection = import_bundle(RECALL_EXAMPLE / "bundle.jsonl")
    user = get_user_model().objects.create_user("ana")
    set_membership(collection=collection, user=user, role="reviewer")
    token = create_api_token(user=user).key
    url = f"/api/collections/{collection.slug}/judgments/"
    body = {"query": "C", "item": "y", "grade": 0}
    results = create_at_once(url, token, body, key="retry-1", n=3)
    assert sorted(status for status, _ in results) == [200, 200, 201], results
    assert len({pk for _, pk in results}) == 1
    assert Judgment.objects.filter(query__external_id="C", item__external_id="y").count() == 1
