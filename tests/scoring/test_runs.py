"""Run imports: stored immutably per stage and query, all or nothing, and pooled for review."""

from __future__ import annotations

import hashlib

import pytest

from judgments.models import Item, ReviewTask, TaskSource
from judgments.services import InvariantError
from scoring.models import RankedList, Run
from scoring.services import RunImportError, import_run
from tests.factories import BINARY_SCALE, make_collection, make_item, make_judgment, make_query

# q1's rank column disagrees with its scores, and d2/d3 tie at 3.0: trec_eval orders by
# score descending, ties by docid descending, so q1 is d3, d2, d4, d1 whatever the ranks say.
TREC_RUN = """\
q1 Q0 d1 1 1.0 bm25
q1 Q0 d2 2 3.0 bm25
q1 Q0 d3 3 3.0 bm25
q1 Q0 d4 4 2.0 bm25
q2 Q0 d5 1 5.0 bm25
"""

# Stages first appear as candidates, reranked, context: the pipeline order (not
# alphabetical, which would put context second). q3 abstains and ranks nothing.
STAGED_RUN = """\
{"query": "q1", "stages": {"candidates": ["d1", "d2", "d3", "d4"], "reranked": ["d2", "d1"], "context": ["d2"]}}
{"query": "q2", "stages": {"candidates": ["d5", "d1", "d2"], "reranked": ["d5"], "context": ["d5"]}}
{"query": "q3", "abstain": true}
"""  # noqa: E501


def lists(run: Run, stage: str = "default") -> dict[str, list[str]]:
    return dict(
        RankedList.objects.filter(stage__run=run, stage__name=stage).values_list(
            "query_id", "items"
        )
    )


@pytest.fixture
def collection(db):
    """Binary collection, pool depth 10, queries q1..q3, items d1..d5 (none judged)."""
    c = make_collection(slug="runs", scale=BINARY_SCALE, relevant_grade=1)
    for qid in ("q1", "q2", "q3"):
        make_query(c, external_id=qid)
    for item in ("d1", "d2", "d3", "d4", "d5"):
        make_item(c, external_id=item)
    return c


# -- what an import stores ----------------------------------------------------------------


def test_trec_run_is_stored_in_trec_eval_order(collection, write_file) -> None:
    path = write_file("bm25.trec", TREC_RUN)
    report = import_run(collection=collection, path=path, name="bm25", description="BM25 k1=0.9")
    run = report.run
    assert (run.name, run.description, run.source_filename) == ("bm25", "BM25 k1=0.9", "bm25.trec")
    assert run.source_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (run.source_format, run.order_rule, run.dedup_policy) == ("trec", "score", "error")
    assert run.duplicates_dropped == 0
    stages = list(run.stages.order_by("position").values_list("name", "position", "depth"))
    assert stages == [("default", 0, 4)]
    stage = run.stages.get()
    assert (stage.n_queries, stage.n_rows) == (2, 5)
    assert lists(run) == {"q1": ["d3", "d2", "d4", "d1"], "q2": ["d5"]}
    assert report.stages == [stage]


def test_trec_run_by_rank_column(collection, write_file) -> None:
    run = import_run(
        collection=collection, path=write_file("r.trec", TREC_RUN), name="r", order="rank"
    ).run
    assert run.order_rule == "rank"
    assert lists(run)["q1"] == ["d1", "d2", "d3", "d4"]


def test_jsonl_stages_are_stored_in_pipeline_order(collection, write_file) -> None:
    path = write_file("rag.jsonl", STAGED_RUN)
    run = import_run(collection=collection, path=path, name="rag").run
    assert (run.source_format, run.order_rule) == ("jsonl", "list")
    assert run.source_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    stages = run.stages.order_by("position")
    # (name, position, depth = longest list, queries incl. q3's empty list, rows)
    assert [(s.name, s.position, s.depth, s.n_queries, s.n_rows) for s in stages] == [
        ("candidates", 0, 4, 3, 4 + 3),
        ("reranked", 1, 2, 3, 2 + 1),
        ("context", 2, 1, 3, 1 + 1),
    ]
    assert lists(run, "candidates") == {
        "q1": ["d1", "d2", "d3", "d4"],
        "q2": ["d5", "d1", "d2"],
        "q3": [],
    }
    assert lists(run, "reranked") == {"q1": ["d2", "d1"], "q2": ["d5"], "q3": []}
    abstained = RankedList.objects.filter(stage__run=run, abstained=True)
    assert sorted(abstained.values_list("stage__name", "query_id")) == [
        ("candidates", "q3"),
        ("context", "q3"),
        ("reranked", "q3"),
    ]


# -- refusals: all or nothing --------------------------------------------------------------

DUPLICATE_TREC = """\
q1 Q0 d1 1 3.0 t
q1 Q0 d2 2 2.0 t
q1 Q0 d1 3 1.0 t
q2 Q0 d5 1 1.0 t
"""


