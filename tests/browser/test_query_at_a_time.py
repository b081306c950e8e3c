"""Issue 13's acceptance in a real Chromium, on the demo as the `reviewer` user: review one
query to the end with the keyboard only, settle its status with one key, see it counted
as scorable in the next snapshot; then find an item by search from the query page and
judge it. Each step checks the database, not only the page.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from playwright.sync_api import expect

from judgments.models import (
    ChangeSource,
    Collection,
    Judgment,
    JudgmentChange,
    Query,
    QueryStatus,
    QueryStatusChange,
    ReviewTask,
    SnapshotQuery,
)
from judgments.services import freeze_snapshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MAX_ITEMS = 60  # far above any demo query's queue; a bound, so a bug cannot loop forever


@pytest.fixture
def demo(settings):
    settings.DEBUG = True  # create_demo_users refuses otherwise
    call_command("load_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115
    return Collection.objects.get(slug="demo-handbook")


def scorable(snapshot) -> set[str]:
    return set(
        SnapshotQuery.objects.of(snapshot)
        .filter(status=QueryStatus.RELEVANT)
        .values_list("query__external_id", flat=True)
    )


def test_one_query_to_the_end_by_keyboard_then_search_and_judge(page, login, demo):
    reviewer = get_user_model().objects.get(username="reviewer")
    before, _ = freeze_snapshot(collection=demo, by=None)
    login(page, reviewer)
    page.goto("/c/demo-handbook/review/")
    qid = page.locator(".query-card .eyebrow code").inner_text()
    query = Query.objects.get(collection=demo, external_id=qid)
    assert query.status == QueryStatus.UNREVIEWED  # the demo's top task is an open query
    n_open = ReviewTask.objects.filter(query=query, status__in=["pending", "claimed"]).count()
    page.evaluate("window.__sameDocument = true")

    judged = []
    for n in range(MAX_ITEMS):
        if page.locator(".query-done").count():
            break
        # The queue stays on the query until none of its items is open.
        expect(page.locator(".query-card .eyebrow code")).to_have_text(qid)
        item = page.locator(".item-card .eyebrow code").inner_text()
        page.keyboard.press("2" if n == 0 else "0")
        expect(page.locator("#queue-status")).to_contain_text(f"item '{item}'")
        judged.append(item)
    assert len(judged) == n_open
    done = page.locator(".query-done")
    expect(done).to_contain_text(f"Query {qid}: every item is judged")
    expect(done).to_contain_text("1 relevant")
    expect(done.locator("[data-key=y]")).to_contain_text("has relevant items")

    page.keyboard.press("y")  # settle the status with one key
    expect(page.locator("#queue-status")).to_contain_text(
        f"Query '{qid}' is now 'reviewed: has relevant items'"
    )
    expect(page.locator(".query-card .eyebrow code")).not_to_have_text(qid)  # the next query
    assert page.evaluate("window.__sameDocument") is True  # keys only, no page load
    query.refresh_from_db()
    assert query.status == QueryStatus.RELEVANT
    change = QueryStatusChange.objects.get(query=query)
    assert (change.new_status, change.changed_by, change.source) == (
        QueryStatus.RELEVANT,
        reviewer,
        ChangeSource.UI,
    )
    grades = dict(
        Judgment.objects.filter(query=query, reviewer=reviewer).values_list(
            "item__external_id", "grade"
        )
    )
    assert grades == {item: 2 if n == 0 else 0 for n, item in enumerate(judged)}

    after, _ = freeze_snapshot(collection=demo, by=None)
    assert qid not in scorable(before)
    assert scorable(after) == scorable(before) | {qid}

    # Search from the query page: an item that no run surfaced for this query.
    seen = set(Judgment.objects.filter(query=query).values_list("item_id", flat=True))
    seen |= set(ReviewTask.objects.filter(query=query).values_list("item_id", flat=True))
    target = demo.items.exclude(pk__in=seen).exclude(title="").order_by("external_id").first()
    words = " ".join(re.findall(r"\w+", target.title)[:4])
    page.goto(f"/c/demo-handbook/q/{qid}/")
    page.keyboard.press("/")
    expect(page.get_by_label("Words or item id")).to_be_focused()
    page.keyboard.type(words)
    page.keyboard.press("Enter")
    row = page.locator(f"#hit-{target.pk}")
    expect(row).to_contain_text("unjudged, not surfaced by any run")
    page.wait_for_load_state("load")  # the keys' script is deferred: listening only then
    row.focus()  # the hit in focus, as j/k would put it
    expect(row).to_be_focused()
    page.keyboard.press("1")
    expect(page.get_by_role("status")).to_contain_text(
        f"Saved 1 related for item '{target.external_id}'"
    )
    expect(page.locator(f"#hit-{target.pk}")).to_contain_text("judged: 1 related")
    expect(page.locator(f"#hit-{target.pk}")).to_be_focused()
    judgment = Judgment.objects.get(query=query, item=target)
    assert (judgment.grade, judgment.reviewer) == (1, reviewer)
    history = JudgmentChange.objects.get(query=query, item=target)
    assert (history.new_grade, history.source) == (1, ChangeSource.SEARCH)


def test_back_after_grading_shows_the_queue_as_it_is_now(page, login, demo):
    reviewer = get_user_model().objects.get(username="reviewer")
    login(page, reviewer)
    page.goto("/c/demo-handbook/review/")
    first = page.locator(".item-card .eyebrow code").inner_text()
    page.keyboard.press("0")
    expect(page.locator("#queue-status")).to_contain_text(f"item '{first}'")
    second = page.locator(".item-card .eyebrow code").inner_text()
    assert second != first
    page.goto("/c/demo-handbook/")  # leave the queue, then come back with Back
    page.go_back()
    # Restored from the back/forward cache or loaded again: either way, the queue as it is
    # now, not the page as it was left (the judged item, "you judged 0").
    expect(page.locator(".item-card .eyebrow code")).to_have_text(second)
    expect(page.locator('[data-progress="judged_session"]')).to_have_text("1")
    page.keyboard.press("0")
    expect(page.locator("#queue-status")).to_contain_text(
        f"Saved 0 not relevant for item '{second}'"
    )
    assert JudgmentChange.objects.filter(changed_by=reviewer, source=ChangeSource.UI).count() == 2
