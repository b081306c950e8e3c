"""Issue 25, items 2 and 3: the settings page previews what each change will do with
real counts before applying it, and shows the history; the members page adds (by
username or e-mail), changes, grants adjudication and removes, keeping the last admin;
a removed member loses access at once, everywhere."""

from __future__ import annotations

import re
from html import unescape

import pytest
from rest_framework.test import APIClient

from audit.models import AuditEvent
from jobs.models import Job, JobKind
from judgments.models import Membership, ReviewTask, Role
from judgments.services import (
    create_api_token,
    freeze_snapshot,
    queue_unjudged,
    set_member_access,
)
from tests.factories import make_collection, make_item, make_judgment, make_query, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(client):
    boss = make_user("boss")
    c = make_collection(slug="news")
    set_member_access(collection=c, user=boss, role=Role.ADMIN)
    q = make_query(c, external_id="q1")
    items = [make_item(c, external_id=f"d{n}") for n in range(5)]
    make_judgment(query=q, item=items[0], grade=2, reviewer=boss)
    queue_unjudged(collection=c, pairs=[(q.pk, i.pk, n) for n, i in enumerate(items[1:], 1)],
                   source="run bm25")  # fmt: skip
    client.force_login(boss)
    return c, boss


def _last_settings_row():
    return AuditEvent.objects.filter(action="collection.settings").order_by("-id").first().pk


def settings_form(c, **changes):
    data = {
        "name": c.name,
        "description": c.description,
        "guidelines": c.guidelines,
        "pool_depth": c.pool_depth,
        "assessors_per_item": c.assessors_per_item,
        "resolution_policy": c.resolution_policy,
        "adjudicate_distance": c.adjudicate_distance,
        "model_labels": c.model_labels,
        "pool_strategy": c.pool_strategy,
        "pool_floor": c.pool_floor,
        "based_on": 0,
        **changes,
    }
    if c.holds_whole_corpus:
        data["holds_whole_corpus"] = "on"
    return data


def test_the_preview_counts_what_raising_assessors_opens_and_changes_nothing(client, world):
    c, _boss = world
    page = client.post("/c/news/settings/", settings_form(c, assessors_per_item=2, step="preview"))
    text = page.content.decode()
    assert page.status_code == 200
    assert (
        "Raising assessors per item to 2 opens 4 more review tasks (1 for each of the 4 open "
        "pairs) and keeps 1 judgment as its reviewers&#x27; assessments"
    ) in text
    c.refresh_from_db()
    assert c.assessors_per_item == 1 and ReviewTask.objects.filter(collection=c).count() == 4
    assert not AuditEvent.objects.filter(action="collection.settings").exists()
    applied = client.post("/c/news/settings/", settings_form(c, assessors_per_item=2, step="apply"))
    assert applied.status_code == 302
    c.refresh_from_db()
    assert c.assessors_per_item == 2 and ReviewTask.objects.filter(collection=c).count() == 8
    again = client.post("/c/news/settings/", settings_form(c, assessors_per_item=3, step="preview"))
    assert "opens 4 more review tasks (1 for each of the 4 pairs still being assessed)" in (
        again.content.decode()
    )
    c.refresh_from_db()
    client.post("/c/news/settings/", settings_form(c, assessors_per_item=3, step="apply",
                                                  based_on=_last_settings_row()))  # fmt: skip
    assert ReviewTask.objects.filter(collection=c).count() == 12  # the 4 previewed
    history = client.get("/c/news/settings/").content.decode()
    assert "collection.settings" in history and "Assessors per item: 1 → 2" in history
    assert "member.add" in history and "boss" in history


