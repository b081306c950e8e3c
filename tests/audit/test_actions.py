"""Every audited action leaves exactly one row, naming who, in which collection, on what
(issue 27 item 3's table-driven acceptance test).

Each case does the action the way a person or a script does it (a page's POST, an API
call, a download), on ``api_world`` (tests/api/conftest.py): then the rows added since
just before it are exactly one, with this action, actor, collection and target.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from audit.models import AuditEvent
from jobs.models import Job, JobKind, JobState
from judgments.models import AdjudicationTask, ApiToken, Collection, Role
from judgments.services import (
    create_api_token,
    record_assessment,
    set_membership,
    update_collection_settings,
)
from tests.api.conftest import api_world  # noqa: F401  (the fixture, shared)
from tests.factories import make_collection, make_item, make_query

PASSWORD = "correct horse battery staple"


@dataclass(frozen=True)
class Expected:
    action: str
    actor: str | None  # a username; None for no one (a failed login, the system)
    collection: str | None  # a slug; None for rows of no collection
    target: str


def page(world, role: str) -> Client:
    client = Client()
    client.force_login(world.users[role])
    return client


def api(world, role: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {world.tokens[role]}")
    return client


def ok(response: Any, *statuses: int) -> Any:
    assert response.status_code in (statuses or (200, 302, 303)), (
        response.status_code,
        getattr(response, "content", b"")[:300],
    )
    if getattr(response, "streaming", False):
        b"".join(response.streaming_content)
    return response


# -- the cases ------------------------------------------------------------------------------


def login(world, **_: Any) -> Expected:
    world.users["admin"].set_password(PASSWORD)
    world.users["admin"].save()
    ok(Client().post("/accounts/login/", {"username": "admin", "password": PASSWORD}), 302)
    return Expected("login", "admin", None, "admin")


def login_failed(world, **_: Any) -> Expected:
    world.users["admin"].set_password(PASSWORD)
    world.users["admin"].save()
    ok(Client().post("/accounts/login/", {"username": "admin", "password": "guess"}), 200)
    return Expected("login.failed", None, None, "admin")


def login_failed_unknown_user(world, **_: Any) -> Expected:
    ok(Client().post("/accounts/login/", {"username": "nobody", "password": "x"}), 200)
    return Expected("login.failed", None, None, "nobody")


def token_create_page(world, **_: Any) -> Expected:
    ok(
        page(world, "evaluator").post(
            "/accounts/tokens/",
            {"action": "create", "name": "nightly", "scope": "read", "collection": world.slug},
        ),
        200,
    )
    prefix = ApiToken.objects.get(name="nightly").prefix
    return Expected("token.create", "evaluator", world.slug, f"nightly ({prefix}…) of evaluator")


def _own_token(world, role: str = "evaluator") -> ApiToken:
    return create_api_token(user=world.users[role], name="script", scope="read").token


def token_revoke_page(world, token: ApiToken, **_: Any) -> Expected:
    ok(page(world, "evaluator").post("/accounts/tokens/", {"action": "revoke", "token": token.pk}))
    return Expected("token.revoke", "evaluator", None, f"script ({token.prefix}…) of evaluator")


def token_revoke_api(world, token: ApiToken, **_: Any) -> Expected:
    ok(api(world, "evaluator").delete(f"/api/tokens/{token.pk}/"), 200)
    return Expected("token.revoke", "evaluator", None, f"script ({token.prefix}…) of evaluator")


def token_rotate_page(world, token: ApiToken, **_: Any) -> Expected:
    ok(page(world, "evaluator").post("/accounts/tokens/", {"action": "rotate", "token": token.pk}))
    new = ApiToken.objects.get(name="script", revoked_at__isnull=True)
    return Expected("token.rotate", "evaluator", None, f"script ({new.prefix}…) of evaluator")


def snapshot_freeze_api(world, **_: Any) -> Expected:
    ok(api(world, "evaluator").post(f"/api/collections/{world.slug}/snapshots/"), 201)
    return Expected("snapshot.freeze", "evaluator", world.slug, "v3")


def snapshot_freeze_job(world, jobs_inline, **_: Any) -> Expected:
    with jobs_inline():
        ok(
            api(world, "evaluator").post(
                f"/api/collections/{world.slug}/snapshots/", HTTP_PREFER="respond-async"
            ),
            202,
        )
    return Expected("snapshot.freeze", "evaluator", world.slug, "v3")


def export_qrels_api(world, **_: Any) -> Expected:
    ok(api(world, "evaluator").get(f"/api/collections/{world.slug}/snapshots/1/qrels"), 200)
    return Expected("export.qrels", "evaluator", world.slug, "v1")


def export_qrels_job(world, **_: Any) -> Expected:
    url = f"/api/collections/{world.slug}/snapshots/2/exports/"
    ok(api(world, "evaluator").post(url, {"format": "jsonl"}, format="json"), 202)
    return Expected("export.qrels", "evaluator", world.slug, "v2")


def export_report_api(world, **_: Any) -> Expected:
    pk = world.evaluation.pk
    url = f"/api/collections/{world.slug}/evaluations/{pk}/report/?format=csv"
    ok(api(world, "reviewer").get(url), 200)
    return Expected("export.report", "reviewer", world.slug, f"{world.slug}-evaluation-{pk}")


def export_report_page(world, **_: Any) -> Expected:
    pk = world.evaluation.pk
    ok(page(world, "admin").get(f"/c/{world.slug}/evaluations/{pk}/?format=json"), 200)
    return Expected("export.report", "admin", world.slug, f"{world.slug}-evaluation-{pk}")


def export_comparison_page(world, **_: Any) -> Expected:
    a, b = world.evaluation.pk, world.other_evaluation.pk
    ok(page(world, "evaluator").get(f"/c/{world.slug}/compare/?a={a}&b={b}&format=csv"), 200)
    return Expected("export.report", "evaluator", world.slug, f"{world.slug}-compare-{a}-{b}")


JUDGE_FORM = {
    "name": "gpt",
    "base_url": "http://models.example.org/v1",
    "model": "m",
    "api_key_env": "",
    "timeout": "60",
    "retries": "2",
    "concurrency": "4",
    "request_budget": "1000",
    "backoff": "1",
    "temperature": "0",
    "max_tokens": "512",
    "prompt_version": "umbrela-v1",
    "show_in_queue": "on",
}


def judge_configure(world, settings, **_: Any) -> Expected:
    settings.VERITY_JUDGE_HOSTS = ["models.example.org"]
    ok(page(world, "admin").post(f"/c/{world.slug}/judges/new/", JUDGE_FORM), 302)
    return Expected("judge.configure", "admin", world.slug, "gpt")


def judge_reconfigure(world, settings, **_: Any) -> Expected:
    settings.VERITY_JUDGE_HOSTS = ["models.example.org"]
    client = page(world, "admin")
    ok(client.post(f"/c/{world.slug}/judges/new/", JUDGE_FORM), 302)
    ok(client.post(f"/c/{world.slug}/judges/gpt/edit/", {**JUDGE_FORM, "model": "m2"}), 302)
    return Expected("judge.configure", "admin", world.slug, "gpt")


def job_retry(world, **_: Any) -> Expected:
    ok(page(world, "evaluator").post(f"/jobs/{world.job.pk}/retry/"))
    return Expected("job.retry", "evaluator", world.slug, f"job {world.job.pk}")


def job_cancel(world, **_: Any) -> Expected:
    job = Job.objects.create(
        kind=JobKind.SNAPSHOT_FREEZE,
        state=JobState.QUEUED,
        collection=world.collection,
        created_by=world.users["evaluator"],
        label="Freeze",
        task_path="judgments.tasks.freeze_task",
    )
    ok(page(world, "evaluator").post(f"/jobs/{job.pk}/cancel/"))
    assert Job.objects.get(pk=job.pk).state == JobState.CANCELLED
    return Expected("job.cancel", "evaluator", world.slug, f"job {job.pk}")


def _pair_to_adjudicate(world) -> AdjudicationTask:
    pairs = make_collection(slug="pairs", name="Pairs")
    update_collection_settings(
        collection=pairs, assessors_per_item=2, resolution_policy="adjudicate"
    )
    set_membership(collection=pairs, user=world.users["admin"], role=Role.ADMIN)
    query, item = make_query(pairs, external_id="A"), make_item(pairs, external_id="a")
    record_assessment(query=query, item=item, grade=0, assessor=world.users["reviewer"])
    record_assessment(query=query, item=item, grade=3, assessor=world.users["evaluator"])
    return AdjudicationTask.objects.get(query=query, item=item)


def adjudication_decide(world, **_: Any) -> Expected:
    task = _pair_to_adjudicate(world)
    ok(page(world, "admin").post("/c/pairs/adjudicate/decide/", {"task": task.pk, "grade": 2}))
    return Expected("adjudication.decide", "admin", "pairs", "query A / item a")


CASES: list[Callable[..., Expected]] = [
    login,
    login_failed,
    login_failed_unknown_user,
    token_create_page,
    token_revoke_page,
    token_revoke_api,
    token_rotate_page,
    snapshot_freeze_api,
    snapshot_freeze_job,
    export_qrels_api,
    export_qrels_job,
    export_report_api,
    export_report_page,
    export_comparison_page,
    judge_configure,
    judge_reconfigure,
    job_retry,
    job_cancel,
    adjudication_decide,
]


SET_UP = {"collection.create", "collection.settings", "member.add"}


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_each_action_leaves_exactly_one_row_naming_who_where_and_what(
    case,
    api_world,  # noqa: F811
    jobs_inline,
    settings,
):
    token = _own_token(api_world) if case.__name__.startswith("token_r") else None
    last = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0

    expected = case(api_world, token=token, jobs_inline=jobs_inline, settings=settings)

    rows = list(AuditEvent.objects.filter(id__gt=last).order_by("id"))
    # A case's own set-up (a collection made, configured, a member added) is recorded too;
    # the row under test is the one that is not set-up.
    rows = [e for e in rows if e.action not in SET_UP or e.action == expected.action]
    if case is judge_reconfigure:  # the judge's creation, then the change under test
        assert rows[0].before is None and rows[0].after["model"] == "m"
        rows = rows[1:]
        assert (rows[0].before["model"], rows[0].after["model"]) == ("m", "m2")
    assert [
        (e.action, e.actor_name or None, e.collection_slug or None, e.target) for e in rows
    ] == [(expected.action, expected.actor, expected.collection, expected.target)]
    event = rows[0]
    if expected.actor is not None:
        assert event.actor_id == api_world.users[expected.actor].pk
    if expected.collection is not None:
        assert event.collection_id == Collection.objects.get(slug=expected.collection).pk
    assert PASSWORD not in json.dumps([event.before, event.after, event.detail, event.target])


def test_a_no_op_records_nothing(api_world):  # noqa: F811
    # Freezing with nothing changed, and revoking a revoked token, change nothing.
    client = api(api_world, "evaluator")
    ok(client.post(f"/api/collections/{api_world.slug}/snapshots/"), 201)
    token = _own_token(api_world)
    ok(client.delete(f"/api/tokens/{token.pk}/"), 200)
    last = AuditEvent.objects.order_by("-id").first().pk
    ok(client.post(f"/api/collections/{api_world.slug}/snapshots/"), 200)
    ok(
        page(api_world, "evaluator").post(
            "/accounts/tokens/", {"action": "revoke", "token": token.pk}
        )
    )
    assert not AuditEvent.objects.filter(id__gt=last).exists()


def test_a_conditional_or_head_qrels_request_is_no_export(api_world):  # noqa: F811
    client = api(api_world, "evaluator")
    url = f"/api/collections/{api_world.slug}/snapshots/1/qrels"
    etag = ok(client.get(url), 200)["ETag"]
    last = AuditEvent.objects.order_by("-id").first().pk
    ok(client.get(url, HTTP_IF_NONE_MATCH=etag), 304)
    ok(client.head(url), 200)
    assert not AuditEvent.objects.filter(id__gt=last).exists()


def test_the_log_never_holds_a_key(api_world, caplog):  # noqa: F811
    client = page(api_world, "evaluator")
    made = client.post("/accounts/tokens/", {"action": "create", "name": "k", "scope": "read"})
    first = made.content.decode().split('id="new-key" type="text" value="')[1].split('"')[0]
    token = ApiToken.objects.get(name="k")
    rotated = client.post("/accounts/tokens/", {"action": "rotate", "token": token.pk})
    second = rotated.content.decode().split('id="new-key" type="text" value="')[1].split('"')[0]
    new = ApiToken.objects.get(name="k", revoked_at__isnull=True)
    ok(APIClient(HTTP_AUTHORIZATION=f"Token {second}").delete(f"/api/tokens/{new.pk}/"), 200)
    rows = AuditEvent.objects.filter(action__startswith="token.", actor_name="evaluator")
    assert [e.action for e in rows.order_by("id")] == [
        "token.create",
        "token.rotate",
        "token.revoke",
    ]
    text = json.dumps([[e.target, e.before, e.after, e.detail] for e in rows]) + caplog.text
    for key in (first, second):
        assert key.startswith("vt_") and key not in text and key.split("_")[2] not in text
    assert new.prefix in text  # named by its prefix, which is not secret