def test_duplicate_ids_are_refused_naming_file_and_line(collection, write_file, row_counts) -> None:
    path = write_file("dup.trec", DUPLICATE_TREC)
    before = row_counts()
    with pytest.raises(RunImportError) as refused:
        import_run(collection=collection, path=path, name="dup")
    assert refused.value.errors == [
        f"{path} line 3: duplicate docid 'd1' for query 'q1' (first at line 1); "
        "pass --dedup first to keep the first occurrence"
    ]
    assert "nothing was imported" in str(refused.value)
    assert row_counts() == before


def test_dedup_first_keeps_the_first_occurrence_and_records_it(collection, write_file) -> None:
    run = import_run(
        collection=collection,
        path=write_file("dup.trec", DUPLICATE_TREC),
        name="dup",
        dedup="first",
    ).run
    assert (run.dedup_policy, run.duplicates_dropped) == ("first", 1)
    # The kept d1 is the better-scored one (3.0), in the trec_eval order.
    assert lists(run) == {"q1": ["d1", "d2"], "q2": ["d5"]}
    assert run.stages.get().n_rows == 3


def test_dedup_first_in_a_jsonl_stage(collection, write_file) -> None:
    text = '{"query": "q1", "stages": {"candidates": ["d1", "d2", "d1"], "context": ["d2"]}}\n'
    path = write_file("dup.jsonl", text)
    with pytest.raises(RunImportError) as refused:
        import_run(collection=collection, path=path, name="dup")
    assert refused.value.errors[0].startswith(
        f"{path} line 1: duplicate id 'd1' at position 3 of stage 'candidates' for query 'q1'"
    )
    run = import_run(collection=collection, path=path, name="dup", dedup="first").run
    assert run.duplicates_dropped == 1
    assert lists(run, "candidates") == {"q1": ["d1", "d2"]}


BAD_TREC = """\
q1 Q0 d1 1 3.0 t
q1 Q0 d2 2
q1 Q0 d3 3 high t
q2 Q0 d5 1 1.0 t
"""


def test_bad_lines_are_refused_with_line_numbers(collection, write_file, row_counts) -> None:
    path = write_file("bad.trec", BAD_TREC)
    before = row_counts()
    with pytest.raises(RunImportError) as refused:
        import_run(collection=collection, path=path, name="bad")
    assert refused.value.errors == [
        f"{path} line 2: expected 6 fields 'qid Q0 docid rank score tag', found 4; "
        "put one ranked item per line",
        f"{path} line 3: score 'high' is not a number; the 5th field must be the retrieval score",
    ]
    assert row_counts() == before


def test_a_bad_jsonl_line_is_refused_with_its_number(collection, write_file, row_counts) -> None:
    path = write_file(
        "bad.jsonl", '{"query": "q1", "ranking": ["d1"]}\n{"query": "q2", "ranking": \n'
    )
    before = row_counts()
    with pytest.raises(RunImportError) as refused:
        import_run(collection=collection, path=path, name="bad")
    assert refused.value.errors[0].startswith(f"{path} line 2: not valid JSON")
    assert row_counts() == before


def test_a_run_name_is_used_once_per_collection(collection, write_file, row_counts) -> None:
    path = write_file("bm25.trec", TREC_RUN)
    import_run(collection=collection, path=path, name="bm25")
    before = row_counts()
    with pytest.raises(InvariantError, match="has a run named 'bm25' already"):
        import_run(collection=collection, path=path, name="bm25")
    assert row_counts() == before
    # Another collection may use the name.
    other = make_collection(slug="other", scale=BINARY_SCALE, relevant_grade=1)
    for qid in ("q1", "q2"):
        make_query(other, external_id=qid)
    assert import_run(collection=other, path=path, name="bm25").run.collection == other


# -- pooling into the review queue ----------------------------------------------------------


@pytest.fixture
def pool_collection(db):
    """Pool depth 2; queries q1, q2; items d1, d2, d3; (q1, d1) judged 1."""
    c = make_collection(slug="pool", scale=BINARY_SCALE, relevant_grade=1, pool_depth=2)
    q1, _ = make_query(c, external_id="q1"), make_query(c, external_id="q2")
    items = {i: make_item(c, external_id=i) for i in ("d1", "d2", "d3")}
    make_judgment(query=q1, item=items["d1"], grade=1)
    return c


# q1: d1 (judged), n1 (unknown) within depth 2; d2, n2 below it.
# q2: d2, d3 within depth 2; n3 below it.  q9 is not a collection query.
POOL_TREC = """\
q1 Q0 d1 1 4.0 t
q1 Q0 n1 2 3.0 t
q1 Q0 d2 3 2.0 t
q1 Q0 n2 4 1.0 t
q2 Q0 d2 1 3.0 t
q2 Q0 d3 2 2.0 t
q2 Q0 n3 3 1.0 t
q9 Q0 n4 1 1.0 t
"""

