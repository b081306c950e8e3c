"""Evaluations: one run stage scored against one frozen snapshot, stored and reproducible.

Expected values are hand calculations written next to each case, or pytrec_eval (trec_eval
inside) as the oracle; none is read back from the code under test.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import pytrec_eval
from django.db import IntegrityError, connection, transaction

import verity_eval as engine
from judgments.models import Item, Query
from judgments.selectors import diff_snapshots
from judgments.services import (
    InvariantError,
    freeze_snapshot,
    record_judgment,
    set_query_status,
)
from scoring.models import Evaluation, EvaluationQuery, RankedList, Run, RunStage
from scoring.services import (
    import_run,
    import_unit_mapping,
    score_run_stage,
    snapshot_inputs,
)
from tests.factories import BINARY_SCALE, make_collection, make_item, make_judgment, make_query

from .conftest import RECALL_EXAMPLE

EXACT = {"rel": 1e-12, "abs": 1e-12}


def macro(evaluation: Evaluation, measure: str) -> Any:
    return evaluation.aggregates[measure]["macro"]


def pooled(evaluation: Evaluation, measure: str) -> Any:
    return evaluation.aggregates[measure]["pooled"]


def rows(evaluation: Evaluation) -> dict[str, dict[str, Any]]:
    return dict(
        EvaluationQuery.objects.filter(evaluation=evaluation).values_list("query_id", "values")
    )


def score(run: Run, snapshot, stage: str | None = None, mapping=None, **params: Any):
    """Score ``run`` (its only stage, or ``stage``) with EvalParams(**params)."""
    st = run.stages.get() if stage is None else run.stages.get(name=stage)
    return score_run_stage(
        run=run, stage=st, snapshot=snapshot, params=engine.EvalParams(**params), mapping=mapping
    )


def recompute(run: Run, stage: RunStage, snapshot, **params: Any) -> engine.EvalResult:
    """The engine on the snapshot's frozen rows and the stored lists: no stored evaluation
    is looked up, so this is a recomputation from the inputs."""
    qrels, statuses, evidence = snapshot_inputs(snapshot)
    rankings = dict(RankedList.objects.filter(stage=stage).values_list("query_id", "items"))
    return engine.evaluate(
        qrels, rankings, engine.EvalParams(**params), statuses=statuses, evidence=evidence
    )


# -- the acceptance: the founding example end to end ---------------------------------


def test_founding_example_end_to_end(recall_v1, run_command) -> None:
    """v1 = the bundle as is. Relevant sets A {a,b,c}, B {d}, C {e}; the run ranks
    A: a x b c, B: x d, C: x y. At k=2 the hits are A 1, B 1, C 0, so
    macro R@2 = (1/3 + 1 + 0)/3 = 4/9, pooled = (1+1+0)/(3+1+1) = 2/5,
    AnyHit@2 = 2/3 (A, B), AllHit@2 = 1/3 (B), Ceiling@2(A) = min(2,3)/3 = 2/3.

    Then a reviewer judges the pooled item y relevant for C (the run import queued it).
    v2: C's G = {e, y}, top 2 = x, y, so C has 1 hit of 2:
    macro R@2 = (1/3 + 1 + 1/2)/3 = 11/18, pooled = (1+1+1)/(3+1+2) = 1/2,
    AnyHit@2 = 3/3 = 1, AllHit@2 = 1/3 (still only B), Ceiling@2(C) = min(2,2)/2 = 1.
    """
    collection = recall_v1.collection
    run_command("import_run", collection.slug, RECALL_EXAMPLE / "run.trec", "--name", "example")
    run = Run.objects.get(collection=collection, name="example")
    stage = run.stages.get()

    v1_eval, created = score(run, recall_v1, ks=(2,))
    assert created
    assert macro(v1_eval, "R@2") == pytest.approx(4 / 9, **EXACT)
    assert pooled(v1_eval, "R@2") == pytest.approx(2 / 5, **EXACT)
    assert macro(v1_eval, "AnyHit@2") == pytest.approx(2 / 3, **EXACT)
    assert macro(v1_eval, "AllHit@2") == pytest.approx(1 / 3, **EXACT)
    v1_rows = rows(v1_eval)
    assert v1_rows["A"]["Ceiling@2"] == pytest.approx(2 / 3, **EXACT)
    assert [v1_rows[q]["hits@2"] for q in "ABC"] == [1, 1, 0]
    assert [v1_rows[q]["weight"] for q in "ABC"] == pytest.approx([3 / 5, 1 / 5, 1 / 5])

    y = Item.objects.get(collection=collection, external_id="y")
    query_c = Query.objects.get(collection=collection, external_id="C")
    record_judgment(query=query_c, item=y, grade=1, reviewer=None, expected_version=None)

    # v1 is frozen: the same inputs give the same stored evaluation ...
    again, created = score(run, recall_v1, ks=(2,))
    assert (again.pk, created) == (v1_eval.pk, False)
    # ... and recomputing from v1's rows (no stored evaluation involved) gives its numbers.
    fresh = recompute(run, stage, recall_v1, ks=(2,), rel_level=1)
    assert fresh.aggregates == v1_eval.aggregates
    assert fresh.per_query == v1_rows

    v2, created = freeze_snapshot(collection=collection, by=None, note="y judged")
    assert created and v2.number == 2 and v2.content_hash != recall_v1.content_hash
    diff = diff_snapshots(recall_v1, v2)
    assert diff.added == [("C", "y", 1)]
    assert not (diff.removed or diff.regraded or diff.status_changes or diff.evidence_changes)
    # v1 was frozen before the run queued (C, y); judging it closed that task again.
    assert (diff.unjudged_added, diff.unjudged_removed, diff.scale_changed) == (0, 0, False)

    v2_eval, created = score(run, v2, ks=(2,))
    assert created and v2_eval.pk != v1_eval.pk
    assert macro(v2_eval, "R@2") == pytest.approx(11 / 18, **EXACT)
    assert pooled(v2_eval, "R@2") == pytest.approx(1 / 2, **EXACT)
    assert macro(v2_eval, "AnyHit@2") == pytest.approx(1, **EXACT)
    assert macro(v2_eval, "AllHit@2") == pytest.approx(1 / 3, **EXACT)
    v2_rows = rows(v2_eval)
    assert v2_rows["C"]["R@2"] == pytest.approx(1 / 2, **EXACT)
    assert v2_rows["C"]["Ceiling@2"] == pytest.approx(1, **EXACT)
    assert v2_rows["A"]["Ceiling@2"] == pytest.approx(2 / 3, **EXACT)
    # v1's stored numbers did not move.
    v1_eval.refresh_from_db()
    assert macro(v1_eval, "R@2") == pytest.approx(4 / 9, **EXACT)


def test_founding_example_agrees_with_pytrec_eval(recall_v1) -> None:
    """Oracle: trec_eval's measures (via pytrec_eval) on the fixture's qrels.trec and
    run.trec, per query, against the stored evaluation of the same data (v1)."""
    run = import_run(
        collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="example"
    ).run
    evaluation, _ = score(run, recall_v1, ks=(2,))
    qrels: dict[str, dict[str, int]] = {}
    for line in (RECALL_EXAMPLE / "qrels.trec").read_text().split("\n"):
        if line.strip():
            q, _, d, g = line.split()
            qrels.setdefault(q, {})[d] = int(g)
    trec_run: dict[str, dict[str, float]] = {}
    for line in (RECALL_EXAMPLE / "run.trec").read_text().split("\n"):
        if line.strip():
            q, _, d, _, s, _ = line.split()
            trec_run.setdefault(q, {})[d] = float(s)
    names = {
        "recall_2": "R@2",
        "P_2": "P@2",
        "ndcg_cut_2": "nDCG@2",
        "recip_rank": "RR",
        "map": "AP",
    }
    oracle = pytrec_eval.RelevanceEvaluator(qrels, set(names)).evaluate(trec_run)
    stored = rows(evaluation)
    assert sorted(oracle) == ["A", "B", "C"]
    for qid, values in oracle.items():
        for trec_name, ours in names.items():
            assert stored[qid][ours] == pytest.approx(values[trec_name], abs=1e-6), (qid, ours)


# -- what an evaluation stores -----------------------------------------------------------------


def test_evaluation_stores_params_engine_fingerprint_counts_and_rows(recall_v1) -> None:
    run = import_run(
        collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="example"
    ).run
    evaluation, _ = score(run, recall_v1, ks=(2,))
    evaluation.refresh_from_db()
    assert evaluation.run == run and evaluation.stage.name == "default"
    assert evaluation.snapshot == recall_v1 and evaluation.mapping is None
    assert evaluation.engine_version == engine.__version__
    assert len(evaluation.fingerprint) == 64 and int(evaluation.fingerprint, 16) >= 0
    p = evaluation.params
    assert (p["ks"], p["rel_level"], p["unjudged"], p["measures"]) == ([2], 1, "nonrel", None)
    assert (p["order"], p["dedup"], p["stage"], p["mapping"]) == ("score", "error", "default", None)
    assert (p["snapshot"], p["snapshot_hash"]) == (1, recall_v1.content_hash)
    assert evaluation.status == "ok"
    c = evaluation.counts
    assert (c["scorable"], c["excluded"], c["empty_ranking"], c["abstained"]) == (3, {}, 0, 0)
    stored = rows(evaluation)
    assert sorted(stored) == ["A", "B", "C"]
    # A: [a, x, b, c] vs {a, b, c} at 2: 1 hit of 3; both of its top 2 are judged.
    a = stored["A"]
    assert a["R@2"] == pytest.approx(1 / 3, **EXACT)
    assert (a["hits@2"], a["relevant"], a["AnyHit@2"], a["AllHit@2"]) == (1, 3, 1, 0)
    assert a["Judged@2"] == 1
    # C: [x, y]; y has no judgment in v1: Judged@2 = 1/2 (macro 5/6 with A and B at 1).
    assert stored["C"]["Judged@2"] == pytest.approx(1 / 2, **EXACT)
    assert macro(evaluation, "Judged@2") == pytest.approx(5 / 6, **EXACT)


@pytest.fixture
def accounting(db):
    """Five queries, one of each fate, frozen as v1; then q6 is added (after the freeze).

    q1 relevant, G = {d1, d2} (d3 judged 0);  q2 relevant, G = {d4};
    q3 unreviewed (d1 judged 1);  q4 no_answer (d5 judged 0);
    q5 relevant, G = {d2, d3}, absent from the run;  q6 added after v1 (relevant, G = {d1}).
    """
    c = make_collection(slug="accounting", scale=BINARY_SCALE, relevant_grade=1)
    items = {i: make_item(c, external_id=i) for i in ("d1", "d2", "d3", "d4", "d5")}
    q = {qid: make_query(c, external_id=qid) for qid in ("q1", "q2", "q3", "q4", "q5")}
    for qid, item, grade in [
        ("q1", "d1", 1),
        ("q1", "d2", 1),
        ("q1", "d3", 0),
        ("q2", "d4", 1),
        ("q3", "d1", 1),
        ("q4", "d5", 0),
        ("q5", "d2", 1),
        ("q5", "d3", 1),
    ]:
        make_judgment(query=q[qid], item=items[item], grade=grade)
    for qid, status in [("q1", "relevant"), ("q2", "relevant"), ("q5", "relevant")]:
        set_query_status(query=q[qid], status=status, by=None)
    set_query_status(query=q["q4"], status="no_answer", by=None)
    v1, _ = freeze_snapshot(collection=c, by=None)
    q6 = make_query(c, external_id="q6")
    make_judgment(query=q6, item=items["d1"], grade=1)
    set_query_status(query=q6, status="relevant", by=None)
    return c, v1


ACCOUNTING_RUN = """\
q1 Q0 d3 1 4.0 t
q1 Q0 d1 2 3.0 t
q1 Q0 d9 3 2.0 t
q1 Q0 d2 4 1.0 t
q2 Q0 d4 1 1.0 t
q3 Q0 d1 1 1.0 t
q4 Q0 d5 1 1.0 t
q6 Q0 d1 1 1.0 t
q9 Q0 d1 1 1.0 t
"""


def test_queries_are_accounted_by_snapshot_status(accounting, write_file) -> None:
    """Scorable: q1, q2, q5 (status relevant in v1). At k=2:
    q1 [d3, d1] vs {d1, d2}: 1 hit, R = 1/2;  q2 [d4] vs {d4}: R = 1;
    q5 not in the run: empty ranking, R = 0, Ceiling = min(2,2)/2 = 1.
    macro R@2 = (1/2 + 1 + 0)/3 = 1/2; pooled = (1 + 1 + 0)/(2 + 1 + 2) = 2/5.
    Excluded: q3 unreviewed, q4 no_answer, q6 (added after v1) not_in_snapshot; q9 (never
    in the collection) is left out of the run when it is stored."""
    collection, v1 = accounting
    run = import_run(
        collection=collection,
        path=write_file("r.trec", ACCOUNTING_RUN),
        name="r",
        ignore_unknown_queries=True,
    )
    assert run.unknown.query_ids == ["q9"]
    evaluation, _ = score(run.run, v1, ks=(2,))
    c = evaluation.counts
    assert c["scorable"] == 3
    assert c["excluded"] == {"unreviewed": 1, "no_answer": 1, "not_in_snapshot": 1}
    assert c["empty_ranking"] == 1
    assert macro(evaluation, "R@2") == pytest.approx(1 / 2, **EXACT)
    assert pooled(evaluation, "R@2") == pytest.approx(2 / 5, **EXACT)
    stored = rows(evaluation)
    assert stored["q1"]["R@2"] == pytest.approx(1 / 2, **EXACT)
    assert stored["q5"]["R@2"] == 0 and stored["q5"]["retrieved"] == 0
    assert stored["q5"]["Ceiling@2"] == 1
    assert {q: v for q, v in stored.items() if "excluded" in v} == {
        "q3": {"excluded": "unreviewed"},
        "q4": {"excluded": "no_answer"},
        "q6": {"excluded": "not_in_snapshot"},
    }


def test_no_scorable_query_is_undefined_never_zero(db, write_file) -> None:
    """Both queries unreviewed in the snapshot: nothing is scorable, so every aggregate is
    undefined (None), not 0."""
    c = make_collection(slug="unreviewed", scale=BINARY_SCALE, relevant_grade=1)
    for qid in ("q1", "q2"):
        make_judgment(query=make_query(c, external_id=qid), item=make_item(c), grade=1)
    snapshot, _ = freeze_snapshot(collection=c, by=None)
    run = import_run(
        collection=c, path=write_file("r.trec", "q1 Q0 x 1 1.0 t\nq2 Q0 y 1 1.0 t\n"), name="r"
    ).run
    evaluation, _ = score(run, snapshot, ks=(2,))
    assert evaluation.status == "undefined"
    assert evaluation.counts["scorable"] == 0
    assert evaluation.counts["excluded"] == {"unreviewed": 2}
    assert evaluation.aggregates["R@2"] == {"macro": None, "pooled": None}
    assert all(agg["macro"] is None for agg in evaluation.aggregates.values())


def test_rel_level_above_every_grade_is_undefined(recall_v1) -> None:
    """Binary scale: at rel_level 2 no query has a relevant item, so all three are excluded
    (no_relevant_judgments) and the evaluation is undefined."""
    run = import_run(
        collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="example"
    ).run
    evaluation, _ = score(run, recall_v1, ks=(2,), rel_level=2)
    assert evaluation.status == "undefined"
    assert evaluation.counts["excluded"] == {"no_relevant_judgments": 3}
    assert evaluation.aggregates["R@2"] == {"macro": None, "pooled": None}


# -- fingerprints: same inputs, same evaluation; any other input, a new one --------------------


@pytest.mark.parametrize(
    "other",
    [{"ks": (3,)}, {"ks": (2, 3)}, {"rel_level": 2}, {"unjudged": "judged-only"}],
    ids=["k=3", "k=2,3", "rel_level=2", "judged-only"],
)
def test_a_different_parameter_is_a_new_evaluation(recall_v1, other: dict[str, Any]) -> None:
    run = import_run(
        collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="example"
    ).run
    first, created = score(run, recall_v1, ks=(2,))
    assert created
    second, created = score(run, recall_v1, **{"ks": (2,), **other})
    assert created and second.pk != first.pk and second.fingerprint != first.fingerprint
    again, created = score(run, recall_v1, **{"ks": (2,), **other})
    assert (again.pk, created) == (second.pk, False)
    assert Evaluation.objects.count() == 2


def test_unjudged_bounds(recall_v1) -> None:
    """At k=2 only C has an unjudged item in its top 2 (y). As non-relevant: the founding
    numbers. As relevant: C's G grows to {e, y} with 1 hit, R = 1/2, so
    macro R@2 ∈ [4/9, (1/3 + 1 + 1/2)/3 = 11/18], pooled ∈ [2/5, 3/6 = 1/2]."""
    run = import_run(
        collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="example"
    ).run
    evaluation, _ = score(run, recall_v1, ks=(2,), unjudged="bounds")
    assert evaluation.params["unjudged"] == "bounds"
    r = evaluation.aggregates["R@2"]
    assert r["macro"] == pytest.approx({"low": 4 / 9, "high": 11 / 18}, **EXACT)
    assert r["pooled"] == pytest.approx({"low": 2 / 5, "high": 1 / 2}, **EXACT)
    assert rows(evaluation)["C"]["R@2"] == pytest.approx({"low": 0, "high": 1 / 2}, **EXACT)


def test_inputs_from_elsewhere_are_refused(recall_v1, write_file) -> None:
    """A stage of another run, or a snapshot of another collection, is refused unscored."""
    collection = recall_v1.collection
    run = import_run(collection=collection, path=RECALL_EXAMPLE / "run.trec", name="one").run
    other_run = import_run(collection=collection, path=RECALL_EXAMPLE / "run.trec", name="two").run
    params = engine.EvalParams(ks=(2,))
    with pytest.raises(InvariantError, match="stage 'default' belongs to another run"):
        score_run_stage(run=run, stage=other_run.stages.get(), snapshot=recall_v1, params=params)
    elsewhere = make_collection(slug="elsewhere", scale=BINARY_SCALE, relevant_grade=1)
    make_query(elsewhere, external_id="A")
    foreign, _ = freeze_snapshot(collection=elsewhere, by=None)
    with pytest.raises(InvariantError, match="snapshot belongs to another collection"):
        score_run_stage(run=run, stage=run.stages.get(), snapshot=foreign, params=params)
    assert not Evaluation.objects.exists()


def test_two_runs_from_one_file_get_their_own_evaluations(recall_v1) -> None:
    """Equal bytes, equal numbers; but the evaluation of run 'copy' must name 'copy'."""
    collection = recall_v1.collection
    first = import_run(collection=collection, path=RECALL_EXAMPLE / "run.trec", name="one").run
    copy = import_run(collection=collection, path=RECALL_EXAMPLE / "run.trec", name="copy").run
    e1, _ = score(first, recall_v1, ks=(2,))
    e2, created = score(copy, recall_v1, ks=(2,))
    assert created and e2.pk != e1.pk
    assert e2.run == copy and e2.stage.run == copy
    assert e2.aggregates == e1.aggregates


def test_a_snapshot_back_at_older_content_gets_its_own_evaluation(recall_example) -> None:
    """Regrade A/x 0 → 1 (v2), then back to 0 (v3): v3 has v1's content hash, but an
    evaluation against v3 must name v3. Numbers: v1's, macro R@2 = 4/9 (see above)."""
    run = import_run(collection=recall_example, path=RECALL_EXAMPLE / "run.trec", name="r").run
    query = Query.objects.get(collection=recall_example, external_id="A")
    x = Item.objects.get(collection=recall_example, external_id="x")
    v1, _ = freeze_snapshot(collection=recall_example, by=None)
    e1, _ = score(run, v1, ks=(2,))
    record_judgment(query=query, item=x, grade=1, reviewer=None, expected_version=1)
    v2, _ = freeze_snapshot(collection=recall_example, by=None)
    record_judgment(query=query, item=x, grade=0, reviewer=None, expected_version=2)
    v3, created = freeze_snapshot(collection=recall_example, by=None)
    assert created and (v2.number, v3.number) == (2, 3)
    assert v3.content_hash == v1.content_hash != v2.content_hash
    e3, created = score(run, v3, ks=(2,))
    assert created and e3.pk != e1.pk
    assert e3.snapshot == v3 and e3.params["snapshot"] == 3
    assert macro(e3, "R@2") == pytest.approx(4 / 9, **EXACT)
    assert e3.aggregates == e1.aggregates


