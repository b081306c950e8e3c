"""The evaluation report (page, API, ``score --json/--csv``), stage diagnosis and the
comparison pages: numbers against the founding text's hand calculation, accounting and
abstention, diagnosis against hand-computed outcomes, refusals and access.
"""

from __future__ import annotations

import csv
import io
import json
import re
from html import unescape

import pytest
import pytrec_eval

import verity_eval as engine
from judgments.models import Collection, Role
from scoring.models import Evaluation, Run
from scoring.reports import build_report, diagnose, outcome_kinds, report_csv
from scoring.services import import_run, score_run_stage
from tests.scoring.report_helpers import (
    DEMO_BUNDLE,
    RECALL_EXAMPLE,
    THREE_STAGE_OUTCOMES,
    THREE_STAGE_RECALL_AT_2,
    THREE_STAGES,
    demo_runs,
    import_and_score,
    load_demo_collection,
    member,
    three_stage_run,
)


def row_html(html: str, attr: str, value: str) -> str:
    """The first <tr> whose ``attr`` is ``value``, as text without tags."""
    match = re.search(rf'<tr[^>]*{attr}="{re.escape(value)}"[^>]*>(.*?)</tr>', html, re.S)
    assert match, f"no row {attr}={value!r}"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(1))).strip()


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


# -- the founding text's example ---------------------------------------------------------------


@pytest.fixture
def example(recall_v1):
    """The founding example's run, scored at k = 2 on v1; a reviewer member ``ana``."""
    collection = recall_v1.collection
    run = import_run(collection=collection, path=RECALL_EXAMPLE / "run.trec", name="example").run
    evaluation, _ = score_run_stage(
        run=run,
        stage=run.stages.get(),
        snapshot=recall_v1,
        params=engine.EvalParams(ks=(2,), rel_level=1),
    )
    ana = member(collection, "ana", Role.REVIEWER)
    return collection, evaluation, ana


def test_report_data_shows_macro_and_pooled_with_the_weights(example):
    _, evaluation, _ = example

    report = build_report(evaluation)

    r2 = report["aggregates"]["R@2"]
    assert r2["macro"] == pytest.approx(4 / 9) and r2["pooled"] == pytest.approx(2 / 5)
    weights = {w["query"]: (w["relevant"], w["pooled"], w["macro"]) for w in report["weights"]}
    assert weights == {
        "A": (3, pytest.approx(3 / 5), pytest.approx(1 / 3)),
        "B": (1, pytest.approx(1 / 5), pytest.approx(1 / 3)),
        "C": (1, pytest.approx(1 / 5), pytest.approx(1 / 3)),
    }
    assert report["aggregates"]["AnyHit@2"]["macro"] == pytest.approx(2 / 3)
    assert report["aggregates"]["AllHit@2"]["macro"] == pytest.approx(1 / 3)
    assert report["aggregates"]["Ceiling@2"]["macro"] == pytest.approx((2 / 3 + 1 + 1) / 3)
    header = {h["key"]: h["value"] for h in report["header"]}
    assert header["unit"] == "document" and header["cutoffs"] == "2"
    assert header["snapshot"] == "v1"
    assert header["snapshot_hash"] == f"sha256:{evaluation.snapshot.content_hash}"
    assert header["stage"].startswith("default")
    assert header["order"].startswith("score: score descending")
    assert header["dedup"].startswith("error")
    assert header["relevance_threshold"].startswith("grade ≥ 1 (relevant)")
    assert header["unjudged"].startswith("nonrel")
    assert "pooled" in header["aggregation"] and "macro" in header["aggregation"]
    assert header["mapping"].startswith("none")
    assert "Invented teaching data" in header["corpus_boundary"]
    assert report["queries"]["A"] == {"text": "How do I reset my password?", "tags": ["account"]}
    assert report["charts"]["relevant_sizes"] == [[1, 2], [3, 1]]