# q1: candidates d2 (new), d1 (judged) | n2 below depth; context d1 (judged).
# q2: candidates d3 (queued by bm25 already), n5 (unknown) | d2 below; context d3.
POOL_JSONL = """\
{"query": "q1", "stages": {"candidates": ["d2", "d1", "n2"], "context": ["d1"]}}
{"query": "q2", "stages": {"candidates": ["d3", "n5", "d2"], "context": ["d3"]}}
"""


def tasks(collection) -> dict[tuple[str, str], tuple[int | None, list[tuple[str, int]]]]:
    """(query, item) -> (best rank, sorted [(source label, rank)])."""
    out = {}
    for task in ReviewTask.objects.filter(collection=collection).select_related("query", "item"):
        sources = sorted(TaskSource.objects.filter(task=task).values_list("label", "rank"))
        out[(task.query.external_id, task.item.external_id)] = (task.best_rank, sources)
    return out


def test_a_trec_run_queues_its_unjudged_pool(pool_collection, write_file) -> None:
    report = import_run(
        collection=pool_collection,
        path=write_file("bm25.trec", POOL_TREC),
        name="bm25",
        ignore_unknown_queries=True,
    )
    # Within depth 2 and unjudged: (q1, n1), (q2, d2), (q2, d3). (q1, d1) is judged.
    assert (report.unjudged_found, report.newly_queued) == (3, 3)
    assert tasks(pool_collection) == {
        ("q1", "n1"): (2, [("run bm25", 2)]),
        ("q2", "d2"): (1, [("run bm25", 1)]),
        ("q2", "d3"): (2, [("run bm25", 2)]),
    }
    # Only the pooled unknown id becomes a placeholder; n2, n3 (below depth) and n4 (query
    # not in the collection) stay in the run only.
    assert report.placeholders_created == 1
    assert Item.objects.get(collection=pool_collection, external_id="n1").placeholder
    assert not Item.objects.filter(external_id__in=["n2", "n3", "n4"]).exists()
    assert report.queries_not_in_collection == ["q9"]
    assert (report.unknown.query_ids, report.unknown.query_lines) == (["q9"], 1)
    assert report.unknown.item_ids == 1  # n1, made a placeholder
    assert not RankedList.objects.filter(stage__run=report.run, query_id="q9").exists()
    assert report.run.stages.get().n_queries == 2


def test_two_runs_surfacing_one_pair_make_one_task_with_two_sources(
    pool_collection, write_file
) -> None:
    import_run(
        collection=pool_collection,
        path=write_file("bm25.trec", POOL_TREC),
        name="bm25",
        ignore_unknown_queries=True,
    )
    report = import_run(
        collection=pool_collection, path=write_file("rag.jsonl", POOL_JSONL), name="rag"
    )
    # Unjudged within depth 2, per stage: candidates (q1, d2), (q2, d3), (q2, n5); context
    # (q2, d3) again. Distinct pairs: 3; new to the queue: (q1, d2) and (q2, n5).
    assert (report.unjudged_found, report.newly_queued, report.placeholders_created) == (3, 2, 1)
    assert tasks(pool_collection) == {
        ("q1", "n1"): (2, [("run bm25", 2)]),
        ("q1", "d2"): (1, [("run rag / candidates", 1)]),
        ("q2", "d2"): (1, [("run bm25", 1)]),
        ("q2", "d3"): (
            1,
            [("run bm25", 2), ("run rag / candidates", 1), ("run rag / context", 1)],
        ),
        ("q2", "n5"): (2, [("run rag / candidates", 2)]),
    }
    assert ReviewTask.objects.filter(query__external_id="q2", item__external_id="d3").count() == 1
    # Importing the same file again under a new name adds sources, never tasks.
    again = import_run(
        collection=pool_collection, path=write_file("rag2.jsonl", POOL_JSONL), name="rag2"
    )
    assert (again.unjudged_found, again.newly_queued, again.placeholders_created) == (3, 0, 0)
    assert ReviewTask.objects.filter(collection=pool_collection).count() == 5


def test_a_pair_judged_after_queueing_is_not_queued_again(pool_collection, write_file) -> None:
    import_run(
        collection=pool_collection,
        path=write_file("bm25.trec", POOL_TREC),
        name="bm25",
        ignore_unknown_queries=True,
    )
    task = ReviewTask.objects.get(query__external_id="q2", item__external_id="d3")
    make_judgment(query=task.query, item=task.item, grade=0)
    report = import_run(
        collection=pool_collection, path=write_file("rag.jsonl", POOL_JSONL), name="rag"
    )
    # (q2, d3) is judged now: only (q1, d2) and (q2, n5) are unjudged.
    assert (report.unjudged_found, report.newly_queued) == (2, 2)
    task.refresh_from_db()
    assert task.status == "done"
    assert list(TaskSource.objects.filter(task=task).values_list("label", flat=True)) == [
        "run bm25"
    ]
