"""Several assessors per item under real concurrency (PostgreSQL, one connection per
thread): eight reviewers work the queue at once until it is empty."""

from __future__ import annotations

from collections import Counter

import pytest

from judgments.models import Assessment, Judgment, ReviewTask, TaskStatus
from judgments.services import (
    assess_task,
    claim_next_task,
    queue_unjudged,
    update_collection_settings,
)
from tests.factories import make_collection, make_item, make_query, make_user
from tests.judgments.test_concurrency import kinds, race

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

REVIEWERS = 8
N = 3  # assessors per item
MAX_ROUNDS = 100  # per reviewer; far above the 10 pairs' 30 slots, a bound against a loop


def test_eight_reviewers_never_assess_a_pair_twice_and_leave_none_short(django_db_blocker):
    collection = make_collection(slug="busy")
    update_collection_settings(
        collection=collection, assessors_per_item=N, resolution_policy="median"
    )
    queries = [make_query(collection, external_id=f"q{n}") for n in range(2)]
    pairs = [(q, make_item(collection)) for q in queries for _ in range(5)]
    queue_unjudged(
        collection=collection,
        pairs=[(q.pk, i.pk, rank) for rank, (q, i) in enumerate(pairs, 1)],
        source="run bm25",
    )
    assert ReviewTask.objects.count() == N * len(pairs)
    reviewers = [make_user(f"rater-{n}") for n in range(REVIEWERS)]

    def work(reviewer, seed: int) -> int:
        done = 0
        current = None
        for round_ in range(MAX_ROUNDS):
            task = claim_next_task(
                reviewer=reviewer, collection=collection, current_query_id=current
            )
            if task is None:
                return done
            assess_task(task=task, reviewer=reviewer, grade=(seed + round_) % 4)
            current, done = task.query_id, done + 1
        raise AssertionError(f"{reviewer} still claiming after {MAX_ROUNDS} rounds")

    outcomes = race(*((lambda r=r, n=n: work(r, n)) for n, r in enumerate(reviewers)))

    assert kinds(outcomes) == {"ok": REVIEWERS}, [o.error for o in outcomes if o.error]
    assert sum(o.value for o in outcomes) == N * len(pairs)
    per_pair = Counter(Assessment.objects.values_list("query_id", "item_id"))
    assert per_pair == {(q.pk, i.pk): N for q, i in pairs}  # none short, none over
    per_reviewer_pair = Counter(
        Assessment.objects.values_list("query_id", "item_id", "assessor_id")
    )
    assert set(per_reviewer_pair.values()) == {1}  # nobody assessed a pair twice
    assert not ReviewTask.objects.exclude(status=TaskStatus.DONE).exists()
    assert Judgment.objects.count() == len(pairs)  # median resolves every pair