def test_report_page_shows_44_44_and_40_00_side_by_side_with_the_weights(client, example):
    collection, evaluation, ana = example
    client.force_login(ana)

    response = client.get(f"/c/{collection.slug}/evaluations/{evaluation.pk}/")

    assert response.status_code == 200
    html = response.content.decode()
    assert row_html(html, "data-measure", "R@2").endswith("44.44% 40.00% 3")
    assert row_html(html, "data-measure", "AnyHit@2").endswith("66.67% — 3")
    weights = re.search(r'<details class="weights".*?</details>', html, re.S).group(0)
    assert row_html(weights, "data-query", "A") == "A 3 60.00% 33.33%"
    assert row_html(weights, "data-query", "B") == "B 1 20.00% 33.33%"
    assert row_html(weights, "data-query", "C") == "C 1 20.00% 33.33%"
    for needed in (
        "Labeling unit",
        "document",
        f"sha256:{evaluation.snapshot.content_hash}",
        "Order rule",
        "Dedup policy",
        "Relevance threshold",
        "Unjudged policy",
        "Aggregation",
        "Corpus boundary",
        "Unit mapping",
        'id="report-data"',
        "vendor/chartjs/chart.umd.min.js",
    ):
        assert needed in html, needed
    # the per-query table: every query with its tags, sortable and filterable
    assert 'data-tags="[&quot;account&quot;]"' in html
    assert 'data-filter-table="query-table"' in html


def test_report_json_and_csv_carry_the_same_numbers(client, example, run_command):
    collection, evaluation, ana = example
    client.force_login(ana)
    url = f"/c/{collection.slug}/evaluations/{evaluation.pk}/"

    page_json = client.get(url, {"format": "json"}).json()
    api = client.get(f"/api/collections/{collection.slug}/evaluations/{evaluation.pk}/report/")
    api_csv = client.get(
        f"/api/collections/{collection.slug}/evaluations/{evaluation.pk}/report/",
        {"format": "csv"},
    )
    page_csv = client.get(url, {"format": "csv"})
    cli_json = json.loads(
        run_command("score", collection.slug, "example", "--k", "2", "--snapshot", 1, "--json")[0]
    )
    cli_csv = run_command("score", collection.slug, "example", "--k", "2", "--snapshot", 1, "--csv")

    assert api.status_code == 200 and api_csv.status_code == 200
    assert page_csv["Content-Type"].startswith("text/csv")
    for data in (page_json, api.json(), cli_json):
        assert data["aggregates"]["R@2"]["macro"] == pytest.approx(4 / 9)
        assert data["aggregates"]["R@2"]["pooled"] == pytest.approx(0.4)
        assert [round(w["pooled"], 12) for w in data["weights"]] == [0.6, 0.2, 0.2]
    assert cli_json == api.json() == page_json
    for text in (api_csv.content.decode(), page_csv.content.decode(), cli_csv[0]):
        rows = csv_rows(text)
        agg = {
            (r["measure"], r["statistic"]): r["value"] for r in rows if r["section"] == "aggregate"
        }
        assert float(agg[("R@2", "macro")]) == pytest.approx(4 / 9)
        assert float(agg[("R@2", "pooled")]) == pytest.approx(0.4)
        weights = {
            r["query"]: float(r["value"])
            for r in rows
            if r["section"] == "query" and r["measure"] == "weight" and r["statistic"] == "pooled"
        }
        assert weights == pytest.approx({"A": 0.6, "B": 0.2, "C": 0.2})
        header = {r["measure"]: r["value"] for r in rows if r["section"] == "header"}
        assert header["snapshot"] == "v1" and header["unit"] == "document"
    assert api_csv.content.decode() == page_csv.content.decode() == cli_csv[0]


def test_undefined_aggregates_are_shown_as_undefined_never_zero(client, example):
    collection, evaluation, ana = example
    # Binary scale: at threshold 2 no query has a relevant item, so none is scorable.
    undefined, _ = score_run_stage(
        run=evaluation.run,
        stage=evaluation.stage,
        snapshot=evaluation.snapshot,
        params=engine.EvalParams(ks=(2,), rel_level=2),
    )
    client.force_login(ana)

    html = client.get(f"/c/{collection.slug}/evaluations/{undefined.pk}/").content.decode()
    text = report_csv(build_report(undefined))

    assert row_html(html, "data-measure", "R@2").endswith(
        "undefined (no scorable query: see the query accounting) undefined 0"
    )
    assert row_html(html, "data-measure", "nDCG@2").endswith(
        "undefined (no scorable query: see the query accounting) — 0"
    )
    assert "No scorable query." in html
    assert 'data-count="excluded:no_relevant_judgments">3<' in html
    assert "aggregate,,R@2,macro,undefined" in text
    assert "aggregate,,R@2,pooled,undefined" in text


