"""Concurrency: real threads, each with its own PostgreSQL connection, racing for real.

SQLite serialises every writer (IMMEDIATE transactions), so these races cannot happen
there and the tests are skipped; CI runs them on PostgreSQL with
``VERITY_REQUIRE_POSTGRES=1``, which turns a skip into a failure (see tests/conftest.py).

Each thread closes its connection when it ends, and sets ``lock_timeout`` when it
starts, so a lock-ordering bug fails the test instead of hanging the run.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection, transaction

from judgments.models import (
    Judgment,
    JudgmentChange,
    QueryStatus,
    ReviewTask,
    SnapshotJudgment,
    TaskStatus,
)
from judgments.services import (
    claim_next_task,
    freeze_snapshot,
    queue_unjudged,
    record_judgment,
    set_query_status,
)
from tests.factories import make_item, make_judgment, make_query, make_user

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

THREADS = 10
JOIN_TIMEOUT = 60  # seconds; far above the real run time, below "hung"
BLOCKED_FOR = 0.5  # seconds a thread must stay blocked to count as waiting on a lock


def _open_connection() -> None:
    connection.ensure_connection()
    with connection.cursor() as cursor:  # session-wide: outlives the transactions below
        cursor.execute("SET lock_timeout = '10s'")


@dataclass
class Outcome:
    value: Any = None
    error: BaseException | None = None


def race(*works: Callable[[], Any]) -> list[Outcome]:
    """Run each callable in its own thread and connection, all released at once."""
    barrier = threading.Barrier(len(works))
    outcomes = [Outcome() for _ in works]

    def run(i: int) -> None:
        try:
            _open_connection()  # connect first, so the barrier lines up the transactions
            barrier.wait(timeout=JOIN_TIMEOUT)
            outcomes[i].value = works[i]()
        except BaseException as exc:
            outcomes[i].error = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(works))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread is still running: lock wait?"
    return outcomes


class InThread(threading.Thread):
    """Run ``work`` in a transaction on its own connection.

    With ``hold=True`` the transaction stays open, locks and all, after ``work`` returns
    and until :meth:`finish`; ``holding`` is set once ``work`` has returned.
    """

    def __init__(self, work: Callable[[], Any], *, hold: bool = False) -> None:
        super().__init__(daemon=True)
        self.work, self.hold = work, hold
        self.holding, self._release = threading.Event(), threading.Event()
        self.outcome = Outcome()

    def run(self) -> None:
        try:
            _open_connection()
            with transaction.atomic():
                self.outcome.value = self.work()
                self.holding.set()
                if self.hold:
                    self._release.wait(JOIN_TIMEOUT)
        except BaseException as exc:
            self.outcome.error = exc
        finally:
            self.holding.set()
            connection.close()

    def started(self) -> InThread:
        self.start()
        return self

    def still_waiting(self) -> bool:
        self.join(BLOCKED_FOR)
        return self.is_alive()

    def finish(self) -> Outcome:
        self._release.set()
        self.join(JOIN_TIMEOUT)
        assert not self.is_alive(), "thread did not finish: lock wait?"
        return self.outcome


def kinds(outcomes: list[Outcome]) -> Counter:
    return Counter("ok" if o.error is None else type(o.error).__name__ for o in outcomes)


# -- judgments ------------------------------------------------------------------------------


def test_concurrent_edits_of_one_version_let_exactly_one_through(
    query_vaccines, item_cdc_faq, reviewer_ana
):
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=1, reviewer=reviewer_ana)
    reviewers = [make_user(f"rater-{i}") for i in range(THREADS)]

    def edit_by(i: int) -> Callable[[], Judgment]:
        return lambda: record_judgment(
            query=query_vaccines,
            item=item_cdc_faq,
            grade=(0, 2, 3)[i % 3],
            reviewer=reviewers[i],
            expected_version=1,
            note=f"rater {i}",
        )

    outcomes = race(*(edit_by(i) for i in range(THREADS)))

    assert kinds(outcomes) == {"ok": 1, "JudgmentConflict": THREADS - 1}
    winner = next(i for i, o in enumerate(outcomes) if o.error is None)
    stored = Judgment.objects.get()
    assert (stored.version, stored.reviewer, stored.note) == (
        2,
        reviewers[winner],
        f"rater {winner}",
    )
    assert stored.grade == (0, 2, 3)[winner % 3]
    for outcome in outcomes:
        if outcome.error is not None:  # every loser was told who won, and with what
            assert outcome.error.current.version == 2
            assert outcome.error.current.reviewer == reviewers[winner]
    changes = list(JudgmentChange.objects.values_list("old_grade", "new_grade", "version"))
    assert changes == [(None, 1, 1), (1, stored.grade, 2)]


def test_concurrent_creates_of_one_pair_make_exactly_one_judgment(query_vaccines, item_cdc_faq):
    reviewers = [make_user(f"rater-{i}") for i in range(THREADS)]

    def create_by(i: int) -> Callable[[], Judgment]:
        return lambda: record_judgment(
            query=query_vaccines,
            item=item_cdc_faq,
            grade=i % 4,
            reviewer=reviewers[i],
            expected_version=None,
        )

    outcomes = race(*(create_by(i) for i in range(THREADS)))

    assert kinds(outcomes) == {"ok": 1, "JudgmentConflict": THREADS - 1}
    winner = next(i for i, o in enumerate(outcomes) if o.error is None)
    stored = Judgment.objects.get()
    assert (stored.grade, stored.version, stored.reviewer) == (winner % 4, 1, reviewers[winner])
    assert all(
        o.error.expected_version is None and o.error.current.pk == stored.pk
        for o in outcomes
        if o.error is not None
    )
    assert list(JudgmentChange.objects.values_list("old_grade", "new_grade", "changed_by")) == [
        (None, winner % 4, reviewers[winner].pk)
    ]


def test_concurrent_downgrades_keep_a_relevant_query_relevant(
    collection_graded, reviewer_ana, reviewer_ben
):
    for attempt in range(5):  # five fresh races in one test: one lucky pass proves little
        query = make_query(collection_graded, external_id=f"q-race-{attempt}")
        first, second = make_item(collection_graded), make_item(collection_graded)
        make_judgment(query=query, item=first, grade=3, reviewer=reviewer_ana)
        make_judgment(query=query, item=second, grade=2, reviewer=reviewer_ana)
        set_query_status(query=query, status=QueryStatus.RELEVANT, by=reviewer_ana)

        outcomes = race(
            lambda q=query, i=first: record_judgment(
                query=q, item=i, grade=0, reviewer=reviewer_ana, expected_version=1
            ),
            lambda q=query, i=second: record_judgment(
                query=q, item=i, grade=1, reviewer=reviewer_ben, expected_version=1
            ),
        )

        # Without the query-row lock both would see "another relevant judgment exists"
        # and both would commit, leaving a `relevant` query with no relevant judgment.
        assert kinds(outcomes) == {"ok": 1, "InvariantError": 1}, f"attempt {attempt}"
        refused = next(o.error for o in outcomes if o.error is not None)
        assert "is the only relevant item of query" in str(refused)
        query.refresh_from_db()
        assert query.status == QueryStatus.RELEVANT
        assert Judgment.objects.filter(query=query, grade__gte=2).count() == 1
        assert JudgmentChange.objects.filter(query=query, version=2).count() == 1


def test_status_change_and_downgrade_cannot_cross(
    query_vaccines, item_cdc_faq, item_who_qa, reviewer_ana, reviewer_ben
):
    """One reviewer marks the query relevant while another downgrades its last relevant
    judgment: whichever runs second sees the first, so the pair never commits together."""
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ana)
    make_judgment(query=query_vaccines, item=item_who_qa, grade=0, reviewer=reviewer_ana)

    outcomes = race(
        lambda: set_query_status(
            query=query_vaccines, status=QueryStatus.RELEVANT, by=reviewer_ana
        ),
        lambda: record_judgment(
            query=query_vaccines,
            item=item_cdc_faq,
            grade=1,
            reviewer=reviewer_ben,
            expected_version=1,
        ),
    )

    assert kinds(outcomes) == {"ok": 1, "InvariantError": 1}
    query_vaccines.refresh_from_db()
    relevant = Judgment.objects.filter(query=query_vaccines, grade__gte=2).count()
    assert (query_vaccines.status, relevant) in {
        (QueryStatus.RELEVANT, 1),  # status first: the downgrade was refused
        (QueryStatus.UNREVIEWED, 0),  # downgrade first: "relevant" was refused
    }


# -- locks ----------------------------------------------------------------------------------


def test_writers_wait_for_the_same_query_but_not_for_other_queries(
    collection_graded, query_vaccines, item_cdc_faq, item_who_qa, reviewer_ana, reviewer_ben
):
    other_query = make_query(collection_graded, external_id="q-measles")

    holder = InThread(
        lambda: make_judgment(
            query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ana
        ),
        hold=True,
    ).started()
    try:
        assert holder.holding.wait(JOIN_TIMEOUT)
        other = InThread(
            lambda: make_judgment(
                query=other_query, item=item_cdc_faq, grade=2, reviewer=reviewer_ben
            )
        ).started()
        same = InThread(
            lambda: make_judgment(
                query=query_vaccines, item=item_who_qa, grade=1, reviewer=reviewer_ben
            )
        ).started()

        # The collection row is only share-locked by writers: another query goes ahead.
        assert other.finish().error is None
        assert same.still_waiting(), "a second writer of the same query did not wait"
    finally:
        assert holder.finish().error is None
    assert same.finish().error is None
    assert Judgment.objects.count() == 3


def test_freeze_waits_for_writers_in_flight_and_holds_new_ones_back(
    collection_graded, query_vaccines, item_cdc_faq, item_who_qa, reviewer_ana, reviewer_ben
):
    writer = InThread(
        lambda: make_judgment(
            query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ana
        ),
        hold=True,
    ).started()
    try:
        assert writer.holding.wait(JOIN_TIMEOUT)
        freezer = InThread(
            lambda: freeze_snapshot(collection=collection_graded, by=reviewer_ana), hold=True
        ).started()
        assert freezer.still_waiting(), "freeze did not wait for the writer in flight"
    finally:
        assert writer.finish().error is None

    try:
        assert freezer.holding.wait(JOIN_TIMEOUT)
        late_writer = InThread(
            lambda: make_judgment(
                query=query_vaccines, item=item_who_qa, grade=0, reviewer=reviewer_ben
            )
        ).started()
        assert late_writer.still_waiting(), "a writer did not wait for the freeze"
    finally:
        frozen = freezer.finish()
    assert frozen.error is None
    assert late_writer.finish().error is None

    snapshot, created = frozen.value
    assert created
    assert snapshot.n_judgments == 1  # the writer in flight, not the late one
    assert list(
        SnapshotJudgment.objects.of(snapshot).values_list("item__external_id", "grade")
    ) == [("cdc-mrna-faq", 3)]
    assert Judgment.objects.count() == 2


# -- review queue ---------------------------------------------------------------------------


def test_concurrent_claims_never_hand_one_task_to_two_reviewers(collection_graded, query_vaccines):
    n_tasks = THREADS - 3
    items = [make_item(collection_graded) for _ in range(n_tasks)]
    queue_unjudged(
        collection=collection_graded,
        pairs=[(query_vaccines.pk, item.pk, rank) for rank, item in enumerate(items, 1)],
        source="run bm25",
    )
    reviewers = [make_user(f"rater-{i}") for i in range(THREADS)]

    outcomes = race(
        *(
            (lambda r=r: claim_next_task(reviewer=r, collection=collection_graded))
            for r in reviewers
        )
    )

    assert kinds(outcomes) == {"ok": THREADS}
    claimed = [o.value.pk for o in outcomes if o.value is not None]
    assert len(claimed) == len(set(claimed)) == n_tasks  # every task once; 3 reviewers got None
    rows = ReviewTask.objects.filter(status=TaskStatus.CLAIMED)
    assert rows.count() == n_tasks
    assert len(set(rows.values_list("claimed_by", flat=True))) == n_tasks


def test_a_claim_skips_a_task_another_reviewer_holds_locked_instead_of_waiting(
    collection_graded, query_vaccines, reviewer_ana, reviewer_ben
):
    """SKIP LOCKED: while ana's claim is in flight (its transaction holds the first task's
    row lock), ben's claim takes the next task at once. Without SKIP LOCKED it would wait
    for ana's lock; the wait is bounded here by ben's lock_timeout, which turns a wait
    into an error instead of a hang."""
    items = [make_item(collection_graded) for _ in range(2)]
    queue_unjudged(
        collection=collection_graded,
        pairs=[(query_vaccines.pk, item.pk, rank) for rank, item in enumerate(items, 1)],
        source="run bm25",
    )
    first = ReviewTask.objects.order_by("-priority", "pk").first()

    def claim_bounded(reviewer):
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL lock_timeout = '3s'")
        return claim_next_task(reviewer=reviewer, collection=collection_graded)

    ana = InThread(lambda: claim_bounded(reviewer_ana), hold=True).started()
    try:
        assert ana.holding.wait(JOIN_TIMEOUT)
        assert ana.outcome.error is None and ana.outcome.value.pk == first.pk
        ben = InThread(lambda: claim_bounded(reviewer_ben)).started()
        ben.join(JOIN_TIMEOUT)
        assert not ben.is_alive(), "ben's claim hung behind ana's lock"
        assert ana.is_alive(), "ana's transaction ended before ben's claim was checked"
    finally:
        assert ana.finish().error is None
    assert ben.outcome.error is None, f"ben's claim waited for ana's lock: {ben.outcome.error}"
    assert ben.outcome.value is not None and ben.outcome.value.pk != first.pk
    claimed = dict(ReviewTask.objects.values_list("pk", "claimed_by"))
    assert claimed == {first.pk: reviewer_ana.pk, ben.outcome.value.pk: reviewer_ben.pk}


def test_concurrent_queueing_of_the_same_pairs_keeps_one_task_per_pair(
    collection_graded, query_vaccines, item_cdc_faq, item_who_qa
):
    q = query_vaccines.pk
    first = InThread(
        lambda: queue_unjudged(
            collection=collection_graded,
            pairs=[(q, item_cdc_faq.pk, 3), (q, item_who_qa.pk, 8)],
            source="run bm25",
        ),
        hold=True,
    ).started()
    try:
        assert first.holding.wait(JOIN_TIMEOUT)
        # Queued while the first upload is still in flight: it cannot see those tasks yet.
        second = InThread(
            lambda: queue_unjudged(
                collection=collection_graded,
                pairs=[(q, item_who_qa.pk, 1), (q, item_cdc_faq.pk, 5)],
                source="run dense",
            )
        ).started()
        second.still_waiting()
    finally:
        assert first.finish().error is None
    assert second.finish().error is None

    assert first.outcome.value == (2, 2)
    assert second.outcome.value[0] == 2
    tasks = {
        t.item.external_id: (t.best_rank, t.priority, sorted(s.label for s in t.sources.all()))
        for t in ReviewTask.objects.select_related("item").prefetch_related("sources")
    }
    assert tasks == {  # priority by hand: 10 000 per source, minus the best rank
        "cdc-mrna-faq": (3, 20_000 - 3, ["run bm25", "run dense"]),
        "who-vaccines-qa": (1, 20_000 - 1, ["run bm25", "run dense"]),
    }


def test_concurrent_sources_of_one_task_are_all_counted_in_its_priority(
    collection_graded, query_vaccines, item_cdc_faq
):
    pair = (query_vaccines.pk, item_cdc_faq.pk)
    queue_unjudged(collection=collection_graded, pairs=[(*pair, 7)], source="run bm25")

    first = InThread(
        lambda: queue_unjudged(collection=collection_graded, pairs=[(*pair, 4)], source="run a"),
        hold=True,
    ).started()
    try:
        assert first.holding.wait(JOIN_TIMEOUT)
        second = InThread(
            lambda: queue_unjudged(collection=collection_graded, pairs=[(*pair, 9)], source="run b")
        ).started()
        assert second.still_waiting(), "the second queueing did not wait for the task lock"
    finally:
        assert first.finish().error is None
    assert second.finish().error is None

    task = ReviewTask.objects.get()
    # Three sources, best rank 4; computed without the lock it would count two.
    assert (task.best_rank, task.priority, task.sources.count()) == (4, 30_000 - 4, 3)
