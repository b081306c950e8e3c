"""The users of ``bench/load_test.py`` (Locust): a team at work on one collection.

* ``Reviewer`` (50): claims the next review task and judges it, with a client key, as the
  review page does; each acknowledged judgment (201) is recorded for the database checks.
* ``Editor`` (5): opens a query's judgments, reads one (its ETag) and regrades it with
  If-Match; 412 is the expected answer when another editor got there first.
* ``Evaluator`` (3): exports the qrels of snapshot 1 and reads the evaluation report.

The driver passes its set-up (host, tokens, ids) in the JSON file named by
``VERITY_LOAD_CONFIG`` and reads back what the users saw from ``VERITY_LOAD_ACKS``.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import uuid
from pathlib import Path
from typing import Any

from locust import HttpUser, between, events, task

CONFIG: dict[str, Any] = json.loads(Path(os.environ["VERITY_LOAD_CONFIG"]).read_text())
SLUG = CONFIG["slug"]
BASE = f"/api/collections/{SLUG}"
ACKS: dict[str, list[Any]] = {"judged": [], "claims": [], "edits": [], "unexpected": []}
_tokens = {role: itertools.cycle(tokens) for role, tokens in CONFIG["tokens"].items()}


class _Member(HttpUser):
    abstract = True
    role = ""

    def on_start(self) -> None:
        self.username, token = next(_tokens[self.role])
        self.client.headers["Authorization"] = f"Token {token}"
        # As the reverse proxy of docs/DEPLOY.md sends it: the request came in over TLS.
        self.client.headers["X-Forwarded-Proto"] = "https"

    def unexpected(self, response: Any, what: str) -> None:
        ACKS["unexpected"].append([self.username, what, response.status_code, response.text[:200]])
        response.failure(f"{what}: {response.status_code}")


class Reviewer(_Member):
    fixed_count = CONFIG["reviewers"]
    role = "reviewer"
    wait_time = between(0.5, 1.5)  # reading the item, choosing a grade

    @task
    def claim_and_judge(self) -> None:
        with self.client.post(
            f"{BASE}/tasks/claim/", name="POST tasks/claim", catch_response=True
        ) as claim:
            if claim.status_code == 204:
                claim.success()  # the queue is empty for this reviewer
                return
            if claim.status_code != 200:
                return self.unexpected(claim, "claim")
            held = claim.json()
        ACKS["claims"].append([held["id"], self.username])
        key = str(uuid.uuid4())
        with self.client.post(
            f"{BASE}/tasks/{held['id']}/judge/",
            json={"grade": random.choice([0, 1]), "client_key": key},
            name="POST tasks/:id/judge",
            catch_response=True,
        ) as judged:
            if judged.status_code not in (200, 201):
                return self.unexpected(judged, "judge")
            body = judged.json()
            ACKS["judged"].append(
                [held["id"], body["id"], body["query"], body["item"], key, self.username]
            )


class Editor(_Member):
    fixed_count = CONFIG["editors"]
    role = "editor"
    wait_time = between(1, 3)

    @task
    def regrade(self) -> None:
        query = random.choice(CONFIG["edited_queries"])
        listed = self.client.get(
            f"{BASE}/judgments/", params={"query": query}, name="GET judgments?query"
        )
        rows = listed.json()["results"] if listed.ok else []
        if not rows:
            return
        pk = random.choice(rows)["id"]
        read = self.client.get(f"{BASE}/judgments/{pk}/", name="GET judgments/:id")
        if not read.ok:
            return
        grade = 2 if read.json()["grade"] == 1 else 1  # both relevant: no status conflict
        with self.client.patch(
            f"{BASE}/judgments/{pk}/",
            json={"grade": grade},
            headers={"If-Match": read.headers["ETag"]},
            name="PATCH judgments/:id (If-Match)",
            catch_response=True,
        ) as edit:
            if edit.status_code == 412:
                edit.success()  # another editor changed it first: the intended refusal
                ACKS["edits"].append([pk, None])
            elif edit.status_code == 200:
                ACKS["edits"].append([pk, edit.json()["version"]])
            else:
                self.unexpected(edit, "edit")


class Evaluator(_Member):
    fixed_count = CONFIG["evaluators"]
    role = "evaluator"
    wait_time = between(1, 3)

    @task(2)
    def report(self) -> None:
        self.client.get(
            f"{BASE}/evaluations/{CONFIG['evaluation']}/report/",
            name="GET evaluations/:id/report",
        )

    @task(1)
    def export_qrels(self) -> None:
        self.client.get(f"{BASE}/snapshots/1/qrels", name="GET snapshots/1/qrels")


@events.quitting.add_listener
def _write_acks(environment: Any, **_: Any) -> None:
    with open(os.environ["VERITY_LOAD_ACKS"], "w") as fh:
        json.dump(ACKS, fh)