def test_bounds_policy_shows_the_interval(client, example):
    collection, evaluation, ana = example
    bounds, _ = score_run_stage(
        run=evaluation.run,
        stage=evaluation.stage,
        snapshot=evaluation.snapshot,
        params=engine.EvalParams(ks=(2,), rel_level=1, unjudged="bounds"),
    )
    client.force_login(ana)

    html = client.get(f"/c/{collection.slug}/evaluations/{bounds.pk}/").content.decode()

    # By hand (fixtures/recall-example/README.md): y, C's unjudged item at rank 2, taken as
    # relevant makes C's R@2 1/2 (|G| 2): macro [4/9, 11/18], pooled [2/5, 3/6].
    assert row_html(html, "data-measure", "R@2").endswith("[44.44%, 61.11%] [40.00%, 50.00%] 3")
    assert row_html(html, "data-measure", "Judged@2").endswith("83.33% — 3")
    assert "each label-dependent number is an interval" in html


def test_report_numbers_agree_with_pytrec_eval_on_the_demo(db, tmp_path):
    """Oracle: trec_eval (pytrec_eval) on the demo bundle's own judgments and the run
    file, over the queries the bundle marks ``relevant`` (20); graded scale, threshold 2.
    The report's per-query values, macro averages and CSV must carry its numbers."""
    collection, _ = load_demo_collection()
    run_file = demo_runs(tmp_path, names=("fulltext",))["fulltext"]
    import_and_score(collection, run_file, "fulltext", "--k", "5,10", "--snapshot", 1)
    evaluation = Evaluation.objects.get(collection=collection)

    report = build_report(evaluation)
    text = report_csv(report)

    qrels, relevant = {}, []
    for line in DEMO_BUNDLE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["type"] == "judgment":
            qrels.setdefault(rec["query"], {})[rec["item"]] = rec["grade"]
        elif rec["type"] == "query" and rec.get("status") == "relevant":
            relevant.append(rec["id"])
    trec_run = {}
    for line in run_file.read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        trec_run.setdefault(q, {})[d] = float(score)
    names = {"R@5": "recall_5", "R@10": "recall_10", "P@10": "P_10", "nDCG@10": "ndcg_cut_10",
             "AnyHit@5": "success_5", "RR": "recip_rank", "AP": "map", "Rprec": "Rprec",
             "bpref": "bpref"}  # fmt: skip
    oracle = pytrec_eval.RelevanceEvaluator(
        {q: qrels[q] for q in relevant}, set(names.values()), relevance_level=2
    ).evaluate({q: trec_run[q] for q in relevant})
    assert len(relevant) == 20 == report["accounting"]["scorable"]
    csv_macro = {
        r["measure"]: float(r["value"])
        for r in csv_rows(text)
        if r["section"] == "aggregate" and r["statistic"] == "macro"
    }
    for ours, trec in names.items():
        per_query = {q: report["per_query"][q][ours] for q in relevant}
        assert per_query == pytest.approx({q: oracle[q][trec] for q in relevant}, abs=1e-9), ours
        mean = sum(oracle[q][trec] for q in relevant) / len(relevant)
        assert report["aggregates"][ours]["macro"] == pytest.approx(mean, abs=1e-12), ours
        assert csv_macro[ours] == pytest.approx(mean, abs=1e-9), ours
    # Pooled recall: Σ hits / Σ |G| with |G| counted from the bundle (grade >= 2).
    sizes = {q: sum(1 for g in qrels[q].values() if g >= 2) for q in relevant}
    hits = sum(oracle[q]["recall_10"] * sizes[q] for q in relevant)
    assert report["aggregates"]["R@10"]["pooled"] == pytest.approx(hits / sum(sizes.values()))


# -- accounting and abstention -----------------------------------------------------------------

