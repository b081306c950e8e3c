"""A property of the app's queue under every pooling strategy (issue 28): several
reviewers taking turns in any order, with one or two assessors per item, are served every
pooled pair, and no slot of a pair twice, nor one pair twice to one assessor."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgments.models import Assessment, Judgment, ReviewTask, TaskStatus
from judgments.services import assess_task, claim_next_task, judge_task
from tests.factories import make_user
from tests.judgments.test_pool_arms import adaptive, import_runs

pytestmark = pytest.mark.django_db

IDS = [f"d{n}" for n in range(8)]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    runs=st.lists(st.lists(st.sampled_from(IDS), min_size=1, max_size=5, unique=True),
                  min_size=1, max_size=3),
    relevant=st.sets(st.sampled_from(IDS)),
    spec=st.sampled_from([("mtf", 0), ("bandit", 0), ("bandit", 1), ("mtf", 2), ("depth", 0)]),
    slots=st.sampled_from([1, 2]),
    turns=st.lists(st.integers(0, 2), min_size=1, max_size=20),
)  # fmt: skip
def test_every_pooled_pair_is_served_once_per_slot(runs, relevant, spec, slots, turns):
    extra = {"assessors_per_item": 2, "resolution_policy": "majority"} if slots == 2 else {}
    collection = adaptive(spec[0], spec[1], **extra)
    import_runs(collection, Path(tempfile.mkdtemp()), runs)
    reviewers = [make_user() for _ in range(3)]
    served: list[tuple[int, str, int]] = []
    idle: set[int] = set()
    turn = 0
    while len(idle) < len(reviewers):  # nobody got a task since the last one served: done
        # The drawn turns first, then round robin, so that every reviewer is asked.
        who = turns[turn] if turn < len(turns) else turn % len(reviewers)
        turn += 1
        reviewer = reviewers[who]
        task = claim_next_task(reviewer=reviewer, collection=collection)
        if task is None:
            idle.add(who)
            continue
        idle.clear()
        item = task.item.external_id
        served.append((who, item, task.slot))
        grade = int(item in relevant)
        if slots == 1:
            judge_task(task=task, reviewer=reviewer, grade=grade)
        else:
            assess_task(task=task, reviewer=reviewer, grade=grade)
    pooled = {i for run in runs for i in run}
    assert Counter((item, slot) for _, item, slot in served) == {
        (item, slot): 1 for item in pooled for slot in range(1, slots + 1)
    }
    assert len({(who, item) for who, item, _ in served}) == len(served)  # blind slots
    assert not ReviewTask.objects.filter(collection=collection).exclude(status=TaskStatus.DONE)
    assert Judgment.objects.filter(query__collection=collection).count() == len(pooled)
    if slots == 2:
        assert Assessment.objects.filter(query__collection=collection).count() == 2 * len(pooled)
