"""The report, diagnosis and comparison pages in a real Chromium: the numbers on the page,
sorting and the tag filter, and the charts drawn from the vendored Chart.js.

Each test saves a full-page screenshot to ``test-artifacts/reports-*.png`` (ignored by
git) so that a person can look at the pages as a reader sees them.
"""

from __future__ import annotations

import math
import re

import pytest
from playwright.sync_api import expect

import verity_eval as engine
from judgments.models import Role
from scoring.models import Evaluation
from scoring.reports import compare_evaluations, fmt_diff, fmt_p
from scoring.services import import_run, score_run_stage
from tests.browser.conftest import ARTIFACTS
from tests.scoring.report_helpers import (
    RECALL_EXAMPLE,
    demo_runs,
    import_and_score,
    load_demo_collection,
    member,
    quiet,
    three_stage_run,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
]


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"reports-{name}.png"), full_page=True)


def chart_drawn(page, canvas_id: str) -> bool:
    return page.evaluate(
        "id => { const c = document.getElementById(id); const ch = window.Chart && "
        "window.Chart.getChart(c); return !!ch && c.width > 0 && ch.data.datasets.length > 0; }",
        canvas_id,
    )


@pytest.fixture
def founding_example():
    quiet("import_collection", RECALL_EXAMPLE / "bundle.jsonl")
    quiet("freeze_snapshot", "recall-example")
    quiet("import_run", "recall-example", RECALL_EXAMPLE / "run.trec", "--name", "example")
    quiet("score", "recall-example", "example", "--k", "2,5", "--snapshot", "1")
    return Evaluation.objects.get(run__name="example")


def test_report_page_shows_the_founding_numbers_sorts_filters_and_draws(
    page, login, founding_example
):
    evaluation = founding_example
    login(page, member(evaluation.collection, "ana", Role.REVIEWER))

    page.goto(f"/c/recall-example/evaluations/{evaluation.pk}/")

    r2 = page.locator('#aggregate-table tr[data-measure="R@2"]')
    expect(r2.locator('[data-agg="macro"]')).to_have_text("44.44%")
    expect(r2.locator('[data-agg="pooled"]')).to_have_text("40.00%")
    weights = page.locator("#weights")
    expect(weights.locator('tr[data-query="A"] [data-weight="pooled"]')).not_to_be_visible()
    weights.locator("summary").click()
    for query, weight in (("A", "60.00%"), ("B", "20.00%"), ("C", "20.00%")):
        expect(weights.locator(f'tr[data-query="{query}"] [data-weight="pooled"]')).to_have_text(
            weight
        )
    expect(page.locator('[data-count="scorable"]')).to_have_text("3")
    # Sort the per-query table by R@2, descending on the second click: B (1), A (1/3), C (0).
    table = page.locator("#query-table")
    header = table.get_by_role("button", name="R@2", exact=True)
    header.click()
    expect(table.locator("tbody tr").first).to_have_attribute("data-query", "C")
    header.click()
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(3)
    assert [rows.nth(i).get_attribute("data-query") for i in range(3)] == ["B", "A", "C"]
    expect(table.locator('thead th[aria-sort="descending"]')).to_have_text("R@2")
    # Filter by tag: only B is tagged billing.
    page.get_by_label("Tag", exact=True).select_option("billing")
    expect(table.locator("tbody tr:visible")).to_have_count(1)
    expect(table.locator("tbody tr:visible")).to_have_attribute("data-query", "B")
    expect(page.locator('[data-filter-count="query-table"]')).to_have_text("1 of 3 queries")
    page.get_by_label("Tag", exact=True).select_option("")
    assert chart_drawn(page, "chart-sizes") and chart_drawn(page, "chart-recall")
    page.locator("#recall-k").select_option("2")
    assert chart_drawn(page, "chart-recall")
    screenshot(page, "report")