ABSTAIN_BUNDLE = [
    {"type": "collection", "slug": "abstain", "name": "Abstention", "unit": "document",
     "description": "Five made-up items.", "guidelines": "", "pool_depth": 10,
     "scale": [{"grade": 0, "name": "not relevant"}, {"grade": 1, "name": "relevant"}],
     "relevant_grade": 1},
    *[{"type": "item", "id": i, "title": i, "text": i, "url": "", "metadata": {},
       "placeholder": False} for i in ("a", "b", "x")],
    {"type": "query", "id": "R1", "text": "r1", "tags": ["t1"], "status": "relevant"},
    {"type": "query", "id": "R2", "text": "r2", "tags": ["t2"], "status": "relevant"},
    *[{"type": "query", "id": q, "text": q.lower(), "tags": [], "status": "no_answer"}
      for q in ("N1", "N2", "N3", "N4")],
    {"type": "query", "id": "U1", "text": "u1", "tags": [], "status": "unreviewed"},
    {"type": "judgment", "query": "R1", "item": "a", "grade": 1, "note": "", "reviewer": None},
    {"type": "judgment", "query": "R2", "item": "b", "grade": 1, "note": "", "reviewer": None},
    {"type": "judgment", "query": "N1", "item": "x", "grade": 0, "note": "", "reviewer": None},
]  # fmt: skip

ABSTAIN_RUN = [
    {"query": "R1", "ranking": ["a", "x"]},  # R2 is missing: an empty ranking
    {"query": "N1", "ranking": ["x", "a"]},  # answered anyway
    {"query": "N2", "abstain": True},  # abstained
    {"query": "N3", "ranking": []},  # returned nothing, without saying it abstains
    {"query": "U1", "ranking": ["a"]},  # N4 is not in the run at all
    {"query": "Z", "ranking": ["a"]},  # added to the collection after the snapshot
]


def test_accounting_and_the_abstention_section(db, client, write_file, run_command):
    bundle = write_file("abstain.jsonl", "".join(json.dumps(r) + "\n" for r in ABSTAIN_BUNDLE))
    run_command("import_collection", bundle)
    collection = Collection.objects.get(slug="abstain")
    run_command("freeze_snapshot", "abstain")
    later = write_file("later.tsv", "Z\tz\n")
    run_command("import_collection", "--collection", "abstain", "--queries", later)
    run_file = write_file("run.jsonl", "".join(json.dumps(r) + "\n" for r in ABSTAIN_RUN))
    run_command("import_run", "abstain", run_file, "--name", "rag", "--quiet")
    run_command("score", "abstain", "rag", "--k", "2")
    evaluation = Evaluation.objects.get(collection=collection)

    report = build_report(evaluation)

    acc = report["accounting"]
    assert (acc["total"], acc["scorable"], acc["empty_ranking"]) == (8, 2, 1)
    assert acc["excluded"] == {"no_answer": 4, "not_in_snapshot": 1, "unreviewed": 1}
    ab = report["abstention"]
    assert (ab["no_answer"], ab["answered"], ab["abstained"]) == (4, 1, 1)
    assert (ab["returned_nothing"], ab["not_in_run"], ab["run_marks_abstentions"]) == (1, 1, True)
    assert {r["query"]: r["outcome"] for r in ab["queries"]} == {
        "N1": "answered",
        "N2": "abstained",
        "N3": "returned_nothing",
        "N4": "not_in_run",
    }
    client.force_login(member(collection, "ana", Role.REVIEWER))
    html = client.get(f"/c/abstain/evaluations/{evaluation.pk}/").content.decode()
    for count, value in (
        ("scorable", "2"),
        ("empty_ranking", "1"),
        ("excluded:no_answer", "4"),
        ("excluded:unreviewed", "1"),
        ("excluded:not_in_snapshot", "1"),
        ("answered", "1"),
        ("abstained", "1"),
        ("returned_nothing", "1"),
        ("not_in_run", "1"),
    ):
        assert re.search(rf'data-count="{re.escape(count)}">{value}<', html), count
    assert "Abstention: confirmed no-answer queries" in html


