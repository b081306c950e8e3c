"""Local password logins in the audit log: one ``login`` row per login over HTTP, one
``login.failed`` row per refused try (a django-axes lock-out included) naming the
username tried and never the password; nothing for logins that are not a person typing
a password (the test client's force_login, another backend such as single sign-on)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import login
from django.test import Client, RequestFactory

from audit.models import AuditEvent
from jobs.models import Job, JobKind, JobState
from jobs.services import record_cancelled
from tests.factories import make_collection, make_user

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"


@pytest.fixture
def alice():
    user = make_user("alice")
    user.set_password(PASSWORD)
    user.save()
    return user


def rows() -> list[tuple[str, str, str, str | None]]:
    return [
        (e.action, e.actor_name, e.target, e.address) for e in AuditEvent.objects.order_by("id")
    ]


def test_a_login_and_a_wrong_password_are_one_row_each(alice):
    client = Client(REMOTE_ADDR="192.0.2.7")
    assert (
        client.post("/accounts/login/", {"username": "alice", "password": "nope"}).status_code
        == 200
    )
    assert (
        client.post("/accounts/login/", {"username": "alice", "password": PASSWORD}).status_code
        == 302
    )
    assert rows() == [
        ("login.failed", "", "alice", "192.0.2.7"),
        ("login", "alice", "alice", "192.0.2.7"),
    ]
    assert "nope" not in json.dumps(
        [[e.before, e.after, e.detail] for e in AuditEvent.objects.all()]
    )


def test_a_locked_out_try_is_one_row_too(alice, settings):
    settings.AXES_FAILURE_LIMIT = 2
    client = Client()
    statuses = [
        client.post("/accounts/login/", {"username": "alice", "password": f"guess{n}"}).status_code
        for n in range(3)
    ]
    locked = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert statuses[-1] == 429 and locked.status_code == 429
    assert [r[:3] for r in rows()] == [("login.failed", "", "alice")] * 4


def test_the_admins_login_page_is_audited_the_same(alice):
    alice.is_staff = True
    alice.save()
    client = Client()
    client.post("/admin/login/", {"username": "alice", "password": "x"})
    client.post("/admin/login/", {"username": "alice", "password": PASSWORD})
    assert [r[:3] for r in rows()] == [("login.failed", "", "alice"), ("login", "alice", "alice")]


def test_a_logged_in_user_is_not_a_login_when_no_password_was_typed(alice):
    Client().force_login(alice)  # the test client: no request, no password
    assert Client().login(username="alice", password=PASSWORD)  # no request either
    request = RequestFactory().get("/oidc/callback/")
    request.session = Client().session
    login(request, alice, backend="mozilla_django_oidc.auth.OIDCAuthenticationBackend")
    assert rows() == []  # single sign-on records its own logins


def test_a_running_jobs_cancel_is_recorded_by_the_worker_when_it_happens():
    collection = make_collection(slug="c1")
    ana = make_user("ana")
    job = Job.objects.create(
        kind=JobKind.SNAPSHOT_FREEZE,
        state=JobState.RUNNING,
        collection=collection,
        created_by=ana,
        label="Freeze",
        task_path="judgments.tasks.freeze_task",
    )
    assert record_cancelled(job, {"by": ana.pk, "via": "api"})
    assert not record_cancelled(job, {"by": ana.pk, "via": "api"})  # ended: no second row
    event = AuditEvent.objects.exclude(action="collection.create").get()  # (make_collection's)
    assert (event.action, event.actor_name, event.collection_slug, event.target) == (
        "job.cancel",
        "ana",
        "c1",
        f"job {job.pk}",
    )
    assert event.detail["via"] == "api"
