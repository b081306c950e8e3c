"""Adaptive pooling under concurrent reviewers (PostgreSQL, real threads and connections):
four reviewers drain a bandit queue (depth 2 floor) of three queries pooled from three runs;
every task is claimed once, nothing deadlocks, and every run's arm ends having counted each of its
items exactly once."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from judgments.models import Item, PoolArm, ReviewTask, TaskStatus
from judgments.services import claim_next_task, judge_task
from scoring.services import import_run
from tests.factories import make_item, make_query, make_user
from tests.judgments.test_pool_arms import adaptive

THREADS, TIMEOUT = 4, 120


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_four_reviewers_drain_a_bandit_queue_and_every_arm_counts_once(tmp_path):
    collection = adaptive("bandit", 2)  # pool depth 10: d0-d10, d12-d21 in each query
    runs = [
        [f"d{n}" for n in range(0, 24)],
        [f"d{n}" for n in range(12, 36)],
        [f"d{n}" for n in range(0, 36, 2)],
    ]
    for q in ("q1", "q2", "q3"):
        make_query(collection, external_id=q)
    for ranking in runs:
        for item in ranking:
            if not Item.objects.filter(collection=collection, external_id=item).exists():
                make_item(collection, external_id=item)
    for n, ranking in enumerate(runs):
        path = tmp_path / f"multi{n}.txt"
        path.write_text(
            "".join(
                f"{q} Q0 {d} {r} {100 - r} m{n}\n"
                for q in ("q1", "q2", "q3")
                for r, d in enumerate(ranking, 1)
            )
        )
        import_run(collection=collection, path=path, name=f"m{n}")
    reviewers = [make_user(f"drainer-{n}") for n in range(THREADS)]
    claimed: list[list[int]] = [[] for _ in reviewers]
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def drain(n: int) -> None:
        try:
            with connection.cursor() as cursor:  # a lock-order bug fails instead of hanging
                cursor.execute("SET lock_timeout = '10s'")
            barrier.wait(timeout=TIMEOUT)
            while (
                task := claim_next_task(reviewer=reviewers[n], collection=collection)
            ) is not None:
                claimed[n].append(task.pk)
                judge_task(task=task, reviewer=reviewers[n], grade=task.item_id % 2)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=drain, args=(n,), daemon=True) for n in range(THREADS)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    took = time.monotonic() - started
    assert not any(t.is_alive() for t in threads), f"still draining after {took:.0f} s"
    assert errors == []
    every_claim = [pk for pks in claimed for pk in pks]
    assert len(every_claim) == len(set(every_claim)) == ReviewTask.objects.count() == 3 * 21
    assert sum(1 for pks in claimed if pks) >= 2, "one reviewer drained it all: no race"
    assert not ReviewTask.objects.exclude(status=TaskStatus.DONE).exists()
    for arm in PoolArm.objects.all():
        assert (arm.judged, arm.head_id, arm.position) == (len(arm.tasks), None, len(arm.tasks))