# -- stage diagnosis -----------------------------------------------------------------------------


def test_diagnose_the_hand_made_three_stage_run():
    lists = [
        {line["query"]: line["stages"][s] for line in THREE_STAGES}
        for s in ("candidates", "reranked", "context")
    ]
    qrels = {"A": {"a": 1, "b": 1, "c": 1, "x": 0}, "B": {"d": 1, "x": 0}, "C": {"e": 1, "x": 0}}

    d = diagnose(
        stage_names=["candidates", "reranked", "context"],
        lists=lists,
        qrels=qrels,
        statuses=dict.fromkeys("ABC", "relevant"),
        rel_level=1,
    )

    assert {(i["query"], i["item"]): i["outcome"] for i in d["items"]} == THREE_STAGE_OUTCOMES
    assert d["totals"] == {
        "not_retrieved": 1,
        "lost_after:candidates": 1,
        "lost_after:reranked": 1,
        "reached:context": 2,
    }
    assert [o["label"] for o in d["outcomes"]] == [
        "not retrieved",
        "lost in ranking",
        "lost at the context budget",
        "reached context",
    ]
    assert d["reached_by_stage"] == [4, 3, 2]  # a b d e; a b e; a e
    items = {(i["query"], i["item"]): i["ranks"] for i in d["items"]}
    assert items[("A", "b")] == [3, 3, None] and items[("B", "d")] == [2, None, None]
    per_query = {r["query"]: r["outcomes"] for r in d["per_query"]}
    assert per_query["A"] == {
        "not_retrieved": 1,
        "lost_after:candidates": 0,
        "lost_after:reranked": 1,
        "reached:context": 1,
    }


@pytest.mark.parametrize(
    ("names", "lists", "outcome"),
    [
        (["retrieve", "rank"], [{"q": ["g"]}, {"q": []}], "lost_after:retrieve"),
        (["s1", "s2", "s3", "s4"], [{"q": ["g"]}, {"q": ["g"]}, {"q": ["g"]}, {"q": []}],
         "lost_after:s3"),
        (["s1", "s2", "s3", "s4"], [{"q": ["g"]}] * 4, "reached:s4"),
        (["only"], [{"q": ["x"]}], "not_retrieved"),
        (["only"], [{}], "not_retrieved"),  # the query is not in the run
    ],
    ids=["two-stages", "four-stages-lost", "four-stages-reached", "one-stage", "absent"],
)  # fmt: skip
def test_diagnosis_generalises_to_n_stages(names, lists, outcome):
    d = diagnose(
        stage_names=names, lists=lists, qrels={"q": {"g": 2}}, statuses={"q": "relevant"},
        rel_level=1,
    )  # fmt: skip

    assert [i["outcome"] for i in d["items"]] == [outcome]
    assert len(d["outcomes"]) == len(names) + 1


def test_a_non_nested_pipeline_keeps_the_last_stage_and_lists_what_was_skipped():
    d = diagnose(
        stage_names=["candidates", "reranked", "context"],
        lists=[{"q": ["g"]}, {"q": []}, {"q": ["g"]}],
        qrels={"q": {"g": 1}},
        statuses={"q": "relevant"},
        rel_level=1,
    )

    assert d["items"][0]["outcome"] == "reached:context"
    assert d["items"][0]["skipped"] == ["reranked"] and d["non_nested"] == 1


def test_diagnosis_excludes_queries_that_are_not_scorable_and_applies_the_mapping():
    d = diagnose(
        stage_names=["only"],
        lists=[{"q": ["chunk-1", "chunk-2"]}],
        qrels={"q": {"doc": 1}, "u": {"doc": 1}, "n": {"doc": 0}},
        statuses={"q": "relevant", "u": "unreviewed", "n": "no_answer"},
        rel_level=1,
        mapping={"chunk-1": "other", "chunk-2": "doc"},
    )

    assert d["excluded"] == {"unreviewed": 1, "no_answer": 1}
    assert d["items"] == [
        {"query": "q", "item": "doc", "grade": 1, "outcome": "reached:only", "ranks": [2],
         "skipped": []}
    ]  # fmt: skip


