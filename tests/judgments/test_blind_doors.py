"""Issue 22, item 2: every door is blind. In a collection with several assessors per item
a plain reviewer sees their own assessments and the tasks they are given, never the
resolved label, another assessor's grade or note, or the state of a pair derived from
them (``may_see_labels``, beside ``may_see_assessments``).

The walk: every GET URL of the URLconf (the admin aside), filled from the fixture, as
reviewer ana, who gave 3 to (q1, i1) where ben gave 0 (resolved 0 by the ``median``
policy), and who never assessed (q1, i2) (ben and cid gave 2, resolved 2). No answer
contains ben's or cid's notes, no JSON field names a grade other than ana's own 3, and no
page shows a label of grade 0 or 2. Fails on main: the query page, the judgments API, the
snapshot diff, the qrels, the run and evaluation pages answered the resolved labels.

Also: members removed or demoted since get 404 on the job and judge pages and APIs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import get_resolver, reverse
from rest_framework.test import APIClient

import verity_eval as engine
from jobs.models import Job, JobKind, JobState
from judges.models import JudgeConfig
from judgments.models import Judgment, ReviewTask, Role, Snapshot
from judgments.selectors import may_see_assessments, may_see_labels
from judgments.services import (
    freeze_snapshot,
    queue_unjudged,
    record_assessment,
    set_adjudicator,
    set_membership,
    update_collection_settings,
)
from scoring.services import import_run, score_run_stage
from tests.factories import make_collection, make_item, make_proposal, make_query, make_user
from tests.test_get_writes_nothing import named_patterns

pytestmark = pytest.mark.django_db

SECRETS = ("BEN-SECRET-NOTE", "CID-SECRET-NOTE")
HIDDEN_LABELS = ("0 not relevant", "2 relevant")  # the resolved labels, as pages show them


@pytest.fixture
def blind(tmp_path: Path, job_dir) -> dict[str, Any]:
    collection = update_collection_settings(
        collection=make_collection(slug="blind"),
        assessors_per_item=2,
        resolution_policy="median",
    )
    query = make_query(collection, external_id="q1", text="blind query")
    i1 = make_item(collection, external_id="i1", title="first item")
    i2 = make_item(collection, external_id="i2", title="second item")
    users = {}
    for name, role in (
        ("ana", Role.REVIEWER),
        ("ben", Role.REVIEWER),
        ("cid", Role.REVIEWER),
        ("eve", Role.EVALUATOR),
    ):
        users[name] = make_user(name)
        set_membership(collection=collection, user=users[name], role=role)
    run_file = tmp_path / "run.trec"
    run_file.write_text("q1 Q0 i1 1 2.0 sys\nq1 Q0 i2 2 1.0 sys\n")
    run = import_run(collection=collection, path=run_file, name="sys", by=users["eve"]).run
    record_assessment(query=query, item=i1, grade=3, assessor=users["ana"], note="ana-own")
    record_assessment(query=query, item=i1, grade=0, assessor=users["ben"], note=SECRETS[0])
    freeze_snapshot(collection=collection, by=users["eve"])
    record_assessment(query=query, item=i2, grade=2, assessor=users["ben"], note=SECRETS[0])
    record_assessment(query=query, item=i2, grade=2, assessor=users["cid"], note=SECRETS[1])
    snapshot, _ = freeze_snapshot(collection=collection, by=users["eve"])
    evaluation, _ = score_run_stage(
        run=run,
        stage=run.stages.get(),
        snapshot=snapshot,
        params=engine.EvalParams(ks=(1,), rel_level=1),
    )
    JudgeConfig.objects.create(collection=collection, name="local-baseline")
    make_proposal(query=query, item=i1, grade=3)
    job = Job.objects.create(
        kind=JobKind.SNAPSHOT_FREEZE,
        state=JobState.DONE,
        collection=collection,
        created_by=users["ana"],
        label="Freeze",
        task_path="judgments.tasks.freeze_task",
        result={"summary": "done", "url": "/c/blind/snapshots/"},
    )
    judgment = Judgment.objects.get(query=query, item=i1)
    assert judgment.grade == 0  # the median policy's lower median of 3 and 0
    return {
        **users,
        "collection": collection,
        "evaluation": evaluation.pk,
        "job": job.pk,
        "judgment": judgment.pk,
        "task": ReviewTask.objects.filter(query=query).order_by("pk").first().pk,
    }


def urls_of(blind: dict[str, Any]) -> list[str]:
    """Every named GET URL, filled from the fixture (the admin is left out)."""
    urls = []
    for name, route, params in named_patterns(get_resolver().url_patterns):
        if "jobs" in route:
            pk = blind["job"]
        elif "judgments" in route:
            pk = blind["judgment"]
        elif "tasks" in route:
            pk = blind["task"]
        else:
            pk = blind["evaluation"]
        values = {
            "slug": "blind",
            "name": "sys",
            "judge": "local-baseline",
            "pk": pk,
            "number": 2,
            "other": 1,
            "a": 1,
            "b": 2,
            "external_id": "q1",
            "qid": "q1",
            "item_id": "i1",
            "username": "ben",
            "uidb64": "MQ",
            "token": "set-password",
        }
        url = reverse(name, kwargs={p: values[p] for p in params})
        if "compare" in name:
            url += f"?a={blind['evaluation']}&b={blind['evaluation']}"
        urls.append(url)
        if url.startswith("/c/blind/"):
            sep = "&" if "?" in url else "?"
            urls += [f"{url}{sep}format=json", f"{url}{sep}format=csv"]
    extra = [
        "/api/collections/blind/snapshots/2/qrels?format=trec",
        "/api/collections/blind/snapshots/2/qrels?with_unjudged=1",
        "/api/collections/blind/judgments/?query=q1",
        "/api/collections/blind/judgments/?history=1",
        "/c/blind/q1/?search=item".replace("/q1/", "/q/q1/"),
        "/c/blind/review/?query=q1",
    ]
    return urls + extra


def leaked_grades(value: Any, path: str = "") -> list[str]:
    """JSON fields naming a grade other than ana's own 3."""
    found = []
    if isinstance(value, dict):
        for key, v in value.items():
            here = f"{path}.{key}"
            if ".scale[" in here or key == "relevant_grade":
                continue
            if key in ("n_judgments", "n_judged", "n_unresolved", "content_hash") and v is not None:
                found.append(f"{here}={v}")  # how many pairs are resolved; the labels' hash
            if (
                "grade" in str(key)
                and not str(key).endswith("grades")
                and isinstance(v, int)
                and not isinstance(v, bool)
                and v != 3
            ):
                found.append(f"{here}={v}")
            found += leaked_grades(v, here)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += leaked_grades(v, f"{path}[{i}]")
    return found