def test_the_pooling_strategy_is_previewed_applied_and_in_the_history(client, world):
    c, _boss = world
    page = client.post(
        "/c/news/settings/", settings_form(c, pool_strategy="bandit", pool_floor=5, step="preview")
    )
    text = page.content.decode()
    assert page.status_code == 200
    assert "Pooling strategy:</span> Runs imported from now on serve each query&#x27;s pooled " \
        "pairs by &#x27;bandit&#x27; (was &#x27;depth&#x27;)" in text  # fmt: skip
    assert "Depth floor:</span> Runs imported from now on have their first 5 pooled items " \
        "served before any adaptive choice (was 0)." in text  # fmt: skip
    c.refresh_from_db()
    assert (c.pool_strategy, c.pool_floor) == ("depth", 0)
    client.post("/c/news/settings/",
                settings_form(c, pool_strategy="bandit", pool_floor=5, step="apply"))  # fmt: skip
    c.refresh_from_db()
    assert (c.pool_strategy, c.pool_floor) == ("bandit", 5)
    assert 'value="bandit" selected' in client.get("/c/news/settings/").content.decode()
    # back to depth with the floor left at 5: the floor goes back to 0 with it, shown first
    latest = _last_settings_row()
    back = client.post(
        "/c/news/settings/",
        settings_form(c, pool_strategy="depth", step="preview", based_on=latest),
    )
    assert back.status_code == 200 and "no depth floor (was their first 5)" in back.content.decode()
    client.post(
        "/c/news/settings/", settings_form(c, pool_strategy="depth", step="apply", based_on=latest)
    )
    c.refresh_from_db()
    assert (c.pool_strategy, c.pool_floor) == ("depth", 0)
    history = client.get("/c/news/settings/").content.decode()
    assert "Pooling strategy: depth → bandit" in history
    assert "Depth floor: 0 → 5" in history
    assert "Pooling strategy: bandit → depth" in history and "Depth floor: 5 → 0" in history


def test_apply_after_someone_else_changed_is_not_applied(client, world):
    c, _boss = world
    form = settings_form(c, pool_depth=50, step="apply")
    client.post("/c/news/settings/", settings_form(c, pool_depth=20, step="apply"))
    answer = client.post("/c/news/settings/", form)  # based_on 0: the preview is stale
    c.refresh_from_db()
    assert c.pool_depth == 20 and answer.status_code == 200
    assert "changed the settings since your preview" in answer.content.decode()


def test_guidelines_are_previewed_as_safe_markdown(client, world):
    c, _ = world
    answer = client.post(
        "/c/news/settings/",
        settings_form(c, guidelines="# Rules\n<script>x()</script> [a](javascript:x())",
                      step="preview"),
    )  # fmt: skip
    text = answer.content.decode()
    assert "<h1>Rules</h1>" in text and "&lt;script&gt;x()&lt;/script&gt;" in text
    assert 'href="javascript' not in text


def test_settings_and_members_pages_need_the_admin_role(client, world):
    c, _ = world
    eva = make_user("eva")
    set_member_access(collection=c, user=eva, role=Role.EVALUATOR)
    client.force_login(eva)
    for url in ("/c/news/settings/", "/c/news/members/"):
        assert client.get(url).status_code == 403
        assert client.post(url, {"action": "add", "add-user": "eva"}).status_code == 403
    assert 'href="/c/news/settings/"' not in client.get("/c/news/").content.decode()
    client.force_login(make_user("stranger"))
    assert client.get("/c/news/settings/").status_code == 404


def test_members_are_added_by_email_changed_and_the_last_admin_kept(client, world):
    c, boss = world
    make_user("ana", email="Ana@Example.org")
    answer = client.post(
        "/c/news/members/",
        {"action": "add", "add-user": "ana@example.org", "add-role": "reviewer",
         "add-can_adjudicate": "on"},
    )  # fmt: skip
    assert answer.status_code == 302
    ana = Membership.objects.get(collection=c, user__username="ana")
    assert (ana.role, ana.can_adjudicate) == ("reviewer", True)
    unknown = client.post("/c/news/members/", {"action": "add", "add-user": "nobody",
                                              "add-role": "reviewer"})  # fmt: skip
    assert unknown.status_code == 400 and "no account has the username" in unknown.content.decode()
    client.post("/c/news/members/", {"action": "save", "username": "ana", "role": "evaluator"})
    ana.refresh_from_db()
    assert (ana.role, ana.can_adjudicate) == ("evaluator", False)
    refused = client.post("/c/news/members/", {"action": "remove", "username": "boss"}, follow=True)
    assert "boss is the last admin of &#x27;news&#x27; and cannot be removed" in (
        refused.content.decode()
    )
    assert Membership.objects.filter(collection=c, user=boss, role=Role.ADMIN).exists()