def test_outcome_labels_name_the_stages_when_they_have_no_gloss():
    kinds = outcome_kinds(["bm25", "dense", "fused"])

    assert [k["label"] for k in kinds] == [
        "not retrieved",
        "lost between bm25 and dense",
        "lost between dense and fused",
        "reached fused",
    ]


@pytest.fixture
def pipeline(recall_v1, tmp_path):
    collection = recall_v1.collection
    run = import_run(collection=collection, path=three_stage_run(tmp_path), name="pipe").run
    return collection, run


def test_diagnosis_page_says_what_it_would_score_and_scores_only_on_post(
    client, pipeline, jobs_inline
):
    collection, run = pipeline
    client.force_login(member(collection, "eve", Role.EVALUATOR))
    url = f"/c/{collection.slug}/runs/pipe/diagnosis/"

    before = client.get(url, {"snapshot": 1})

    assert not Evaluation.objects.filter(run=run).exists()  # a GET never scores
    html = unescape(before.content.decode())
    assert "Not scored yet at these parameters: candidates, reranked, context" in html
    assert "Score 3 stages" in html and "k = 2, threshold 1, unjudged nonrel" in html
    assert row_html(html, "data-outcome", "reached:context").endswith("2 40.00%")

    with jobs_inline():
        posted = client.post(
            url + "score/", {"snapshot": 1, "k": 2, "rel": 1, "unjudged": "nonrel"}
        )
    job_page = client.get(posted["Location"])
    response = client.get(job_page["Location"])  # a done diagnosis job lands on the page

    assert job_page.status_code == 302
    assert response.status_code == 200
    evaluations = {e.stage.name: e for e in Evaluation.objects.filter(run=run)}
    assert sorted(evaluations) == ["candidates", "context", "reranked"]
    for stage, want in THREE_STAGE_RECALL_AT_2.items():
        e = evaluations[stage]
        assert e.params["ks"] == [2] and e.params["rel_level"] == 1  # k = context depth
        assert e.aggregates["R@2"]["macro"] == pytest.approx(want["macro"])
        assert e.aggregates["R@2"]["pooled"] == pytest.approx(want["pooled"])
        rows = dict(e.rows.values_list("query_id", "values"))
        assert {q: rows[q]["R@2"] for q in "ABC"} == pytest.approx({q: want[q] for q in "ABC"})
    html = response.content.decode()
    assert "Not scored yet" not in html
    assert row_html(html, "data-outcome", "not_retrieved").endswith("1 20.00%")
    assert row_html(html, "data-outcome", "lost_after:candidates").startswith("lost in ranking")
    assert row_html(html, "data-outcome", "lost_after:reranked").startswith(
        "lost at the context budget in reranked, not in context 1 20.00%"
    )
    assert row_html(html, "data-outcome", "reached:context").endswith("2 40.00%")
    candidates = row_html(html, "data-stage", "candidates")
    # R@2 macro 7/9; any-hit 3/3; all-hit 2/3 (A has 3 relevant, 1 in the top 2); pooled 3/5
    assert candidates.startswith(f"candidates 4 report {evaluations['candidates'].pk} 77.78% ")
    assert " 100.00% 66.67% " in candidates and candidates.endswith(" 60.00%")
    assert row_html(html, "data-stage", "context").endswith(" 40.00%")
    assert row_html(html, "data-item", "A/b").startswith("A b 1 lost at the context budget 3 3 —")
    listing = client.get(f"/c/{collection.slug}/evaluations/").content.decode()
    listed = [int(pk) for pk in re.findall(r'href="/c/[^/]+/evaluations/(\d+)/"', listing)]
    assert listed == sorted((e.pk for e in evaluations.values()), reverse=True)  # newest first
    assert (
        listing.count(f'href="/c/{collection.slug}/runs/pipe/diagnosis/?snapshot=1&amp;k=2"') == 3
    )
    report = client.get(f"/c/{collection.slug}/evaluations/{evaluations['context'].pk}/")
    assert "Stage diagnosis" in report.content.decode()


