"""Reading the audit log: a collection's admins read its rows (``/c/<slug>/audit/``),
superusers every row (``/audit/``); filterable, paginated, exported as JSON Lines under
the same filters; and nobody else reads a collection's log (issue 27's acceptance: no role
other than superuser can read another collection's log). Reading writes nothing.
"""

from __future__ import annotations

import io
import json
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.admin.sites import site
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import record
from judgments.models import Role
from judgments.services import set_membership
from judgments.views.audit_log import ROWS_PER_PAGE
from tests.factories import make_collection, make_user

pytestmark = pytest.mark.django_db
ROLES = (Role.REVIEWER, Role.EVALUATOR, Role.ADMIN)


def _forget_the_set_up() -> None:
    """Making the collections and members is recorded too (collection.create, member.add);
    these tests read exactly the rows they write, so the set-up's go, through the one
    DELETE the log allows (retention's, see audit.services.prune)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL verity.audit_prune = 'on'")
        cursor.execute("DELETE FROM audit_auditevent")
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL verity.audit_prune = 'off'")


@pytest.fixture
def two_logs():
    """Collections ``a`` and ``b``, a member of each role in each, and rows in both
    (plus a login row of no collection)."""
    a, b = make_collection(slug="a"), make_collection(slug="b")
    users = {}
    for collection in (a, b):
        for role in ROLES:
            user = make_user(f"{collection.slug}-{role}")
            set_membership(collection=collection, user=user, role=role)
            users[(collection.slug, role)] = user
    root = make_user("root", is_superuser=True, is_staff=True)
    _forget_the_set_up()
    record("snapshot.freeze", actor=users[("a", "admin")], collection=a, target="v1")
    record("export.qrels", actor=users[("a", "evaluator")], collection=a, target="v1")
    record("member.role", actor=users[("b", "admin")], collection=b, target="secret-of-b")
    record("login", actor=users[("b", "reviewer")], target="b-reviewer")
    return {"a": a, "b": b, "users": users, "root": root}


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def body(response) -> bytes:
    if response.streaming:
        return b"".join(response.streaming_content)
    return response.content


def shown(response) -> list[str]:
    return [e.target for e in response.context["page"].object_list]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("fmt", ["", "?format=jsonl"])
def test_no_role_of_collection_a_reads_bs_log(two_logs, role, fmt):
    client = client_of(two_logs["users"][("a", role)])
    response = client.get(f"/c/b/audit/{fmt}")
    assert response.status_code == 404  # not a member of b: b is not even named
    assert b"secret-of-b" not in body(response)
    everything = client.get(f"/audit/{fmt}")
    assert everything.status_code == 403
    assert b"secret-of-b" not in body(everything)


@pytest.mark.parametrize("role", [Role.REVIEWER, Role.EVALUATOR])
def test_members_below_admin_do_not_read_their_own_collections_log(two_logs, role):
    client = client_of(two_logs["users"][("a", role)])
    for url in ("/c/a/audit/", "/c/a/audit/?format=jsonl"):
        response = client.get(url)
        assert response.status_code == 403
        assert b"admin" in response.content  # the page names the role it needs


def test_a_collection_admin_reads_only_their_collections_rows(two_logs):
    client = client_of(two_logs["users"][("a", "admin")])
    response = client.get("/c/a/audit/")
    assert response.status_code == 200
    assert shown(response) == ["v1", "v1"]
    assert [e.action for e in response.context["page"].object_list] == [
        "export.qrels",
        "snapshot.freeze",
    ]
    export = client.get("/c/a/audit/?format=jsonl")
    lines = [json.loads(line) for line in b"".join(export.streaming_content).splitlines()]
    assert export["Content-Type"] == "application/jsonl"
    assert [(r["action"], r["collection"], r["actor"]) for r in lines] == [
        ("snapshot.freeze", "a", "a-admin"),
        ("export.qrels", "a", "a-evaluator"),
    ]  # oldest first


def test_anonymous_readers_are_sent_to_log_in(two_logs):
    for url in ("/audit/", "/c/a/audit/", "/audit/?format=jsonl"):
        response = Client().get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_superuser_reads_everything_and_any_collections_log(two_logs):
    client = client_of(two_logs["root"])
    everything = client.get("/audit/")
    assert sorted(shown(everything)) == ["b-reviewer", "secret-of-b", "v1", "v1"]
    assert shown(client.get("/c/b/audit/")) == ["secret-of-b"]
    assert shown(client.get("/audit/?collection=a")) == ["v1", "v1"]


def test_filters_by_action_family_actor_and_days(two_logs):
    client = client_of(two_logs["root"])
    record("token.create", actor=two_logs["root"], target="t1")
    record("token.revoke", actor=two_logs["root"], target="t1")
    assert shown(client.get("/audit/?action=token")) == ["t1", "t1"]
    assert shown(client.get("/audit/?action=token.revoke")) == ["t1"]
    assert shown(client.get("/audit/?action=tok")) == []  # a family is a whole name
    assert shown(client.get("/audit/?actor=a-evaluator")) == ["v1"]
    today = timezone.now().date()
    assert len(shown(client.get(f"/audit/?since={today}&until={today}"))) == 6
    tomorrow = today + timedelta(days=1)
    assert shown(client.get(f"/audit/?since={tomorrow}")) == []
    assert shown(client.get(f"/audit/?until={today - timedelta(days=1)}")) == []
    export = client.get("/audit/?action=token&format=jsonl")
    assert [json.loads(x)["action"] for x in b"".join(export.streaming_content).splitlines()] == [
        "token.create",
        "token.revoke",
    ]


def test_a_bad_filter_is_refused_with_its_reason(two_logs):
    client = client_of(two_logs["root"])
    response = client.get("/audit/?since=yesterday")
    assert response.status_code == 400
    assert b"Enter a valid date" in response.content
    swapped = client.get("/audit/?since=2026-02-01&until=2026-01-01")
    assert swapped.status_code == 400 and b"swap them" in swapped.content


def test_pages_of_rows_keep_the_filters(two_logs):
    root = two_logs["root"]
    for n in range(ROWS_PER_PAGE + 3):
        record("job.retry", actor=root, target=f"job {n}")
    client = client_of(root)
    first = client.get("/audit/?action=job")
    assert len(shown(first)) == ROWS_PER_PAGE
    assert b'href="?action=job&amp;page=2"' in first.content
    second = client.get("/audit/?action=job&page=2")
    assert shown(second) == ["job 2", "job 1", "job 0"]


def test_reading_the_log_writes_nothing(two_logs):
    client = client_of(two_logs["users"][("a", "admin")])
    before = AuditEvent.objects.count()
    client.get("/c/a/audit/")
    b"".join(client.get("/c/a/audit/?format=jsonl").streaming_content)
    assert AuditEvent.objects.count() == before


def test_the_command_prints_json_lines_filtered(two_logs):
    out = io.StringIO()
    call_command("audit_log", "--collection", "a", stdout=out)
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [(r["action"], r["target"]) for r in lines] == [
        ("snapshot.freeze", "v1"),
        ("export.qrels", "v1"),
    ]
    out = io.StringIO()
    tomorrow = (timezone.now() + timedelta(days=1)).date().isoformat()
    call_command("audit_log", "--since", tomorrow, stdout=out)
    assert out.getvalue() == ""
    with pytest.raises(CommandError, match="not a date"):
        call_command("audit_log", "--since", "last week")


def test_the_command_prunes_past_the_retention(two_logs, settings):
    err = io.StringIO()
    settings.VERITY_AUDIT_RETENTION_DAYS = 0
    call_command("audit_log", "--prune", stderr=err)
    assert "kept for ever" in err.getvalue() and AuditEvent.objects.count() == 4
    later = timezone.now() + timedelta(days=31)  # rows cannot be aged: move the clock
    with mock.patch("django.utils.timezone.now", return_value=later):
        settings.VERITY_AUDIT_RETENTION_DAYS = 30
        call_command("audit_log", "--prune", stderr=(err := io.StringIO()))
    assert "Pruned 4 audit row(s) older than 30 days" in err.getvalue()
    assert AuditEvent.objects.count() == 0
    with pytest.raises(CommandError, match="at least 1"):
        call_command("audit_log", "--prune", "--days", "0")


def test_the_admin_shows_the_log_read_only_to_superusers_only(two_logs):
    admin_class = site._registry[AuditEvent]
    root, staff = two_logs["root"], make_user("staff", is_staff=True)
    request = type("R", (), {"user": root})()
    assert admin_class.has_view_permission(request)
    assert not admin_class.has_add_permission(request)
    assert not admin_class.has_change_permission(request)
    assert not admin_class.has_delete_permission(request)
    assert not admin_class.has_view_permission(type("R", (), {"user": staff})())
    client = client_of(root)
    assert client.get("/admin/audit/auditevent/").status_code == 200
    event = AuditEvent.objects.first()
    page = client.get(f"/admin/audit/auditevent/{event.pk}/change/")
    assert page.status_code == 200 and b'name="_save"' not in page.content