# -- stages, abstention, unit mappings -------------------------------------------------------

STAGED_RUN = """\
{"query": "A", "stages": {"candidates": ["x", "a", "b", "c", "y"], "reranked": ["a", "b", "x"], "context": ["a"]}}
{"query": "B", "stages": {"candidates": ["x", "y", "d"], "reranked": ["d", "x"], "context": ["d"]}}
{"query": "C", "stages": {"candidates": ["y", "x", "e"], "reranked": ["y", "e"], "context": []}, "abstain": true}
"""  # noqa: E501


@pytest.mark.parametrize(
    ("stage", "r2_macro", "r2_pooled", "r5_macro", "empty"),
    [
        # A [x, a] 1/3, B [x, y] 0, C [y, x] 0: macro 1/9, pooled 1/5. At 5 every G is
        # inside the candidates: R@5 = 1 for all three.
        ("candidates", 1 / 9, 1 / 5, 1.0, 0),
        # A [a, b] 2/3, B [d, x] 1, C [y, e] 1: macro 8/9, pooled (2+1+1)/5 = 4/5. The
        # reranker dropped c: at 5, A is still 2/3 and the macro still 8/9.
        ("reranked", 8 / 9, 4 / 5, 8 / 9, 0),
        # A [a] 1/3, B [d] 1, C [] 0 (an empty list): macro 4/9, pooled 2/5; same at 5.
        ("context", 4 / 9, 2 / 5, 4 / 9, 1),
    ],
)
def test_each_stage_of_a_multi_stage_run_is_scored_on_its_own(
    recall_v1, write_file, stage, r2_macro, r2_pooled, r5_macro, empty
) -> None:
    run = import_run(
        collection=recall_v1.collection, path=write_file("staged.jsonl", STAGED_RUN), name="rag"
    ).run
    evaluation, _ = score(run, recall_v1, stage=stage, ks=(2, 5))
    assert evaluation.stage.name == stage and evaluation.params["stage"] == stage
    assert evaluation.params["order"] == "list"
    assert macro(evaluation, "R@2") == pytest.approx(r2_macro, **EXACT)
    assert pooled(evaluation, "R@2") == pytest.approx(r2_pooled, **EXACT)
    assert macro(evaluation, "R@5") == pytest.approx(r5_macro, **EXACT)
    assert evaluation.counts["empty_ranking"] == empty