def test_diagnosis_for_a_reviewer_uses_stored_scores_and_offers_no_scoring(
    client, pipeline, jobs_inline
):
    collection, run = pipeline
    client.force_login(member(collection, "ana", Role.REVIEWER))
    url = f"/c/{collection.slug}/runs/pipe/diagnosis/"

    before = client.get(url).content.decode()

    assert not Evaluation.objects.filter(run=run).exists()
    assert "Not scored yet at these parameters: candidates, reranked, context" in before
    assert "Score 3 stages" not in before and "an evaluator's action" in before
    assert row_html(before, "data-outcome", "reached:context").endswith("2 40.00%")
    assert client.post(url + "score/", {"snapshot": 1}).status_code == 403

    client.force_login(member(collection, "eve", Role.EVALUATOR))
    with jobs_inline():
        client.post(url + "score/", {"snapshot": 1, "k": 2})
    client.force_login(member(collection, "ana", Role.REVIEWER))
    after = client.get(url).content.decode()

    assert "Not scored yet" not in after
    assert "77.78%" in row_html(after, "data-stage", "candidates")
    assert Evaluation.objects.filter(run=run).count() == 3


def test_diagnosis_api_and_csv(client, pipeline, jobs_inline):
    collection, run = pipeline
    client.force_login(member(collection, "eve", Role.EVALUATOR))
    url = f"/api/collections/{collection.slug}/runs/pipe/diagnosis/"

    unscored = client.get(url, {"k": 2}).json()
    with jobs_inline():
        accepted = client.post(url + "?k=2")
    job = client.get(accepted["Location"]).json()
    data = client.get(url, {"k": 2}).json()
    text = client.get(url, {"k": 2, "format": "csv"}).content.decode()

    assert [s["evaluation"] for s in unscored["stage_scores"]] == [None, None, None]
    assert accepted.status_code == 202 and job["state"] == "done"
    assert job["result"]["api_url"] == url + "?snapshot=1&k=2&rel=1&unjudged=nonrel"
    assert client.post(url + "?k=2").status_code == 200  # nothing left to score
    assert Evaluation.objects.filter(run=run).count() == 3
    assert data["stages"] == ["candidates", "reranked", "context"]
    assert {(i["query"], i["item"]): i["outcome"] for i in data["items"]} == THREE_STAGE_OUTCOMES
    assert [s["aggregates"]["R@2"]["macro"] for s in data["stage_scores"]] == pytest.approx(
        [7 / 9, 4 / 9, 4 / 9]
    )
    assert data["header"]["k"] == 2 and data["header"]["snapshot"] == 1
    rows = csv_rows(text)
    assert {(r["query"], r["item"]): r["outcome"] for r in rows} == THREE_STAGE_OUTCOMES
    assert rows[0].keys() >= {"rank:candidates", "rank:reranked", "rank:context"}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"k": "0"}, "k must be at least 1"),
        ({"k": "two"}, "k='two' is not a whole number"),
        ({"snapshot": "9"}, "has no snapshot v9; it has v1"),
        ({"unjudged": "maybe"}, "unjudged='maybe' is not a policy"),
        ({"mapping": "3"}, "has no unit mapping v3"),
    ],
)
def test_diagnosis_bad_parameters_say_how_to_fix_them(client, pipeline, params, message):
    collection, _ = pipeline
    client.force_login(member(collection, "eve", Role.EVALUATOR))

    page = client.get(f"/c/{collection.slug}/runs/pipe/diagnosis/", params)

    assert page.status_code == 400 and message in unescape(page.content.decode())


# -- the comparison page and API ---------------------------------------------------------------


def test_compare_page_and_api_refuse_with_the_reasons(client, example):
    collection, evaluation, ana = example
    other, _ = score_run_stage(
        run=evaluation.run,
        stage=evaluation.stage,
        snapshot=evaluation.snapshot,
        params=engine.EvalParams(ks=(3,), rel_level=1, unjudged="bounds"),
    )
    client.force_login(ana)

    page = client.get(f"/c/{collection.slug}/compare/", {"a": evaluation.pk, "b": other.pk})
    api = client.get(
        f"/api/collections/{collection.slug}/compare/", {"a": evaluation.pk, "b": other.pk}
    )

    assert page.status_code == 400
    html = page.content.decode()
    assert "cannot be compared" in html
    assert "the cutoffs differ: a has 2, b has 3" in html
    assert "the unjudged policy differs: a has nonrel, b has bounds" in html
    assert api.status_code == 400
    body = api.json()
    assert body["refused"] is True
    assert [e["message"] for e in body["errors"]] == body["reasons"]
    assert any("the cutoffs differ" in r for r in body["reasons"])


