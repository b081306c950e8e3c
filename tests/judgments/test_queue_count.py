"""The review queue's count of open tasks: exact up to 1,000, "more than 1,000" above.

The page counts at most QUEUE_COUNT_CAP + 1 open tasks (one bounded subquery), so that a
queue of 100,000 costs no more per page view than one of 1,000; what it shows must stay
true on both sides of the cap, in the page and in the JSON its script reads.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from judgments.models import Item, ReviewTask, TaskStatus
from judgments.selectors import QUEUE_COUNT_CAP, open_count_shown, queue_progress
from judgments.services import set_membership
from tests.factories import make_query

JSON = {"HTTP_ACCEPT": "application/json"}


def open_tasks(collection, n: int, *, done: int = 0) -> None:
    """``n`` pending tasks (and ``done`` done ones) of one query, in bulk."""
    query = make_query(collection)
    items = Item.objects.bulk_create(
        Item(collection=collection, external_id=f"d{k}", text="t") for k in range(n + done)
    )
    ReviewTask.objects.bulk_create(
        ReviewTask(
            collection=collection,
            query=query,
            item=item,
            status=TaskStatus.PENDING if k < n else TaskStatus.DONE,
            source="run bm25",
            priority=-k,
        )
        for k, item in enumerate(items)
    )


@pytest.fixture
def ana(reviewer_ana, collection_graded) -> Client:
    set_membership(collection=collection_graded, user=reviewer_ana, role="reviewer")
    client = Client()
    client.force_login(reviewer_ana)
    return client


def review_url(collection) -> str:
    return reverse("judgments:review", args=[collection.slug])


@pytest.mark.parametrize(
    ("n", "shown"),
    [(0, "0"), (1, "1"), (999, "999"), (1000, "1000"), (1001, "more than 1,000")],
)
def test_count_shown(n: int, shown: str) -> None:
    assert QUEUE_COUNT_CAP == 1000
    assert open_count_shown(n, cap=QUEUE_COUNT_CAP) == shown
    assert open_count_shown(5000, cap=None) == "5000"  # uncapped counts are exact


def test_capped_count_is_exact_up_to_the_cap_and_cap_plus_one_above(collection_graded):
    open_tasks(collection_graded, 1000, done=5)
    assert queue_progress(collection_graded, open_cap=1000) == (1000, 0)
    assert queue_progress(collection_graded, open_cap=999) == (1000, 0)  # "more than 999"
    assert queue_progress(collection_graded, open_cap=5) == (6, 0)
    assert queue_progress(collection_graded) == (1000, 0)  # no cap: exact


def test_the_count_reads_at_most_cap_plus_one_rows(collection_graded):
    open_tasks(collection_graded, 3)
    with CaptureQueriesContext(connection) as ctx:
        queue_progress(collection_graded, open_cap=QUEUE_COUNT_CAP)
    assert f"LIMIT {QUEUE_COUNT_CAP + 1}" in ctx.captured_queries[0]["sql"]


def test_page_shows_the_exact_count_at_the_cap(ana, collection_graded):
    open_tasks(collection_graded, 1000)
    response = ana.get(review_url(collection_graded))
    html = response.content.decode()
    assert '<strong data-progress="open">1000</strong> open task<span data-plural="open">s' in html
    assert "1000 open tasks in this collection" in html
    assert "more than" not in html
    data = ana.get(review_url(collection_graded), **JSON).json()
    assert data["progress"]["open"] == 1000


def test_page_says_more_than_1000_above_the_cap(ana, collection_graded):
    open_tasks(collection_graded, 1001, done=3)
    response = ana.get(review_url(collection_graded))
    html = response.content.decode()
    assert '<strong data-progress="open">more than 1,000</strong> open task' in html
    assert "more than 1,000 open tasks in this collection" in html
    assert "1001" not in html  # never a number that is only a bound
    assert response.context["offer_claim"]  # the claim button is offered as below the cap
    data = ana.get(review_url(collection_graded), **JSON).json()
    assert data["progress"] == {"open": "more than 1,000", "claimed": 0, "judged_session": 0}


def test_claim_and_judge_answer_the_capped_count_too(ana, collection_graded):
    open_tasks(collection_graded, 1001)
    claimed = ana.post(reverse("judgments:review-claim", args=[collection_graded.slug]), **JSON)
    data = claimed.json()
    assert data["task"] is not None
    assert data["progress"]["open"] == "more than 1,000"
    assert data["progress"]["claimed"] == 1
    judged = ana.post(
        reverse("judgments:review-judge", args=[collection_graded.slug]),
        {"task": data["task"]["id"], "grade": 0},
        **JSON,
    ).json()
    assert judged["ok"]
    # 1,000 open now: exact again.
    assert judged["progress"]["open"] == 1000
