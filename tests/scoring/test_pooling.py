"""Set-based pooling of a multi-stage run (``judgments.services.pooling``), on either
database: one task per pair, one source per stage, the first stage as the task's source,
and the priority of ``task_priority`` (10,000 per source minus the best rank), by hand."""

from __future__ import annotations

from judgments.models import Collection, ReviewTask
from scoring.services import import_run
from tests.factories import BINARY_SCALE, make_collection, make_item, make_judgment, make_query
from tests.scoring.test_runs import STAGED_RUN


def _tasks() -> dict[tuple[str, str], tuple[str, int, int, dict[str, int]]]:
    rows = ReviewTask.objects.select_related("query", "item").prefetch_related("sources")
    return {
        (t.query.external_id, t.item.external_id): (
            t.source,
            t.best_rank,
            t.priority,
            {s.label: s.rank for s in t.sources.all()},
        )
        for t in rows
    }


def test_a_staged_run_pools_each_pair_once_with_a_source_per_stage(db, tmp_path) -> None:
    c = make_collection(slug="pool", scale=BINARY_SCALE, relevant_grade=1)
    q1 = make_query(c, external_id="q1")
    make_query(c, external_id="q2")
    make_query(c, external_id="q3")
    make_judgment(query=q1, item=make_item(c, external_id="d4"), grade=1)  # judged: not pooled
    path = tmp_path / "rag.jsonl"
    path.write_text(STAGED_RUN)
    report = import_run(collection=c, path=path, name="rag", pool_depth=2)
    # Depth 2: q1 candidates d1 d2, reranked d2 d1, context d2; q2 candidates d5 d1,
    # reranked d5, context d5. d1, d2 and d5 are placeholders; q3 abstains.
    assert (report.unjudged_found, report.newly_queued, report.placeholders_created) == (4, 4, 3)
    cand, rer, ctx = "run rag / candidates", "run rag / reranked", "run rag / context"
    assert _tasks() == {
        ("q1", "d1"): (cand, 1, 20_000 - 1, {cand: 1, rer: 2}),
        ("q1", "d2"): (cand, 1, 30_000 - 1, {cand: 2, rer: 1, ctx: 1}),
        ("q2", "d5"): (cand, 1, 30_000 - 1, {cand: 1, rer: 1, ctx: 1}),
        ("q2", "d1"): (cand, 2, 10_000 - 2, {cand: 2}),
    }

    # A second run adds its sources to the same tasks and reorders them; no new task.
    path = tmp_path / "bm25.trec"
    path.write_text("q2 Q0 d1 1 9.0 bm25\nq2 Q0 d5 2 8.0 bm25\n")
    report = import_run(collection=c, path=path, name="bm25", pool_depth=2)
    assert (report.unjudged_found, report.newly_queued, report.placeholders_created) == (2, 0, 0)
    tasks = _tasks()
    assert tasks[("q2", "d1")] == (cand, 1, 20_000 - 1, {cand: 2, "run bm25": 1})
    assert tasks[("q2", "d5")] == (cand, 1, 40_000 - 1, {cand: 1, rer: 1, ctx: 1, "run bm25": 2})
    assert tasks[("q1", "d1")] == (cand, 1, 20_000 - 1, {cand: 1, rer: 2})


def test_pooling_into_a_two_assessor_collection_makes_two_slots_per_pair(db, tmp_path) -> None:
    c = make_collection(slug="pool2", scale=BINARY_SCALE, relevant_grade=1)
    make_query(c, external_id="q1")
    make_query(c, external_id="q2")
    make_query(c, external_id="q3")
    # Set after the caller's copy was made: the stored setting decides the slots.
    Collection.objects.filter(pk=c.pk).update(assessors_per_item=2)
    path = tmp_path / "rag.jsonl"
    path.write_text(STAGED_RUN)
    report = import_run(collection=c, path=path, name="rag", pool_depth=2)
    # Four unjudged pairs, as above; newly_queued counts pairs (slot 1), as before.
    assert (report.unjudged_found, report.newly_queued) == (4, 4)
    cand = "run rag / candidates"

    def slots() -> dict[tuple[str, str, int], tuple[str, str, int, int, int]]:
        rows = ReviewTask.objects.select_related("query", "item")
        return {
            (t.query.external_id, t.item.external_id, t.slot): (
                t.status,
                t.source,
                t.best_rank,
                t.priority,
                t.sources.count(),
            )
            for t in rows
        }

    first = slots()
    assert len(first) == 8
    for q, i in {(q, i) for q, i, _ in first}:
        one, two = first[(q, i, 1)], first[(q, i, 2)]
        assert two[:4] == one[:4]  # slot 2: slot 1's status, source, rank and priority
        assert two[4] == 0  # sources are kept on slot 1 only
    assert first[("q1", "d2", 2)] == ("pending", cand, 1, 30_000 - 1, 0)
    assert first[("q2", "d1", 1)] == ("pending", cand, 2, 10_000 - 2, 1)

    # A second run reorders both slots of the pairs it surfaces; no new task.
    path = tmp_path / "bm25.trec"
    path.write_text("q2 Q0 d1 1 9.0 bm25\n")
    report = import_run(collection=c, path=path, name="bm25", pool_depth=2)
    assert (report.unjudged_found, report.newly_queued) == (1, 0)
    again = slots()
    assert len(again) == 8
    assert again[("q2", "d1", 1)] == ("pending", cand, 1, 20_000 - 1, 2)
    assert again[("q2", "d1", 2)] == ("pending", cand, 1, 20_000 - 1, 0)