def test_compare_page_shows_the_paired_statistics(client, example):
    collection, evaluation, ana = example
    second = import_run(collection=collection, path=RECALL_EXAMPLE / "run.trec", name="again").run
    other, _ = score_run_stage(
        run=second,
        stage=second.stages.get(),
        snapshot=evaluation.snapshot,
        params=engine.EvalParams(ks=(2,), rel_level=1),
    )
    client.force_login(ana)

    page = client.get(f"/c/{collection.slug}/compare/", {"a": evaluation.pk, "b": other.pk})
    api = client.get(
        f"/api/collections/{collection.slug}/compare/",
        {"a": evaluation.pk, "b": other.pk, "seed": 3},
    )
    api_csv = client.get(
        f"/api/collections/{collection.slug}/compare/",
        {"a": evaluation.pk, "b": other.pk, "format": "csv"},
    )

    assert page.status_code == 200
    row = row_html(page.content.decode(), "data-measure", "R@2")
    # identical rankings: all ties, p = 1 (raw and Holm), interval [0, 0], d_z undefined
    assert row == (
        "R@2 3 44.44% 44.44% 0.00 pp [0.00 pp, 0.00 pp] 1.0000 exact 1.0000 1.0000 undefined "
        "0 / 3 / 0"
    )
    assert api.json()["seed"] == 3 and api.json()["mode"] == "runs"
    assert csv_rows(api_csv.content.decode())[0]["measure"] == "R@2"


def test_compare_page_without_a_and_b_offers_the_choice(client, example):
    collection, evaluation, ana = example
    client.force_login(ana)

    html = client.get(f"/c/{collection.slug}/compare/").content.decode()

    assert "Choose a and b" in html and f'<option value="{evaluation.pk}"' in html


# -- access --------------------------------------------------------------------------------------


def urls_of(collection: Collection, evaluation: Evaluation) -> list[str]:
    slug, pk = collection.slug, evaluation.pk
    return [
        f"/c/{slug}/evaluations/",
        f"/c/{slug}/evaluations/{pk}/",
        f"/c/{slug}/runs/example/diagnosis/",
        f"/c/{slug}/compare/?a={pk}&b={pk}",
        f"/api/collections/{slug}/evaluations/{pk}/report/",
        f"/api/collections/{slug}/runs/example/diagnosis/",
        f"/api/collections/{slug}/compare/?a={pk}&b={pk}",
    ]


def test_non_members_get_404_and_anonymous_users_log_in(client, example, django_user_model):
    collection, evaluation, _ = example
    urls = urls_of(collection, evaluation)

    for url in urls:
        response = client.get(url)
        if url.startswith("/api/"):
            assert response.status_code == 401, url
        else:
            assert response.status_code == 302 and "/accounts/login/" in response["Location"]

    client.force_login(django_user_model.objects.create_user(username="stranger"))
    for url in urls:
        assert client.get(url).status_code == 404, url


def test_every_role_may_read_reports(client, example):
    collection, evaluation, ana = example
    for user in (ana, member(collection, "eve", Role.EVALUATOR)):
        client.force_login(user)
        for url in urls_of(collection, evaluation):
            status = client.get(url).status_code
            # comparing an evaluation with itself is refused (400); everything else reads
            assert status == (400 if "compare" in url else 200), url


def test_an_evaluation_of_another_collection_is_not_found(client, example):
    _, evaluation, ana = example
    other = Collection.objects.create(
        slug="other", name="Other", scale=[{"grade": 0, "name": "no"}, {"grade": 1, "name": "y"}]
    )
    member(other, "ana", Role.REVIEWER)
    client.force_login(ana)

    assert client.get(f"/c/other/evaluations/{evaluation.pk}/").status_code == 404
    assert Run.objects.filter(collection=other).count() == 0
