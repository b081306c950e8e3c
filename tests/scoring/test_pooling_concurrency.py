"""A run import pools set-based (``judgments.services.pooling``) while reviewers judge:
real threads, each with its own PostgreSQL connection (see tests/judgments/test_concurrency.py).

The import locks its pooled queries before it reads their judgments, so a judgment of a
pooled pair either commits first (the import waits, sees it and queues nothing for the
pair) or waits for the import (and then completes the task the import made). Either way
no judged pair is left with an open review task.
"""

from __future__ import annotations

import pytest

from judgments.models import ReviewTask, TaskStatus
from scoring.services import import_run
from tests.factories import make_item, make_judgment
from tests.judgments.test_concurrency import JOIN_TIMEOUT, InThread

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

RUN = (
    "q-vaccines Q0 cdc-mrna-faq 1 3.0 bm25\n"
    "q-vaccines Q0 who-vaccines-qa 2 2.0 bm25\n"
    "q-vaccines Q0 new-doc 3 1.0 bm25\n"
)


def _tasks() -> dict[str, tuple[str, int | None, int, list[str]]]:
    return {
        t.item.external_id: (t.status, t.best_rank, t.priority, [s.label for s in t.sources.all()])
        for t in ReviewTask.objects.select_related("item").prefetch_related("sources")
    }


def test_an_import_waits_for_a_judgment_in_flight_and_does_not_queue_its_pair(
    collection_graded, query_vaccines, item_cdc_faq, item_who_qa, reviewer_ana, tmp_path
):
    path = tmp_path / "bm25.trec"
    path.write_text(RUN)
    judge = InThread(
        lambda: make_judgment(
            query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ana
        ),
        hold=True,
    ).started()
    try:
        assert judge.holding.wait(JOIN_TIMEOUT)
        importer = InThread(
            lambda: import_run(collection=collection_graded, path=path, name="bm25")
        ).started()
        assert importer.still_waiting(), "the import did not wait for the query's lock"
    finally:
        assert judge.finish().error is None
    outcome = importer.finish()
    assert outcome.error is None, outcome.error
    report = outcome.value
    assert (report.unjudged_found, report.newly_queued, report.placeholders_created) == (2, 2, 1)
    # One source each; priority by hand: 10,000 per source minus the rank.
    assert _tasks() == {
        "who-vaccines-qa": ("pending", 2, 10_000 - 2, ["run bm25"]),
        "new-doc": ("pending", 3, 10_000 - 3, ["run bm25"]),
    }


def test_a_judgment_waits_for_an_import_in_flight_and_completes_its_task(
    collection_graded, query_vaccines, item_cdc_faq, item_who_qa, reviewer_ana, tmp_path
):
    path = tmp_path / "bm25.trec"
    path.write_text(RUN)
    other_query_item = make_item(collection_graded, external_id="unrelated")
    importer = InThread(
        lambda: import_run(collection=collection_graded, path=path, name="bm25"), hold=True
    ).started()
    try:
        assert importer.holding.wait(JOIN_TIMEOUT)
        judge = InThread(
            lambda: make_judgment(
                query=query_vaccines, item=item_who_qa, grade=1, reviewer=reviewer_ana
            )
        ).started()
        assert judge.still_waiting(), "the judgment did not wait for the import's query lock"
    finally:
        assert importer.finish().error is None
    assert judge.finish().error is None
    assert importer.outcome.value.newly_queued == 3
    tasks = _tasks()
    assert {item: row[0] for item, row in tasks.items()} == {
        "cdc-mrna-faq": "pending",
        "who-vaccines-qa": "done",
        "new-doc": "pending",
    }
    assert other_query_item.review_tasks.count() == 0
    assert ReviewTask.objects.filter(status=TaskStatus.PENDING).count() == 2