def test_abstention_is_stored_with_the_run_and_the_evaluation(recall_v1, write_file) -> None:
    run = import_run(
        collection=recall_v1.collection, path=write_file("staged.jsonl", STAGED_RUN), name="rag"
    ).run
    abstained = RankedList.objects.filter(stage__run=run, abstained=True)
    assert sorted(abstained.values_list("stage__name", "query_id")) == [
        ("candidates", "C"),
        ("context", "C"),
        ("reranked", "C"),
    ]
    evaluation, _ = score(run, recall_v1, stage="context", ks=(2,))
    assert evaluation.counts["abstained"] == 1
    stored = rows(evaluation)
    assert stored["C"]["abstained"] is True
    assert "abstained" not in stored["A"] and "abstained" not in stored["B"]


CHUNK_RUN = """\
q1 Q0 d1#2 1 4.0 t
q1 Q0 d3#1 2 3.0 t
q1 Q0 d1#1 3 2.0 t
q1 Q0 d2#1 4 1.0 t
"""
CHUNK_MAP = "d1#1\td1\nd1#2\td1\nd2#1\td2\nd3#1\td3\n"


def test_unit_mapping_collapses_to_the_first_rank(db, write_file) -> None:
    """q1 relevant, G = {d1, d2}, d3 judged 0. The run ranks chunks
    d1#2, d3#1, d1#1, d2#1, which map to d1, d3, d1, d2; the repeat of d1 collapses onto
    its first rank: [d1, d3, d2] (1 collapsed). Then R@1 = 1/2, R@3 = 2/2 = 1, RR = 1,
    P@3 = 2/3, AP = (1/1 + 2/3)/2 = 5/6.
    Keeping the last rank instead ([d3, d1, d2]) would give R@1 = 0 and RR = 1/2; not
    collapsing ([d1, d3, d1]) would give R@3 = 1/2. Without the map no chunk id is
    judged: every value is 0."""
    c = make_collection(slug="chunks", scale=BINARY_SCALE, relevant_grade=1)
    q1 = make_query(c, external_id="q1")
    for item, grade in [("d1", 1), ("d2", 1), ("d3", 0)]:
        make_judgment(query=q1, item=make_item(c, external_id=item), grade=grade)
    set_query_status(query=q1, status="relevant", by=None)
    snapshot, _ = freeze_snapshot(collection=c, by=None)
    run = import_run(collection=c, path=write_file("chunks.trec", CHUNK_RUN), name="chunks").run
    mapping, created = import_unit_mapping(collection=c, path=write_file("map.tsv", CHUNK_MAP))
    assert created and (mapping.number, mapping.n_entries) == (1, 4)
    assert (mapping.from_unit, mapping.to_unit) == ("chunk", "document")

    mapped, _ = score(run, snapshot, mapping=mapping, ks=(1, 3))
    assert mapped.mapping == mapping and mapped.params["mapping"] == 1
    assert mapped.params["engine"]["mapping"]["collapsed"] == 1
    q = rows(mapped)["q1"]
    assert q["R@1"] == pytest.approx(1 / 2, **EXACT)
    assert q["R@3"] == pytest.approx(1, **EXACT)
    assert q["RR"] == pytest.approx(1, **EXACT)
    assert q["P@3"] == pytest.approx(2 / 3, **EXACT)
    assert q["AP"] == pytest.approx(5 / 6, **EXACT)

    unmapped, created = score(run, snapshot, ks=(1, 3))
    assert created and unmapped.fingerprint != mapped.fingerprint
    assert rows(unmapped)["q1"]["R@3"] == 0 and rows(unmapped)["q1"]["RR"] == 0

    # The same map again is not a new version.
    same, created = import_unit_mapping(collection=c, path=write_file("map2.tsv", CHUNK_MAP))
    assert (same.pk, created) == (mapping.pk, False)


