"""Issue 12's acceptance in a real Chromium: two reviewers label the same pooled pairs
blind; the pair they disagree on reaches the adjudication queue; a reviewer granted the
adjudicator capability decides it with one key; the next snapshot holds the decision and
its header names the resolution policy. Each step checks the database too."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from judgments.models import (
    AdjudicationStatus,
    AdjudicationTask,
    Assessment,
    ChangeSource,
    Judgment,
    JudgmentChange,
    Snapshot,
    SnapshotJudgment,
)
from judgments.selectors import snapshot_canonical_lines
from judgments.services import (
    freeze_snapshot,
    queue_unjudged,
    set_adjudicator,
    set_membership,
    update_collection_settings,
)
from tests.factories import make_collection, make_item, make_query, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def pooled():
    collection = make_collection(slug="blind")
    update_collection_settings(
        collection=collection,
        assessors_per_item=2,
        resolution_policy="adjudicate",
        adjudicate_distance=0,
    )
    query = make_query(collection, external_id="q1", text="mrna vaccine safety")
    items = [make_item(collection, external_id=f"d{n}") for n in (1, 2)]
    queue_unjudged(
        collection=collection,
        pairs=[(query.pk, item.pk, rank) for rank, item in enumerate(items, 1)],
        source="run bm25",
    )
    return collection


def review(page, login, user, grades: dict[str, str]) -> None:
    """Log in and grade the queue's items by keyboard: item id → grade key."""
    login(page, user)
    page.goto("/c/blind/review/")
    for _ in grades:
        item = page.locator(".item-card .eyebrow code").inner_text()
        # Blind: nothing on the panel names another assessor or their grade.
        expect(page.locator(".task-side")).not_to_contain_text("ana")
        expect(page.locator(".task-side")).not_to_contain_text("assessment")
        page.keyboard.press(grades[item])
        expect(page.locator("#queue-status")).to_contain_text(
            f"Saved your assessment {grades[item]} "
        )
        expect(page.locator("#queue-status")).to_contain_text(f"item '{item}'")


def test_blind_overlap_adjudication_and_the_next_snapshot(new_page, login, pooled):
    ana, ben, cleo = make_user("ana"), make_user("ben"), make_user("cleo")
    for user, role in ((ana, "reviewer"), (ben, "reviewer"), (cleo, "evaluator")):
        set_membership(collection=pooled, user=user, role=role)
    set_adjudicator(collection=pooled, user=cleo, allowed=True)

    review(new_page(), login, ana, {"d1": "2", "d2": "1"})
    assert not Judgment.objects.exists()  # one of two assessors: nothing resolved
    review(new_page(), login, ben, {"d1": "2", "d2": "3"})
    assert Judgment.objects.get(item__external_id="d1").grade == 2  # they agree on d1
    assert not Judgment.objects.filter(item__external_id="d2").exists()
    assert sorted(
        Assessment.objects.values_list("item__external_id", "assessor__username", "grade")
    ) == [
        ("d1", "ana", 2),
        ("d1", "ben", 2),
        ("d2", "ana", 1),
        ("d2", "ben", 3),
    ]
    task = AdjudicationTask.objects.get()
    assert (task.item.external_id, task.status) == ("d2", AdjudicationStatus.OPEN)

    # A plain reviewer cannot open the adjudication queue.
    page = new_page()
    login(page, ana)
    assert page.goto("/c/blind/adjudicate/").status == 403

    page = new_page()
    login(page, cleo)
    page.goto("/c/blind/adjudicate/")
    card = page.locator("[data-adjudicate]")
    expect(card).to_contain_text("d2")
    expect(card.locator("tbody tr")).to_have_count(2)
    expect(card.locator("tbody tr").nth(0)).to_contain_text("ana")
    expect(card.locator("tbody tr").nth(0)).to_contain_text("1 related")
    expect(card.locator("tbody tr").nth(1)).to_contain_text("ben")
    expect(card.locator("tbody tr").nth(1)).to_contain_text("3 perfect")
    page.keyboard.press("2")  # one key decides
    expect(page.locator(".messages")).to_contain_text("Decided 2 relevant for item 'd2'")
    expect(page.get_by_role("heading", name="Nothing to adjudicate")).to_be_visible()
    decided = Judgment.objects.get(item__external_id="d2")
    assert (decided.grade, decided.reviewer) == (2, cleo)
    change = JudgmentChange.objects.get(item__external_id="d2")
    assert (change.changed_by, change.source) == (cleo, ChangeSource.ADJUDICATION)

    # Freezing runs as a background job; the service is what the job calls.
    freeze_snapshot(collection=pooled, by=cleo, note="after adjudication")
    page.goto("/c/blind/snapshots/")
    row = page.locator("#v1")
    expect(row.locator("[data-resolution]")).to_contain_text("resolution policy adjudicate")
    expect(row.locator("[data-resolution]")).to_contain_text("0 awaiting adjudication")
    snapshot = Snapshot.objects.get(collection=pooled)
    assert dict(
        SnapshotJudgment.objects.of(snapshot).values_list("item__external_id", "grade")
    ) == {"d1": 2, "d2": 2}
    header = [json.loads(line) for line in snapshot_canonical_lines(snapshot)][:3]
    assert header[0] == ["verity-snapshot", 2]
    assert header[2] == ["resolution", "adjudicate", 2, 0]