def body_of(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return response.content.decode("utf-8", "replace")


def leaks(client: Any, url: str, **headers: Any) -> list[str]:
    response = client.get(url, **headers)
    return blind_leaks(url, response.get("Content-Type", ""), body_of(response))


def blind_leaks(url: str, kind: str, body: str) -> list[str]:
    """What ``body`` (the answer to ``url``) tells reviewer ana of the other assessors:
    their notes, a snapshot's hash, a grade other than her own 3 (JSON), a resolved label
    (HTML), a qrels line of a resolved grade (text)."""
    found = [f"{url}: note {s!r}" for s in SECRETS if s in body]
    hashes = Snapshot.objects.values_list("content_hash", flat=True)
    found += [f"{url}: a snapshot's hash" for h in hashes if h[:12] in body]
    if "json" in kind:
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        found += [f"{url}: {g}" for g in leaked_grades(data)]
    elif "html" in kind:
        for label in HIDDEN_LABELS:
            for shown in (f"graded {label}", f"<strong>{label}</strong> <span", f">{label}</span>"):
                if shown in body:
                    found.append(f"{url}: label {shown!r}")
        for marker in ("resolved by the", "still to come", "awaiting adjudication"):
            if marker in body:
                found.append(f"{url}: {marker!r}")
        if re.search(r"<tr[^>]*is-relevant", body):
            found.append(f"{url}: a row marked relevant")
    elif "text/plain" in kind or "csv" in kind:
        # qrels lines "q1 0 i1 0": a resolved grade of an item
        for line in body.splitlines():
            parts = line.replace(",", " ").split()
            if len(parts) == 4 and parts[2] in ("i1", "i2") and parts[3] in ("0", "2"):
                found.append(f"{url}: qrels line {line!r}")
    return found


def test_a_reviewer_reads_no_other_assessors_grade_through_any_door(blind):
    ana = blind["ana"]
    assert may_see_assessments(ana, blind["collection"]) is False
    assert may_see_labels(ana, blind["collection"]) is False
    assert may_see_labels(blind["eve"], blind["collection"]) is True
    urls = urls_of(blind)
    assert len(urls) > 60 and "/c/blind/q/q1/" in urls
    page = Client()
    page.force_login(ana)
    api = APIClient()
    api.force_authenticate(ana)
    found: list[str] = []
    for url in urls:
        if url.startswith("/api/"):
            found += leaks(api, url)
        else:
            found += leaks(page, url)
            found += leaks(page, url, HTTP_ACCEPT="application/json")
    assert not found, "reviewer ana read another assessor's grade:\n" + "\n".join(found)
    # ana still sees her own assessment on the query page, and her task list
    own = page.get("/c/blind/q/q1/").content.decode()
    assert "ana-own" in own


def test_the_evaluator_still_sees_the_resolved_labels(blind):
    page = Client()
    page.force_login(blind["eve"])
    body = page.get("/c/blind/q/q1/").content.decode()
    assert "0 not relevant" in body and "2 relevant" in body
    api = APIClient()
    api.force_authenticate(blind["eve"])
    grades = {
        j["item"]: j["grade"]
        for j in api.get("/api/collections/blind/judgments/").json()["results"]
    }
    assert grades == {"i1": 0, "i2": 2}


def test_an_adjudicator_still_sees_both_assessments_of_the_pair_they_decide(blind):
    collection = blind["collection"]
    update_collection_settings(collection=collection, resolution_policy="adjudicate")
    query, i3 = collection.queries.get(), make_item(collection, external_id="i3")
    record_assessment(query=query, item=i3, grade=3, assessor=blind["ben"], note="ben-i3")
    record_assessment(query=query, item=i3, grade=0, assessor=blind["cid"], note="cid-i3")
    set_adjudicator(collection=collection, user=blind["ana"], allowed=True)
    page = Client()
    page.force_login(blind["ana"])
    body = page.get("/c/blind/adjudicate/").content.decode()
    assert "ben-i3" in body and "cid-i3" in body


def test_single_assessor_collections_are_unchanged(blind):
    collection = make_collection(slug="single")
    ana = blind["ana"]
    set_membership(collection=collection, user=ana, role=Role.REVIEWER)
    assert may_see_labels(ana, collection) is True


@pytest.mark.parametrize("change", ["removed", "demoted"])
def test_removed_or_demoted_members_get_404_on_jobs_and_judges(blind, change):
    collection, eve = blind["collection"], blind["eve"]
    job = Job.objects.create(
        kind=JobKind.SNAPSHOT_FREEZE,
        state=JobState.FAILED,
        collection=collection,
        created_by=eve,
        label="Freeze",
        task_path="judgments.tasks.freeze_task",
    )
    set_membership(
        collection=collection, user=eve, role=None if change == "removed" else Role.REVIEWER
    )
    page = Client()
    page.force_login(eve)
    api = APIClient()
    api.force_authenticate(eve)
    assert page.get(f"/jobs/{job.pk}/").status_code == 404
    assert page.post(f"/jobs/{job.pk}/retry/").status_code == 404
    assert api.get(f"/api/jobs/{job.pk}/").status_code == 404
    assert api.post(f"/api/jobs/{job.pk}/retry/").status_code == 404
    assert api.get(f"/api/jobs/{job.pk}/file").status_code == 404
    if change == "removed":
        for url in (
            "/c/blind/judges/",
            "/c/blind/judges/local-baseline/proposals/",
            "/c/blind/judges/local-baseline/calibration/",
        ):
            assert page.get(url).status_code == 404, url
        for url in (
            "/api/collections/blind/judges/local-baseline/proposals/",
            "/api/collections/blind/judges/local-baseline/calibration/",
        ):
            assert api.get(url).status_code == 404, url
    else:  # a reviewer now: starting or editing a judge is an admin's
        assert page.post("/c/blind/judges/local-baseline/start/").status_code in (403, 404)
        assert page.get("/c/blind/judges/local-baseline/edit/").status_code in (403, 404)


def test_a_reviewers_own_grade_answers_say_nothing_of_the_resolved_label(blind):
    """The second assessment of a pair resolves it: the answer to it (API and queue) does
    not say the resolved grade, and the query page refuses a direct grade or a status
    (their answers would read the labels)."""
    collection, ana = blind["collection"], blind["ana"]
    query = collection.queries.get()
    i3 = make_item(collection, external_id="i3")
    queue_unjudged(collection=collection, pairs=[(query.pk, i3.pk, 1)], source="run x")
    record_assessment(query=query, item=i3, grade=0, assessor=blind["ben"], note=SECRETS[0])
    api = APIClient()
    api.force_authenticate(ana)
    task = api.post("/api/collections/blind/tasks/claim/")
    assert task.status_code == 200 and task.json()["item"] == "i3"
    answer = api.post(
        f"/api/collections/blind/tasks/{task.json()['id']}/judge/", {"grade": 3}, format="json"
    )
    assert answer.status_code == 202
    assert answer.json()["grade"] == 3 and answer.json()["resolved_grade"] is None
    assert Judgment.objects.get(query=query, item=i3).grade == 0  # resolved all the same
    assert [t["item"] for t in api.get("/api/collections/blind/tasks/").json()["results"]] == []
    page = Client()
    page.force_login(ana)
    before = Judgment.objects.get(query=query, item=i3).version
    refused = page.post("/c/blind/q/q1/", {"action": "status", "status": "relevant"})
    assert refused.status_code == 403 and "several assessors" in refused.content.decode()
    # a grade on the query page is ana's own assessment; on a pair she assessed already
    # it is refused without a word of the label
    again = page.post("/c/blind/q/q1/", {"action": "grade", "item": "i3", "grade": 1})
    assert again.status_code == 400
    body = again.content.decode()
    assert "Not saved" in body
    assert not [m for m in ("graded 0", "resolved by the", SECRETS[0]) if m in body]
    assert Judgment.objects.get(query=query, item=i3).version == before
    assert page.post("/c/blind/status/", {"new_status": "relevant"}).status_code == 403
    assert (
        api.patch("/api/collections/blind/queries/q1/", {"status": "relevant"}).status_code == 403
    )
    eve = APIClient()
    eve.force_authenticate(blind["eve"])
    assert eve.get("/api/collections/blind/queries/q1/").json()["n_judgments"] == 3
