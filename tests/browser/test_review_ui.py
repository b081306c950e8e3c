"""The reviewer's UI in a real Chromium: keyboard-only labeling, undo, the status refusal
and a stale edit between two reviewers. Each test checks the database, not only the page.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from judgments.models import (
    ChangeSource,
    Judgment,
    JudgmentChange,
    QueryStatus,
    ReviewTask,
    TaskStatus,
)
from judgments.services import queue_unjudged, set_membership
from tests.factories import make_collection, make_item, make_judgment, make_query, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GUIDELINES = "Judge the text, not the title. Grades 2 and 3 count as relevant."


@pytest.fixture
def handbook():
    """A graded collection (0..3, relevant from 2) with one query and four queued items,
    served in the order of their rank."""
    collection = make_collection(slug="handbook", name="Handbook", guidelines=GUIDELINES)
    query = make_query(
        collection, external_id="q-vpn", text="How long can a VPN session stay idle?"
    )
    items = [
        make_item(
            collection,
            external_id=f"d{n}",
            title=f"VPN page {n}",
            text=f"An idle VPN session disconnects after {n} hours.",
        )
        for n in range(1, 5)
    ]
    queue_unjudged(
        collection=collection,
        pairs=[(query.pk, item.pk, rank) for rank, item in enumerate(items, 1)],
        source="run bm25",
    )
    return collection


def member(collection, username: str):
    user = make_user(username)
    set_membership(collection=collection, user=user, role="reviewer")
    return user


def shown_item(page) -> str:
    return page.locator(".item-card .eyebrow code").inner_text()


def test_reviewer_labels_three_items_by_keyboard_and_undoes_one(page, login, handbook):
    ana = member(handbook, "ana")
    login(page, ana)
    page.goto("/c/handbook/review/")
    expect(page.locator(".query-text")).to_have_text("How long can a VPN session stay idle?")
    expect(page.locator(".item-text mark").first).to_have_text("idle")
    # no run bm25 is stored in this collection: the source says so (issue 24 item 13)
    expect(
        page.get_by_text("run bm25 (named by imported labels; no such run is stored here), rank 1")
    ).to_be_visible()
    # A marker on the window survives only if no key reloads the page.
    page.evaluate("window.__sameDocument = true")

    for key, item in (("3", "d1"), ("0", "d2"), ("2", "d3")):
        expect(page.locator(".item-card .eyebrow code")).to_have_text(item)
        page.keyboard.press(key)
        expect(page.locator("#queue-status")).to_contain_text(f"item '{item}'")
    expect(page.locator(".item-card .eyebrow code")).to_have_text("d4")
    expect(page.locator('[data-progress="judged_session"]')).to_have_text("3")
    expect(page.locator('[data-progress="open"]')).to_have_text("1")
    assert page.evaluate("window.__sameDocument") is True

    grades = dict(Judgment.objects.filter(reviewer=ana).values_list("item__external_id", "grade"))
    assert grades == {"d1": 3, "d2": 0, "d3": 2}
    history = list(
        JudgmentChange.objects.order_by("pk").values_list(
            "item__external_id", "old_grade", "new_grade", "changed_by", "source"
        )
    )
    assert history == [
        ("d1", None, 3, ana.pk, ChangeSource.UI),
        ("d2", None, 0, ana.pk, ChangeSource.UI),
        ("d3", None, 2, ana.pk, ChangeSource.UI),
    ]

    page.keyboard.press("u")
    expect(page.locator("#queue-status")).to_contain_text("Undone: 2 relevant for item 'd3'")
    expect(page.locator(".item-card .eyebrow code")).to_have_text("d3")  # back to judge
    expect(page.locator('[data-progress="judged_session"]')).to_have_text("2")
    assert not Judgment.objects.filter(item__external_id="d3").exists()
    assert JudgmentChange.objects.order_by("pk").last().new_grade is None
    task = ReviewTask.objects.get(item__external_id="d3")
    assert (task.status, task.claimed_by) == (TaskStatus.CLAIMED, ana)

    page.keyboard.press("1")  # judge it again, correctly this time
    expect(page.locator(".item-card .eyebrow code")).to_have_text("d4")
    assert Judgment.objects.get(item__external_id="d3").grade == 1
    assert page.evaluate("window.__sameDocument") is True


def test_keys_wait_while_typing_and_the_help_dialog(page, login, handbook):
    ana = member(handbook, "ana")
    login(page, ana)
    page.goto("/c/handbook/review/")
    expect(page.locator(".item-card .eyebrow code")).to_have_text("d1")

    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("3 perfect")
    page.keyboard.press("2")  # keys do nothing while the dialog is open
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert not Judgment.objects.exists()

    page.keyboard.press("n")
    expect(page.get_by_label("Note")).to_be_focused()
    page.keyboard.type("3 hours, says the 2024 page")  # digits typed here grade nothing
    page.keyboard.press("Enter")  # hands the keys back; submits nothing
    expect(page.get_by_label("Note")).not_to_be_focused()
    assert not Judgment.objects.exists()

    page.keyboard.press("g")
    expect(page.get_by_text(GUIDELINES)).to_be_visible()

    page.keyboard.press("2")
    expect(page.locator(".item-card .eyebrow code")).to_have_text("d2")
    judgment = Judgment.objects.get(item__external_id="d1")
    assert (judgment.grade, judgment.note) == (2, "3 hours, says the 2024 page")
    expect(page.get_by_text(GUIDELINES)).to_be_visible()  # stays open for the next item

    page.keyboard.press("s")
    expect(page.locator(".item-card .eyebrow code")).to_have_text("d3")
    assert ReviewTask.objects.get(item__external_id="d2").status == TaskStatus.PENDING


def test_confirmed_no_answer_is_refused_while_a_relevant_judgment_exists(page, login, handbook):
    ana = member(handbook, "ana")
    query = handbook.queries.get()
    item = handbook.items.get(external_id="d1")
    make_judgment(query=query, item=item, grade=2, reviewer=ana)
    login(page, ana)
    page.goto("/c/handbook/q/q-vpn/")

    no_answer = page.get_by_role("button", name="Reviewed: confirmed no answer")
    no_answer.focus()
    page.keyboard.press("Enter")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Status not changed")
    expect(alert).to_contain_text("has 1 relevant judgment(s), so it cannot be marked")
    query.refresh_from_db()
    assert query.status == QueryStatus.UNREVIEWED

    # Regrade the item in place (keyboard only), then the status is accepted.
    page.get_by_label("Grade of item d1").select_option("0")
    page.get_by_role("button", name="Save item d1").press("Enter")
    expect(page.get_by_role("status")).to_contain_text("Saved 0 not relevant for item 'd1'")
    page.get_by_role("button", name="Reviewed: confirmed no answer").press("Enter")
    expect(page.get_by_role("status")).to_contain_text("confirmed no answer")
    query.refresh_from_db()
    assert query.status == QueryStatus.NO_ANSWER
    assert Judgment.objects.get(item=item).grade == 0


def test_stale_edit_shows_both_values_and_waits_for_a_choice(new_page, login, handbook):
    ana, ben = member(handbook, "ana"), member(handbook, "ben")
    query = handbook.queries.get()
    item = handbook.items.get(external_id="d1")
    make_judgment(query=query, item=item, grade=2, reviewer=ana)
    page_ana, page_ben = new_page(), new_page()
    login(page_ana, ana)
    login(page_ben, ben)
    page_ana.goto("/c/handbook/q/q-vpn/")
    page_ben.goto("/c/handbook/q/q-vpn/")

    page_ben.get_by_label("Grade of item d1").select_option("3")
    page_ben.get_by_label("Note on item d1").fill("complete answer")
    page_ben.get_by_role("button", name="Save item d1").click()
    expect(page_ben.get_by_role("status")).to_contain_text("Saved 3 perfect for item 'd1'")

    page_ana.get_by_label("Grade of item d1").select_option("1")
    page_ana.get_by_role("button", name="Save item d1").click()
    conflict = page_ana.locator("#conflict")
    expect(conflict).to_contain_text("changed since you loaded this page")
    expect(conflict.locator(".mine")).to_contain_text("1 related")
    expect(conflict.locator(".theirs")).to_contain_text("3 perfect")
    expect(conflict.locator(".theirs")).to_contain_text("by ben")
    expect(conflict.locator(".theirs")).to_contain_text("complete answer")
    expect(page_ana.get_by_role("link", name="Keep theirs")).to_be_focused()
    judgment = Judgment.objects.get(item=item)
    assert (judgment.grade, judgment.reviewer, judgment.version) == (3, ben, 2)

    page_ana.get_by_role("button", name="Apply mine anyway").click()
    expect(page_ana.get_by_role("status")).to_contain_text("Saved 1 related for item 'd1'")
    judgment.refresh_from_db()
    assert (judgment.grade, judgment.reviewer, judgment.version) == (1, ana, 3)
    assert list(
        JudgmentChange.objects.filter(item=item).values_list("new_grade", "changed_by")
    ) == [(2, ana.pk), (3, ben.pk), (1, ana.pk)]
    expect(page_ana.get_by_label("Grade of item d1")).to_have_value("1")
    assert re.search(r"#item-\d+$", page_ana.url)


# -- claiming: a POST, never a GET -----------------------------------------------------------


def test_without_javascript_enter_claims_and_the_page_shows_the_task(
    browser, live_server, login, handbook
):
    ana = member(handbook, "ana")
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        page = context.new_page()
        login(page, ana)
        page.goto("/c/handbook/review/")
        start = page.get_by_role("button", name="Start reviewing")
        expect(start).to_be_focused()  # autofocus: Enter is the one key needed
        assert not ReviewTask.objects.filter(claimed_by=ana).exists()  # the GET claimed nothing
        page.keyboard.press("Enter")
        expect(page.locator(".item-card .eyebrow code")).to_have_text("d1")
        assert page.url.endswith("/c/handbook/review/")  # 303 back to the page (PRG)
        task = ReviewTask.objects.get(item__external_id="d1")
        assert (task.status, task.claimed_by) == (TaskStatus.CLAIMED, ana)
        page.reload()  # a reload shows the held task again and claims nothing more
        expect(page.locator(".item-card .eyebrow code")).to_have_text("d1")
        assert ReviewTask.objects.filter(claimed_by=ana).count() == 1

        page.get_by_role("button", name="2 relevant").press("Enter")
        expect(page.locator(".item-card .eyebrow code")).to_have_text("d2")
        assert Judgment.objects.get(item__external_id="d1").grade == 2
    finally:
        context.close()


def test_leave_a_finished_query_with_l_claims_the_next_query(page, login, handbook):
    ana = member(handbook, "ana")
    other = make_query(handbook, external_id="q-sso", text="How do I reset my SSO password?")
    item = make_item(handbook, external_id="s1", title="SSO reset", text="Reset it here.")
    queue_unjudged(collection=handbook, pairs=[(other.pk, item.pk, 1)], source="run bm25")
    login(page, ana)
    page.goto("/c/handbook/review/")
    for n in range(1, 5):
        expect(page.locator(".item-card .eyebrow code")).to_have_text(f"d{n}")
        page.keyboard.press("0")
    expect(page.locator(".query-done")).to_contain_text("Query q-vpn: every item is judged")
    assert not ReviewTask.objects.filter(claimed_by=ana, status=TaskStatus.CLAIMED).exists()
    page.keyboard.press("l")  # leave it unreviewed: a POST that claims the next query's item
    expect(page.locator(".item-card .eyebrow code")).to_have_text("s1")
    task = ReviewTask.objects.get(item=item)
    assert (task.status, task.claimed_by) == (TaskStatus.CLAIMED, ana)
    assert handbook.queries.get(external_id="q-vpn").status == QueryStatus.UNREVIEWED


def test_back_after_the_lease_ran_out_claims_again(page, login, handbook):
    ana = member(handbook, "ana")
    login(page, ana)
    page.goto("/c/handbook/review/")
    expect(page.locator(".item-card .eyebrow code")).to_have_text("d1")
    page.goto("/c/handbook/")
    # Away too long: the lease ran out and the task went back to the queue.
    ReviewTask.objects.filter(claimed_by=ana).update(
        status=TaskStatus.PENDING, claimed_by=None, lease_expires_at=None
    )
    page.go_back()
    # Loaded again or restored from the back/forward cache and refreshed: either way the
    # page holds nothing now, so the script claims again, and gets d1, the top task.
    expect(page.locator(".item-card .eyebrow code")).to_have_text("d1")
    expect(page.locator('[data-progress="claimed"]')).to_have_text("1")
    task = ReviewTask.objects.get(item__external_id="d1")
    assert (task.status, task.claimed_by) == (TaskStatus.CLAIMED, ana)
    page.keyboard.press("3")
    expect(page.locator("#queue-status")).to_contain_text("Saved 3 perfect for item 'd1'")


def test_the_open_count_reads_more_than_1000_above_the_cap_and_exact_below(page, login):
    """1,001 open tasks: the page says "more than 1,000 open tasks" (a capped count), and
    after one key press, with 1,000 open, the script shows the exact number."""
    collection = make_collection(slug="big", name="Big queue")
    query = make_query(collection, external_id="q1", text="idle VPN session")
    items = [make_item(collection, external_id=f"d{n:04d}", text="idle") for n in range(1001)]
    queue_unjudged(
        collection=collection,
        pairs=[(query.pk, item.pk, rank) for rank, item in enumerate(items, 1)],
        source="run bm25",
    )
    login(page, member(collection, "ana"))
    page.goto("/c/big/review/")
    expect(page.locator(".item-card .eyebrow code")).to_have_text("d0000")
    expect(page.locator("#queue-progress")).to_contain_text("more than 1,000 open tasks")
    page.keyboard.press("0")
    expect(page.locator(".item-card .eyebrow code")).to_have_text("d0001")
    expect(page.locator('[data-progress="open"]')).to_have_text("1000")
    expect(page.locator("#queue-progress")).to_contain_text("1000 open tasks")
    assert ReviewTask.objects.exclude(status=TaskStatus.DONE).count() == 1000
