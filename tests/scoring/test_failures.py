"""All or nothing under a crash: a run import and a scoring that fail after they have
started writing leave no row behind, and the next attempt succeeds.

The failure is injected by patching one database call of the service (tests/failures.py);
the same tests run on SQLite and, in CI's second pass, on PostgreSQL.
"""

from __future__ import annotations

import importlib

import pytest

import verity_eval as engine
from judgments.models import ReviewTask, TaskStatus
from scoring.models import Evaluation, EvaluationQuery, RankedList, Run, RunStage
from scoring.services import import_run, score_run_stage
from tests.failures import assert_all_or_nothing

from .conftest import RECALL_EXAMPLE

run_service = importlib.import_module("scoring.services.runs")


@pytest.mark.parametrize(
    ("target", "name"),
    [
        # The run and its stage are written (on PostgreSQL the lists too, by COPY): a
        # stage's lists are flushed there once, at the end, never through bulk_create.
        (run_service._ListWriter, "_flush"),
        (run_service, "pool_items"),  # ... and every ranked list
    ],
    ids=["at-ranked-lists", "at-pooling"],
)
def test_a_run_import_that_fails_midway_leaves_nothing(recall_v1, monkeypatch, target, name):
    collection = recall_v1.collection

    report = assert_all_or_nothing(
        monkeypatch,
        target,
        name,
        lambda: import_run(collection=collection, path=RECALL_EXAMPLE / "run.trec", name="r"),
    )

    assert report.run.name == "r" and Run.objects.count() == 1
    assert RunStage.objects.count() == 1 and RankedList.objects.count() == 3
    # The bundle judges x for every query; y, ranked for C, is the one unjudged pair.
    task = ReviewTask.objects.exclude(status=TaskStatus.DONE).get()
    assert (task.query.external_id, task.item.external_id) == ("C", "y")


def test_a_scoring_that_fails_midway_leaves_nothing(recall_v1, monkeypatch):
    run = import_run(
        collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="r"
    ).run

    def score():
        return score_run_stage(
            run=run,
            stage=run.stages.get(),
            snapshot=recall_v1,
            params=engine.EvalParams(ks=(2,), rel_level=1),
        )

    # The evaluation row is written; its per-query rows fail.
    evaluation, created = assert_all_or_nothing(
        monkeypatch, EvaluationQuery.objects, "bulk_create", score
    )

    assert created and Evaluation.objects.count() == 1
    assert EvaluationQuery.objects.filter(evaluation=evaluation).count() == 3
    assert evaluation.aggregates["R@2"]["macro"] == pytest.approx(4 / 9)