def test_a_removed_member_loses_access_at_once_everywhere(client, world):
    c, _boss = world
    eva = make_user("eva")
    set_member_access(collection=c, user=eva, role=Role.EVALUATOR)
    job = Job.objects.create(kind=JobKind.QRELS_EXPORT, label="x", collection=c, created_by=eva,
                             task_path="x", params={"snapshot": 1})  # fmt: skip
    freeze_snapshot(collection=c, by=None)
    key = create_api_token(user=eva, name="ci").key
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    eva_client = type(client)()
    eva_client.force_login(eva)
    doors = ["/c/news/", "/c/news/review/", "/c/news/snapshots/", "/c/news/q/q1/"]
    api_doors = ["/api/collections/news/", "/api/collections/news/queries/",
                 "/api/collections/news/snapshots/", "/api/collections/news/snapshots/1/qrels",
                 f"/api/jobs/{job.pk}/"]  # fmt: skip
    assert [eva_client.get(u).status_code for u in doors] == [200] * 4
    assert [api.get(u).status_code for u in api_doors] == [200] * 5
    assert eva_client.get(f"/jobs/{job.pk}/").status_code == 200
    client.post("/c/news/members/", {"action": "remove", "username": "eva"})
    assert not Membership.objects.filter(collection=c, user=eva).exists()
    assert [eva_client.get(u).status_code for u in doors] == [404] * 4
    assert [api.get(u).status_code for u in api_doors] == [404] * 5
    assert eva_client.get(f"/jobs/{job.pk}/").status_code == 404
    assert "news" not in eva_client.get("/").content.decode()


def test_an_admin_who_demotes_themselves_lands_on_the_collection(client, world):
    c, boss = world
    other = make_user("other")
    set_member_access(collection=c, user=other, role=Role.ADMIN)
    answer = client.post("/c/news/members/", {"action": "save", "username": "boss",
                                              "role": "reviewer"})  # fmt: skip
    assert answer.status_code == 302 and answer["Location"] == "/c/news/"
    assert Membership.objects.get(collection=c, user=boss).role == Role.REVIEWER
    assert client.get("/c/news/members/").status_code == 403


def history_rows(client) -> list[tuple[str, str, str]]:
    """The settings page's history table: (who, what, before → after), newest first;
    every row says when, to the second."""
    page = client.get("/c/news/settings/").content.decode()
    body = page.split('<table class="data history">', 1)[1].split("</table>", 1)[0]
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", body.split("<tbody>", 1)[1], re.S):
        when, *cells = re.findall(r"<td.*?>(.*?)</td>", tr, re.S)
        assert re.search(r'<time datetime="\d{4}-\d\d-\d\dT[\d:]+', when), when
        who, what, values = (" ".join(unescape(re.sub(r"<[^>]+>", " ", c)).split()) for c in cells)
        rows.append((who, what, values))
    return rows


def test_every_membership_change_is_on_the_settings_history_with_who_before_after(client, world):
    c, _boss = world
    make_user("ana", email="ana@example.org")
    before = len(history_rows(client))
    client.post("/c/news/members/",
                {"action": "add", "add-user": "ana", "add-role": "reviewer"})  # fmt: skip
    client.post("/c/news/members/", {"action": "save", "username": "ana", "role": "evaluator"})
    client.post("/c/news/members/", {"action": "save", "username": "ana", "role": "evaluator",
                                     "can_adjudicate": "on"})  # fmt: skip
    client.post("/c/news/members/", {"action": "save", "username": "ana", "role": "evaluator"})
    client.post("/c/news/members/", {"action": "remove", "username": "ana"})
    client.post("/c/news/settings/", settings_form(c, pool_strategy="mtf", pool_floor=3,
                                                   step="apply", based_on=0))  # fmt: skip
    rows = history_rows(client)
    assert len(rows) == before + 6
    assert rows[:6] == [
        ("boss", "collection.settings", "Pooling strategy: depth → mtf Depth floor: 0 → 3"),
        ("boss", "member.remove ana", "Role: evaluator → — May adjudicate: no → —"),
        ("boss", "member.adjudicate ana", "May adjudicate: yes → no"),
        ("boss", "member.adjudicate ana", "May adjudicate: no → yes"),
        ("boss", "member.role ana", "Role: reviewer → evaluator"),
        ("boss", "member.add ana", "Role: — → reviewer May adjudicate: — → no"),
    ]