def test_diagnosis_page_places_every_relevant_item(page, login, founding_example, tmp_path):
    collection = founding_example.collection
    import_run(collection=collection, path=three_stage_run(tmp_path), name="pipeline")
    for stage in ("candidates", "reranked", "context"):  # the page reads; scoring is a POST
        quiet("score", "recall-example", "pipeline", "--stage", stage, "--k", "2")
    login(page, member(collection, "eve", Role.EVALUATOR))

    page.goto("/c/recall-example/runs/pipeline/diagnosis/?snapshot=1")

    expect(page.get_by_role("heading", level=1)).to_contain_text("k = 2")
    for outcome, count in (
        ("not_retrieved", "1"),
        ("lost_after:candidates", "1"),
        ("lost_after:reranked", "1"),
        ("reached:context", "2"),
    ):
        expect(
            page.locator(f'#outcome-table tr[data-outcome="{outcome}"] [data-count]')
        ).to_have_text(count)
    expect(page.locator('#stage-table tr[data-stage="candidates"]')).to_contain_text("77.78%")
    expect(page.locator('#stage-table tr[data-stage="context"]')).to_contain_text("44.44%")
    expect(page.locator('#item-table tr[data-item="A/b"]')).to_contain_text(
        "lost at the context budget"
    )
    assert chart_drawn(page, "chart-outcomes")
    screenshot(page, "diagnosis")


def test_comparison_page_shows_the_paired_statistics(page, login, tmp_path):
    collection, snapshot = load_demo_collection()
    for name, path in demo_runs(tmp_path, names=("fulltext", "titles")).items():
        import_and_score(collection, path, name, "--k", "5,10", "--snapshot", snapshot.number)
    a = Evaluation.objects.get(run__name="fulltext")
    b = Evaluation.objects.get(run__name="titles")
    # Differences, d_z and wins/ties/losses from the stored per-query rows by their
    # formulas; only the Holm p-value (a resampling) is the code's own, checked for display.
    holm = {e["key"]: e["p_holm"] for e in compare_evaluations(a, b)["measures"]}
    rows_a, rows_b = (
        {q: v for q, v in e.rows.values_list("query_id", "values") if "excluded" not in v}
        for e in (a, b)
    )
    login(page, member(collection, "ana", Role.REVIEWER))

    page.goto(f"/c/{collection.slug}/compare/")
    page.get_by_label("Evaluation a").select_option(str(a.pk))
    page.get_by_label("Evaluation b").select_option(str(b.pk))
    page.get_by_role("button", name="Compare", exact=True).click()

    expect(page).to_have_url(re.compile(rf"a={a.pk}&b={b.pk}"))
    for key in ("R@10", "nDCG@10", "AP"):
        row = page.locator(f'#comparison-table tr[data-measure="{key}"]')
        d = [rows_a[q][key] - rows_b[q][key] for q in sorted(rows_a)]
        mean = sum(d) / len(d)
        sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))
        wins, losses = sum(x > 1e-12 for x in d), sum(x < -1e-12 for x in d)
        expect(row.locator('[data-stat="diff"]')).to_have_text(fmt_diff(key, mean))
        expect(row.locator('[data-stat="p_holm"]')).to_have_text(fmt_p(holm[key]))
        expect(row.locator('[data-stat="d_z"]')).to_have_text(f"{mean / sd:.3f}")
        expect(row.locator('[data-stat="wtl"]')).to_have_text(
            f"{wins} / {len(d) - wins - losses} / {losses}"
        )
    assert chart_drawn(page, "chart-diffs")
    page.locator("#diff-measure").select_option("AP")
    expect(page.locator('[data-measure-table="AP"]')).to_be_visible()
    expect(page.locator('[data-measure-table="R@5"]')).to_be_hidden()
    screenshot(page, "compare")


def test_comparison_page_refuses_with_the_reasons(page, login, founding_example):
    evaluation = founding_example
    other, _ = score_run_stage(
        run=evaluation.run,
        stage=evaluation.stage,
        snapshot=evaluation.snapshot,
        params=engine.EvalParams(ks=(3,), rel_level=1),
    )
    login(page, member(evaluation.collection, "ana", Role.REVIEWER))

    page.goto(f"/c/recall-example/compare/?a={evaluation.pk}&b={other.pk}")

    expect(page.get_by_role("heading", level=1)).to_contain_text("cannot be compared")
    expect(page.locator("#refusal-reasons")).to_contain_text(
        "the cutoffs differ: a has 2, 5, b has 3"
    )
    screenshot(page, "refused")
