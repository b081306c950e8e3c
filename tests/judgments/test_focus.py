"""Focus sets (issue 28, item 3): pairs asked for by name are queued at URGENT_PRIORITY,
served before any pooled pair, never lowered by later pooling, and form a review scope."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from judgments.models import FocusPair, FocusSet, Item, ReviewTask, TaskStatus
from judgments.selectors import held_task_for
from judgments.services import (
    InvariantError,
    claim_next_task,
    queue_focus,
    queue_unjudged,
    update_collection_settings,
)
from judgments.services.pooling import URGENT_PRIORITY
from tests.factories import make_item, make_judgment, make_query

pytestmark = pytest.mark.django_db


def pair_of(task):
    return None if task is None else (task.query.external_id, task.item.external_id)


@pytest.fixture
def pooled(collection_graded, query_vaccines, item_cdc_faq, item_who_qa, item_forum_post):
    """q-vaccines: cdc pooled at rank 1 (priority 9 999), who at rank 2 (9 998);
    forum-4411 judged; q-measles: nhs pooled at rank 1."""
    measles = make_query(collection_graded, external_id="q-measles")
    nhs = make_item(collection_graded, external_id="nhs-mmr")
    make_judgment(query=query_vaccines, item=item_forum_post, grade=0)
    queue_unjudged(
        collection=collection_graded,
        pairs=[
            (query_vaccines.pk, item_cdc_faq.pk, 1),
            (query_vaccines.pk, item_who_qa.pk, 2),
            (measles.pk, nhs.pk, 1),
        ],
        source="run bm25",
    )
    return collection_graded


def priorities(collection):
    return {
        (t.query.external_id, t.item.external_id, t.slot): t.priority
        for t in ReviewTask.objects.filter(collection=collection).select_related("query", "item")
    }


def test_focus_queues_unjudged_pairs_urgent_and_names_every_pair(pooled, reviewer_ana):
    outcome = queue_focus(
        collection=pooled,
        name="compare-1-2",
        pairs=[
            ("q-vaccines", "who-vaccines-qa"),  # pooled already: raised
            ("q-vaccines", "forum-4411"),  # judged: named, not queued
            ("q-measles", "new-item"),  # unknown item: a placeholder, queued
        ],
        by=reviewer_ana,
        description="could flip nDCG@10",
    )
    assert (outcome.pairs, outcome.unjudged, outcome.queued, outcome.raised) == (3, 2, 1, 2)
    assert outcome.created
    assert priorities(pooled) == {
        ("q-vaccines", "cdc-mrna-faq", 1): 9_999,  # not asked for: unchanged
        ("q-vaccines", "who-vaccines-qa", 1): URGENT_PRIORITY,
        ("q-measles", "nhs-mmr", 1): 9_999,
        ("q-measles", "new-item", 1): URGENT_PRIORITY,
    }
    assert Item.objects.get(collection=pooled, external_id="new-item").placeholder
    focus = FocusSet.objects.get(collection=pooled, name="compare-1-2")
    assert sorted(
        FocusPair.objects.filter(focus=focus).values_list("query__external_id", "item__external_id")
    ) == [
        ("q-measles", "new-item"),
        ("q-vaccines", "forum-4411"),
        ("q-vaccines", "who-vaccines-qa"),
    ]
    event = AuditEvent.objects.get(action="review.focus")
    assert (event.target, event.after) == (
        "focus compare-1-2",
        {"pairs": 3, "unjudged": 2, "queued": 1},
    )


def test_urgent_pairs_are_served_first_and_later_pooling_keeps_them_urgent(
    pooled, reviewer_ana, query_vaccines, item_who_qa, item_cdc_faq
):
    queue_focus(
        collection=pooled, name="f", pairs=[("q-vaccines", "who-vaccines-qa")], by=reviewer_ana
    )
    # A second run surfaces both pairs again: pooling recomputes their priorities
    # (2 sources), but the urgent one keeps URGENT_PRIORITY.
    queue_unjudged(
        collection=pooled,
        pairs=[(query_vaccines.pk, item_who_qa.pk, 1), (query_vaccines.pk, item_cdc_faq.pk, 1)],
        source="run dense",
    )
    got = priorities(pooled)
    assert got[("q-vaccines", "who-vaccines-qa", 1)] == URGENT_PRIORITY
    assert got[("q-vaccines", "cdc-mrna-faq", 1)] == 2 * 10_000 - 1  # pooled as before
    task = claim_next_task(reviewer=reviewer_ana, collection=pooled)
    assert pair_of(task) == ("q-vaccines", "who-vaccines-qa")


def test_several_assessors_every_slot_is_urgent(pooled, reviewer_ana):
    update_collection_settings(collection=pooled, assessors_per_item=2)
    queue_focus(collection=pooled, name="f", pairs=[("q-measles", "nhs-mmr")], by=reviewer_ana)
    got = priorities(pooled)
    assert got[("q-measles", "nhs-mmr", 1)] == got[("q-measles", "nhs-mmr", 2)] == URGENT_PRIORITY
    assert got[("q-vaccines", "cdc-mrna-faq", 2)] == 9_999


def test_the_focus_scope_serves_only_its_pairs(pooled, reviewer_ana, reviewer_ben):
    focus = queue_focus(
        collection=pooled, name="f", pairs=[("q-measles", "nhs-mmr")], by=reviewer_ana
    ).focus
    # the whole queue serves the urgent pair first too; the scope serves nothing else
    task = claim_next_task(reviewer=reviewer_ana, collection=pooled, focus=focus)
    assert pair_of(task) == ("q-measles", "nhs-mmr")
    assert pair_of(held_task_for(reviewer_ana, pooled, focus=focus)) == ("q-measles", "nhs-mmr")
    assert claim_next_task(reviewer=reviewer_ben, collection=pooled, focus=focus) is None
    # the unscoped queue still serves the pooled pairs
    other = claim_next_task(reviewer=reviewer_ben, collection=pooled)
    assert pair_of(other) == ("q-vaccines", "cdc-mrna-faq")
    assert ReviewTask.objects.get(pk=task.pk).status == TaskStatus.CLAIMED


def test_queueing_the_same_name_again_adds_only_what_is_missing(pooled, reviewer_ana):
    queue_focus(collection=pooled, name="f", pairs=[("q-measles", "nhs-mmr")], by=reviewer_ana)
    again = queue_focus(
        collection=pooled,
        name="f",
        pairs=[("q-measles", "nhs-mmr"), ("q-vaccines", "cdc-mrna-faq")],
        by=reviewer_ana,
    )
    assert not again.created
    assert (again.queued, again.raised) == (0, 1)
    assert FocusPair.objects.filter(focus=again.focus).count() == 2


@pytest.mark.parametrize(
    ("name", "pairs", "message"),
    [
        ("not a slug", [("q-vaccines", "x")], "must be a slug"),
        ("f", [("q-nope", "x")], "no query 'q-nope'"),
    ],
)
def test_refusals(pooled, reviewer_ana, name, pairs, message):
    with pytest.raises(InvariantError, match=message):
        queue_focus(collection=pooled, name=name, pairs=pairs, by=reviewer_ana)
    assert not FocusSet.objects.exists()
