"""The review queue: unjudged pairs from several runs become one task each, handed out
one reviewer at a time, by priority, with a lease that expires.

Priorities are computed by hand from the rule documented on ``task_priority``: 10 000 per
source that surfaced the pair, minus its best rank (no rank counts as 9 999); ties go to
the older task (lower pk). The last test drains a queue of 2,000 tasks with 8 reviewers on
8 PostgreSQL connections at once.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count
from django.utils import timezone

from judgments.models import (
    Item,
    Judgment,
    JudgmentChange,
    Query,
    ReviewTask,
    TaskSkip,
    TaskSource,
    TaskStatus,
)
from judgments.services import (
    InvariantError,
    claim_next_task,
    queue_unjudged,
    record_judgment,
    release_expired_leases,
    skip_task,
)
from tests.factories import make_collection, make_item, make_judgment, make_query, make_user

pytestmark = pytest.mark.django_db

EXPIRED = timedelta(seconds=-1)  # a lease that ran out the moment it was given


def pair_of(task: ReviewTask | None) -> tuple[str, str] | None:
    return None if task is None else (task.query.external_id, task.item.external_id)


@pytest.fixture
def two_runs(collection_graded, query_vaccines, item_cdc_faq, item_who_qa, item_forum_post):
    """Two runs' unjudged pairs of q-vaccines and q-measles; q-vaccines/forum-4411 is judged.

    =======================  ========  =========  ==========================  ========
    pair                     run bm25  run dense  priority                    claimed
    =======================  ========  =========  ==========================  ========
    q-vaccines who-vacc…     2         1          2 x 10 000 - 1 = 19 999     1st
    q-measles  nhs-mmr       1         3          2 x 10 000 - 1 = 19 999     2nd (newer)
    q-measles  cdc-mrna-faq  4         2          2 x 10 000 - 2 = 19 998     3rd
    q-vaccines cdc-mrna-faq  1                    1 x 10 000 - 1 =  9 999     4th
    q-vaccines rki-impfung             2          1 x 10 000 - 2 =  9 998     5th
    q-measles  rki-impfung             (none)     1 x 10 000 - 9 999 =  1     6th
    q-vaccines forum-4411    3         1          judged: never queued
    =======================  ========  =========  ==========================  ========

    run bm25 is queued first, so its tasks are older; within one call the tasks are made
    in (query pk, item pk) order, so q-vaccines/who-vacc… is older than q-measles/nhs-mmr.
    """
    measles = make_query(collection_graded, external_id="q-measles")
    nhs = make_item(collection_graded, external_id="nhs-mmr")
    rki = make_item(collection_graded, external_id="rki-impfung")
    make_judgment(query=query_vaccines, item=item_forum_post, grade=0)
    v, m = query_vaccines.pk, measles.pk
    bm25 = queue_unjudged(
        collection=collection_graded,
        pairs=[
            (v, item_cdc_faq.pk, 1),
            (v, item_who_qa.pk, 2),
            (v, item_forum_post.pk, 3),
            (m, nhs.pk, 1),
            (m, item_cdc_faq.pk, 4),
        ],
        source="run bm25",
    )
    dense = queue_unjudged(
        collection=collection_graded,
        pairs=[
            (v, item_who_qa.pk, 1),
            (v, item_forum_post.pk, 1),
            (v, rki.pk, 2),
            (m, nhs.pk, 3),
            (m, item_cdc_faq.pk, 2),
            (m, rki.pk, None),
        ],
        source="run dense",
    )
    return bm25, dense


CLAIM_ORDER = [
    ("q-vaccines", "who-vaccines-qa"),
    ("q-measles", "nhs-mmr"),
    ("q-measles", "cdc-mrna-faq"),
    ("q-vaccines", "cdc-mrna-faq"),
    ("q-vaccines", "rki-impfung"),
    ("q-measles", "rki-impfung"),
]


# -- queueing ---------------------------------------------------------------------------------


def test_two_runs_make_one_task_per_unjudged_pair_with_every_source(two_runs):
    # (unjudged pairs seen, tasks made): bm25 saw 4 (forum-4411 is judged) and made 4;
    # dense saw 5, of which 3 had tasks already.
    assert two_runs == ((4, 4), (5, 2))
    rows = ReviewTask.objects.select_related("query", "item").prefetch_related("sources")
    sources = {pair_of(t): {s.label: s.rank for s in t.sources.all()} for t in rows}
    tasks = {pair_of(t): (t.status, t.source, t.best_rank, t.priority) for t in rows}
    # (status, first source, best rank, priority), priority as in the fixture's table
    assert tasks == {
        ("q-vaccines", "who-vaccines-qa"): ("pending", "run bm25", 1, 19_999),
        ("q-measles", "nhs-mmr"): ("pending", "run bm25", 1, 19_999),
        ("q-measles", "cdc-mrna-faq"): ("pending", "run bm25", 2, 19_998),
        ("q-vaccines", "cdc-mrna-faq"): ("pending", "run bm25", 1, 9_999),
        ("q-vaccines", "rki-impfung"): ("pending", "run dense", 2, 9_998),
        ("q-measles", "rki-impfung"): ("pending", "run dense", None, 1),
    }
    assert sources == {
        ("q-vaccines", "who-vaccines-qa"): {"run bm25": 2, "run dense": 1},
        ("q-measles", "nhs-mmr"): {"run bm25": 1, "run dense": 3},
        ("q-measles", "cdc-mrna-faq"): {"run bm25": 4, "run dense": 2},
        ("q-vaccines", "cdc-mrna-faq"): {"run bm25": 1},
        ("q-vaccines", "rki-impfung"): {"run dense": 2},
        ("q-measles", "rki-impfung"): {"run dense": None},
    }
    assert TaskSource.objects.count() == 9  # 3 tasks x 2 sources + 3 x 1


def test_tasks_are_claimed_in_priority_order_then_oldest_first(two_runs, collection_graded):
    claimed = [
        pair_of(claim_next_task(reviewer=make_user(), collection=collection_graded))
        for _ in range(len(CLAIM_ORDER) + 1)
    ]

    assert claimed == [*CLAIM_ORDER, None]


# -- claiming ---------------------------------------------------------------------------------


def test_a_reviewer_gets_the_same_task_back_while_the_lease_is_live(
    two_runs, collection_graded, reviewer_ana, reviewer_ben
):
    first = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)
    # A task of higher priority than ana's (3 sources) appears meanwhile.
    urgent = make_item(collection_graded, external_id="urgent")
    query = first.query
    for run in ["run a", "run b", "run c"]:
        queue_unjudged(collection=collection_graded, pairs=[(query.pk, urgent.pk, 1)], source=run)

    again = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)
    other = claim_next_task(reviewer=reviewer_ben, collection=collection_graded)

    assert pair_of(first) == CLAIM_ORDER[0]
    assert (again.pk, again.lease_expires_at) == (first.pk, first.lease_expires_at)
    # ana works on q-vaccines: ben starts the query nobody holds, before its 30 000 - 1 task.
    assert pair_of(other) == ("q-measles", "nhs-mmr")
    # Every query is held now: carol is served by priority alone.
    third = claim_next_task(reviewer=make_user("carol"), collection=collection_graded)
    assert pair_of(third) == ("q-vaccines", "urgent")
    assert ReviewTask.objects.filter(status=TaskStatus.CLAIMED).count() == 3


def test_a_claim_sets_status_reviewer_and_lease(two_runs, collection_graded, reviewer_ana):
    before = timezone.now()

    task = claim_next_task(
        reviewer=reviewer_ana, collection=collection_graded, lease=timedelta(minutes=3)
    )

    stored = ReviewTask.objects.get(pk=task.pk)
    assert (stored.status, stored.claimed_by) == (TaskStatus.CLAIMED, reviewer_ana)
    after = timezone.now()
    assert before + timedelta(minutes=3) <= stored.lease_expires_at <= after + timedelta(minutes=3)


def test_another_reviewer_gets_the_next_task(
    two_runs, collection_graded, reviewer_ana, reviewer_ben
):
    ana = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)
    ben = claim_next_task(reviewer=reviewer_ben, collection=collection_graded)

    assert (pair_of(ana), pair_of(ben)) == (CLAIM_ORDER[0], CLAIM_ORDER[1])
    assert dict(ReviewTask.objects.filter(status="claimed").values_list("pk", "claimed_by")) == {
        ana.pk: reviewer_ana.pk,
        ben.pk: reviewer_ben.pk,
    }


def test_an_expired_lease_returns_the_task_to_the_others(
    two_runs, collection_graded, reviewer_ana, reviewer_ben
):
    lapsed = claim_next_task(reviewer=reviewer_ana, collection=collection_graded, lease=EXPIRED)

    taken = claim_next_task(reviewer=reviewer_ben, collection=collection_graded)

    assert taken.pk == lapsed.pk
    assert (taken.claimed_by, taken.status) == (reviewer_ben, TaskStatus.CLAIMED)
    assert taken.lease_expires_at > timezone.now()
    # ana no longer holds it; she is handed the next one, not ben's.
    assert (
        pair_of(claim_next_task(reviewer=reviewer_ana, collection=collection_graded))
        == (CLAIM_ORDER[1])
    )


def test_a_lease_that_runs_out_later_frees_the_task_then(
    two_runs, collection_graded, reviewer_ana, reviewer_ben
):
    held = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)
    assert (
        pair_of(claim_next_task(reviewer=reviewer_ben, collection=collection_graded))
        == (CLAIM_ORDER[1])
    )  # ana's lease is live: ben gets the next task
    ReviewTask.objects.filter(pk=held.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )

    carol = make_user("carol")
    assert claim_next_task(reviewer=carol, collection=collection_graded).pk == held.pk


def test_a_skipped_task_goes_to_the_others_but_never_back_to_the_skipper(
    two_runs, collection_graded, reviewer_ana, reviewer_ben
):
    task = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)

    skip_task(task=task, reviewer=reviewer_ana)

    stored = ReviewTask.objects.get(pk=task.pk)
    assert (stored.status, stored.claimed_by, stored.lease_expires_at) == ("pending", None, None)
    assert list(TaskSkip.objects.values_list("task", "reviewer")) == [(task.pk, reviewer_ana.pk)]
    assert (
        pair_of(claim_next_task(reviewer=reviewer_ana, collection=collection_graded))
        == (CLAIM_ORDER[1])
    )
    assert claim_next_task(reviewer=reviewer_ben, collection=collection_graded).pk == task.pk


def test_a_reviewer_who_skipped_every_open_task_gets_none(
    collection_graded, query_vaccines, item_cdc_faq, reviewer_ana, reviewer_ben
):
    queue_unjudged(
        collection=collection_graded,
        pairs=[(query_vaccines.pk, item_cdc_faq.pk, 1)],
        source="run bm25",
    )
    skip_task(
        task=claim_next_task(reviewer=reviewer_ana, collection=collection_graded),
        reviewer=reviewer_ana,
    )

    assert claim_next_task(reviewer=reviewer_ana, collection=collection_graded) is None
    assert pair_of(claim_next_task(reviewer=reviewer_ben, collection=collection_graded)) == (
        "q-vaccines",
        "cdc-mrna-faq",
    )


def test_only_the_lease_holder_may_skip(two_runs, collection_graded, reviewer_ana, reviewer_ben):
    task = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)

    with pytest.raises(InvariantError, match="this task is not held by you"):
        skip_task(task=task, reviewer=reviewer_ben)

    stored = ReviewTask.objects.get(pk=task.pk)
    assert (stored.status, stored.claimed_by) == (TaskStatus.CLAIMED, reviewer_ana)
    assert not TaskSkip.objects.exists()


def test_recording_the_judgment_completes_the_task_and_frees_the_reviewer(
    two_runs, collection_graded, reviewer_ana
):
    task = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)

    record_judgment(
        query=task.query, item=task.item, grade=2, reviewer=reviewer_ana, expected_version=None
    )

    stored = ReviewTask.objects.get(pk=task.pk)
    assert (stored.status, stored.claimed_by, stored.lease_expires_at) == ("done", None, None)
    assert (
        pair_of(claim_next_task(reviewer=reviewer_ana, collection=collection_graded))
        == (CLAIM_ORDER[1])
    )


def test_release_expired_leases_returns_only_lapsed_tasks_to_pending(
    two_runs, collection_graded, reviewer_ana, reviewer_ben
):
    live = claim_next_task(reviewer=reviewer_ben, collection=collection_graded)
    lapsed = claim_next_task(reviewer=reviewer_ana, collection=collection_graded, lease=EXPIRED)
    other = make_collection(slug="other")
    queue_unjudged(
        collection=other,
        pairs=[(make_query(other).pk, make_item(other).pk, 1)],
        source="run bm25",
    )
    elsewhere = claim_next_task(reviewer=reviewer_ana, collection=other, lease=EXPIRED)

    assert release_expired_leases(collection=collection_graded) == 1

    def state(task: ReviewTask) -> tuple:
        t = ReviewTask.objects.get(pk=task.pk)
        return t.status, t.claimed_by_id, t.lease_expires_at is None

    assert state(lapsed) == ("pending", None, True)
    assert state(live) == ("claimed", reviewer_ben.pk, False)
    assert state(elsewhere) == ("claimed", reviewer_ana.pk, False)
    assert release_expired_leases() == 1  # every collection: the other one's
    assert state(elsewhere) == ("pending", None, True)
    assert release_expired_leases() == 0


def test_an_empty_queue_gives_none(collection_graded, query_vaccines, item_cdc_faq, reviewer_ana):
    assert claim_next_task(reviewer=reviewer_ana, collection=collection_graded) is None

    # Another collection's task is not this queue's.
    other = make_collection(slug="other")
    queue_unjudged(
        collection=other, pairs=[(make_query(other).pk, make_item(other).pk, 1)], source="x"
    )
    assert claim_next_task(reviewer=reviewer_ana, collection=collection_graded) is None

    # Nor is a done one.
    queue_unjudged(
        collection=collection_graded,
        pairs=[(query_vaccines.pk, item_cdc_faq.pk, 1)],
        source="x",
    )
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=1)
    assert claim_next_task(reviewer=reviewer_ana, collection=collection_graded) is None


# -- many reviewers at once (PostgreSQL) -------------------------------------------------------

DRAIN_THREADS = 8
DRAIN_QUERIES, DRAIN_ITEMS = 40, 50  # 2,000 tasks
DRAIN_TIMEOUT = 120  # seconds; the drain takes ~30 s on 2 busy cores (Python-bound)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_eight_reviewers_drain_two_thousand_tasks_each_exactly_once(collection_graded):
    c = collection_graded
    queries = Query.objects.bulk_create(
        Query(collection=c, external_id=f"q{n:02d}", text=f"query {n}")
        for n in range(DRAIN_QUERIES)
    )
    items = Item.objects.bulk_create(
        Item(collection=c, external_id=f"d{n:02d}") for n in range(DRAIN_ITEMS)
    )
    # Rank r of every query has priority 10 000 - r: consecutive claims hit other queries.
    tasks = ReviewTask.objects.bulk_create(
        ReviewTask(
            collection=c, query=q, item=i, source="run drain", best_rank=r, priority=10_000 - r
        )
        for q in queries
        for r, i in enumerate(items, 1)
    )
    n_tasks = DRAIN_QUERIES * DRAIN_ITEMS
    assert len(tasks) == n_tasks
    reviewers = [make_user(f"drainer-{n}") for n in range(DRAIN_THREADS)]
    # Read-only objects shared by the threads, so a round needs no lookup of its own.
    query_by_pk, item_by_pk = {q.pk: q for q in queries}, {i.pk: i for i in items}
    claimed: list[list[int]] = [[] for _ in reviewers]
    errors: list[BaseException] = []
    barrier = threading.Barrier(DRAIN_THREADS)

    def drain(n: int) -> None:
        try:
            with connection.cursor() as cursor:  # a lock-order bug fails instead of hanging
                cursor.execute("SET lock_timeout = '10s'")
            barrier.wait(timeout=DRAIN_TIMEOUT)
            while (task := claim_next_task(reviewer=reviewers[n], collection=c)) is not None:
                claimed[n].append(task.pk)
                record_judgment(
                    query=query_by_pk[task.query_id],
                    item=item_by_pk[task.item_id],
                    grade=task.pk % 4,  # on the scale 0-3; the query is unreviewed
                    reviewer=reviewers[n],
                    expected_version=None,
                )
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=drain, args=(n,), daemon=True) for n in range(DRAIN_THREADS)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DRAIN_TIMEOUT)
    took = time.monotonic() - started
    assert not any(t.is_alive() for t in threads), f"still draining after {took:.0f} s"
    assert errors == []

    # No task claimed twice, none lost.
    every_claim = [pk for pks in claimed for pk in pks]
    assert len(every_claim) == len(set(every_claim)) == n_tasks
    assert set(every_claim) == {t.pk for t in tasks}
    assert sum(1 for pks in claimed if pks) >= 2, "one reviewer drained it all: no race"
    assert not ReviewTask.objects.exclude(status=TaskStatus.DONE).exists()
    assert not ReviewTask.objects.filter(claimed_by__isnull=False).exists()

    # Exactly one judgment and one history row per pair, by the reviewer who claimed it.
    rows = Judgment.objects.values_list("query_id", "item_id", "grade", "reviewer_id")
    judged = {(q, i): (g, r) for q, i, g, r in rows}
    by_task = {t.pk: (t.query_id, t.item_id) for t in tasks}
    assert judged == {
        by_task[pk]: (pk % 4, reviewers[n].pk) for n, pks in enumerate(claimed) for pk in pks
    }
    history = JudgmentChange.objects.values("query_id", "item_id").annotate(n=Count("id"))
    assert len(history) == n_tasks
    assert {row["n"] for row in history} == {1}
