"""Issue 28's acceptance in a real Chromium: an evaluator opens a comparison that is not
settled, queues the pairs that could flip it, a reviewer judges them from the scoped
queue, a new snapshot is frozen, and the comparison (on the new snapshot) reads settled.

The example is ``tests/scoring/settle_helpers`` (worked by hand in its docstring): P@2 of
run-a minus run-b on v1 could go from -.5 to +.25, through q1/u1, q2/u2, q2/u3. The
evaluator works at 390 px, and axe-core checks the new elements there.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from judgments.models import Judgment, ReviewTask, Role
from judgments.services import freeze_snapshot, set_membership
from judgments.services.pooling import URGENT_PRIORITY
from tests.factories import make_user
from tests.scoring.settle_helpers import SETTLING_GRADES, build

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def axe_clean(page) -> None:
    from axe_playwright_python.sync_playwright import Axe

    violations = Axe().run(page).response["violations"]
    assert not violations, [(v["id"], [n["target"] for n in v["nodes"][:3]]) for v in violations]
    scroll, client = page.evaluate(
        "[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]"
    )
    assert scroll <= client, f"{page.url} scrolls sideways at 390 px ({scroll} > {client})"


def test_an_unsettled_comparison_is_settled_by_judging_its_pairs(
    new_page, login, tmp_path, settings, job_dir
):
    # Jobs ("compare on v2") run when their request commits, in the live server.
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    ex = build(tmp_path)
    evaluator, reviewer = make_user("eva"), make_user("rev")
    set_membership(collection=ex["collection"], user=evaluator, role=Role.EVALUATOR)
    set_membership(collection=ex["collection"], user=reviewer, role=Role.REVIEWER)
    a, b = ex["ev"]["run-a"], ex["ev"]["run-b"]

    # The evaluator, on a phone-sized screen: not settled, three pairs could flip it.
    page = new_page()
    page.set_viewport_size({"width": 390, "height": 800})
    login(page, evaluator)
    page.goto(f"/c/settle/compare/?a={a.pk}&b={b.pk}")
    summary = page.locator("#settled-summary")
    expect(summary).to_contain_text("Not settled on snapshot v1: 3 unjudged pairs could change")
    # P@2 is a rate: differences in percentage points
    row = page.locator("#settled-table tr[data-measure='P@2']")
    expect(row).to_contain_text("[-50.00 pp, +25.00 pp]")
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    pairs = page.locator("[data-pairs='P@2'] li")
    expect(pairs).to_have_text(["q1 · u1", "q2 · u2", "q2 · u3"])
    axe_clean(page)

    page.get_by_role("button", name="Queue these 3 pairs first for review").click()
    page.wait_for_load_state("load")
    expect(page.locator(".messages")).to_contain_text("Queued 3 pairs first in the review queue")
    focus = page.locator("#focus-state")
    expect(focus).to_contain_text("0 of 3 pairs judged now")
    axe_clean(page)
    review_url = focus.get_by_role("link").get_attribute("href")
    assert review_url == f"/c/settle/review/?scope=compare-{a.pk}-{b.pk}"
    urgent = ReviewTask.objects.filter(collection=ex["collection"], priority=URGENT_PRIORITY)
    assert sorted(urgent.values_list("query__external_id", "item__external_id")) == sorted(
        SETTLING_GRADES
    )

    # The reviewer, pointed at the scope, judges exactly those pairs with the keyboard.
    rpage = new_page()
    rpage.set_viewport_size({"width": 390, "height": 800})
    login(rpage, reviewer)
    rpage.goto(review_url)
    expect(rpage.locator(".scope")).to_contain_text(f"compare-{a.pk}-{b.pk}")
    seen = []
    for _ in range(len(SETTLING_GRADES) + 2):  # a bound: a bug cannot loop forever
        rpage.locator("[data-task], .query-done, .empty-queue").first.wait_for()
        if rpage.locator(".empty-queue").count():
            break
        if rpage.locator(".query-done").count():
            rpage.keyboard.press("l")
            continue
        qid = rpage.locator(".query-card .eyebrow code").inner_text()
        item = rpage.locator(".item-card .eyebrow code").inner_text()
        if not seen:
            axe_clean(rpage)
        rpage.keyboard.press(str(SETTLING_GRADES[(qid, item)]))
        expect(rpage.locator("#queue-status")).to_contain_text(f"item '{item}'")
        seen.append((qid, item))
    expect(rpage.locator(".empty-queue")).to_contain_text(
        f"Nothing left to judge in compare-{a.pk}-{b.pk}"
    )
    assert sorted(seen) == sorted(SETTLING_GRADES)
    judged = Judgment.objects.filter(query__collection=ex["collection"], reviewer=reviewer)
    assert {
        (q, i): g
        for q, i, g in judged.values_list("query__external_id", "item__external_id", "grade")
    } == SETTLING_GRADES

    # A new snapshot is frozen; the comparison on v1 stays pinned and offers v2.
    freeze_snapshot(collection=ex["collection"], by=evaluator)
    page.goto(f"/c/settle/compare/?a={a.pk}&b={b.pk}")
    expect(page.locator("#focus-state")).to_contain_text("3 of 3 pairs judged now")
    expect(page.locator("#newer-snapshot")).to_contain_text("Snapshot v2 is newer than v1")
    axe_clean(page)
    page.get_by_role("button", name="Compare on v2").click()
    page.wait_for_load_state("load")
    if "/compare/" not in page.url:  # the job's page, the job done: its link
        page.get_by_role("link", name="Open the comparison on v2").click()
    page.wait_for_url(re.compile(r"/c/settle/compare/\?a=\d+&b=\d+"))
    expect(page.locator(".lede")).to_contain_text("snapshot v2")
    expect(page.locator("#settled-summary")).to_contain_text("Settled on snapshot v2")
    row = page.locator("#settled-table tr[data-measure='P@2']")
    expect(row).to_have_attribute("data-verdict", "a")
    expect(row).to_contain_text("settled: a is better whatever the unjudged items are")
    expect(row).to_contain_text("[+25.00 pp, +25.00 pp]")
    axe_clean(page)
