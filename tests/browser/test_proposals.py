"""Issue 16 in a real Chromium: the review queue shows a model's proposal; "a" accepts
it, another grade's key overrides it, and both decisions are stored with the judgment
(the grade form carries the shown proposal's id through the page's script)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from judges.models import DecisionOutcome, ProposalDecision
from judgments.models import Judgment
from judgments.services import queue_unjudged, set_membership
from tests.factories import make_collection, make_item, make_proposal, make_query, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_accept_with_a_and_override_with_a_digit_are_both_recorded(page, login):
    collection = make_collection(slug="handbook", name="Handbook")
    query = make_query(collection, external_id="q-vpn", text="How long can a VPN stay idle?")
    items = [make_item(collection, external_id=f"d{n}") for n in (1, 2)]
    queue_unjudged(
        collection=collection,
        pairs=[(query.pk, item.pk, rank) for rank, item in enumerate(items, 1)],
        source="run bm25",
    )
    for item in items:
        make_proposal(query=query, item=item, grade=2, rationale="cosine similarity 0.61")
    ana = make_user("ana")
    set_membership(collection=collection, user=ana, role="reviewer")
    login(page, ana)
    page.goto("/c/handbook/review/")

    expect(page.locator(".item-card .eyebrow code")).to_have_text("d1")
    expect(page.locator(".proposal")).to_contain_text("Proposed by model judge local-baseline")
    page.keyboard.press("a")
    expect(page.locator(".item-card .eyebrow code")).to_have_text("d2")
    page.keyboard.press("0")
    expect(page.locator("#queue-status")).to_contain_text("item 'd2'")

    decisions = dict(ProposalDecision.objects.values_list("proposal__item__external_id", "outcome"))
    assert decisions == {"d1": DecisionOutcome.ACCEPTED, "d2": DecisionOutcome.OVERRIDDEN}
    grades = dict(Judgment.objects.values_list("item__external_id", "grade"))
    assert grades == {"d1": 2, "d2": 0}
