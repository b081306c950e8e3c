"""Query-at-a-time claims under real concurrency: reviewers in threads, each on its own
PostgreSQL connection, drain a queue of several queries at once.

The claim is still compare-and-set with SKIP LOCKED, so no task is ever handed to two
reviewers; and a reviewer never comes back to a query it left (a query is left only
when none of its tasks is open for that reviewer, and nothing here reopens one).
"""

from __future__ import annotations

import threading
from itertools import groupby

import pytest
from django.db import connection

from judgments.models import Judgment, JudgmentChange, ReviewTask, TaskStatus
from judgments.services import claim_next_task, queue_unjudged, record_judgment
from tests.factories import make_item, make_query, make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

QUERIES, ITEMS, REVIEWERS = 5, 8, 4
JOIN_TIMEOUT = 120  # seconds; far above the real run time, below "hung"


def test_reviewers_drain_a_queue_query_by_query_without_sharing_a_task(collection_graded):
    pairs = []
    for q in range(QUERIES):
        query = make_query(collection_graded, external_id=f"q{q}")
        for i in range(ITEMS):
            item = make_item(collection_graded, external_id=f"q{q}-d{i}")
            # Interleaved ranks: a queue by priority alone would jump between queries.
            pairs.append((query.pk, item.pk, i * QUERIES + q + 1))
    queue_unjudged(collection=collection_graded, pairs=pairs, source="run interleaved")
    reviewers = [make_user(f"r{n}") for n in range(REVIEWERS)]
    barrier = threading.Barrier(REVIEWERS)
    claimed: dict[int, list[tuple[int, int]]] = {r.pk: [] for r in reviewers}
    errors: list[BaseException] = []

    def work(reviewer) -> None:
        try:
            connection.ensure_connection()
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = '10s'")
            barrier.wait(timeout=JOIN_TIMEOUT)
            current = None
            while True:
                task = claim_next_task(
                    reviewer=reviewer, collection=collection_graded, current_query_id=current
                )
                if task is None:
                    return
                claimed[reviewer.pk].append((task.query_id, task.item_id))
                record_judgment(
                    query=task.query,
                    item=task.item,
                    grade=0,
                    reviewer=reviewer,
                    expected_version=None,
                )
                current = task.query_id
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(r,), daemon=True) for r in reviewers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread is still running: lock wait?"
    assert errors == []

    every = [pair for seq in claimed.values() for pair in seq]
    assert len(every) == len(set(every)) == QUERIES * ITEMS  # each task to one reviewer once
    assert Judgment.objects.count() == JudgmentChange.objects.count() == QUERIES * ITEMS
    assert not ReviewTask.objects.exclude(status=TaskStatus.DONE).exists()
    for seq in claimed.values():
        blocks = [query for query, _ in groupby(q for q, _ in seq)]
        assert len(blocks) == len(set(blocks)), f"came back to a query it had left: {blocks}"