# -- immutability ---------------------------------------------------------------------------


@pytest.fixture
def stored_evaluation(recall_v1) -> Evaluation:
    run = import_run(
        collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="example"
    ).run
    return score(run, recall_v1, ks=(2,))[0]


def test_the_orm_refuses_to_change_an_evaluation(stored_evaluation) -> None:
    evaluation = stored_evaluation
    evaluation.status = "ok-edited"
    with pytest.raises(TypeError, match="frozen"):
        evaluation.save()
    with pytest.raises(TypeError, match="frozen"):
        evaluation.delete()
    with pytest.raises(TypeError, match="frozen"):
        Evaluation.objects.filter(pk=evaluation.pk).update(status="ok-edited")
    with pytest.raises(TypeError, match="frozen"):
        EvaluationQuery.objects.filter(evaluation=evaluation).update(values={})
    with pytest.raises(TypeError, match="frozen"):
        RankedList.objects.filter(stage__run=evaluation.run).update(items=[])
    with pytest.raises(TypeError, match="frozen"):
        Run.objects.filter(pk=evaluation.run_id).delete()
    evaluation.refresh_from_db()
    assert evaluation.status == "ok"


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("table", "sql"),
    [
        ("scoring_evaluation", "UPDATE scoring_evaluation SET status = 'ok-edited'"),
        ("scoring_evaluation", "DELETE FROM scoring_evaluation"),
        ("scoring_evaluationquery", "UPDATE scoring_evaluationquery SET values = '{}'"),
        ("scoring_rankedlist", "UPDATE scoring_rankedlist SET items = '[]'"),
        ("scoring_run", "UPDATE scoring_run SET name = 'renamed'"),
    ],
    ids=["update-evaluation", "delete-evaluation", "update-row", "update-list", "rename-run"],
)
def test_postgres_refuses_raw_sql_changes(stored_evaluation, table: str, sql: str) -> None:
    with (
        pytest.raises(IntegrityError, match=f"rows of {table} are immutable"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql)
    stored_evaluation.refresh_from_db()
    assert stored_evaluation.status == "ok"
    assert stored_evaluation.run.name == "example"
    assert RankedList.objects.filter(stage__run=stored_evaluation.run).count() == 3


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_scorings_of_the_same_inputs_store_one_evaluation(recall_example) -> None:
    """Two reviewers press "score" at once: one evaluation is stored, and both get it."""
    run = import_run(collection=recall_example, path=RECALL_EXAMPLE / "run.trec", name="r").run
    snapshot, _ = freeze_snapshot(collection=recall_example, by=None)
    stage = run.stages.get()
    barrier = threading.Barrier(2)
    outcomes: list[Any] = [None, None]

    def work(i: int) -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = '10s'")
            barrier.wait(timeout=30)
            outcomes[i] = score_run_stage(
                run=run, stage=stage, snapshot=snapshot, params=engine.EvalParams(ks=(2,))
            )
        except BaseException as exc:
            outcomes[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    assert not errors, errors
    assert Evaluation.objects.count() == 1
    stored = Evaluation.objects.get()
    assert sorted(created for _, created in outcomes) == [False, True]
    assert {evaluation.pk for evaluation, _ in outcomes} == {stored.pk}
    assert EvaluationQuery.objects.filter(evaluation=stored).count() == 3
