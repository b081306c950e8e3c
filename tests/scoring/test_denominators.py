"""Issue 24, item 1: a number shown over another set than the report header's carries
its own n and the reason, beside it, on the page, in CSV and JSON, in the API and in
``score``'s text; the query accounting is in the report's header; an undefined cell
says why.

The founding example (queries A, B, C, all scorable) scored at k = 2, with an evidence
condition on A only (``a``, ranked first by the run): by hand, Evidence@2 is 1 for A and
undefined for B and C, so its macro is 1/1 = 100 % over n = 1, not 1/3 over the header's 3.
"""

from __future__ import annotations

import csv
import io
import re

import pytest

import verity_eval as engine
from judgments.models import Query, Role
from judgments.services import freeze_snapshot, set_evidence_condition
from scoring.reports import build_report, report_csv
from scoring.services import import_run, score_run_stage
from tests.scoring.report_helpers import RECALL_EXAMPLE, member


@pytest.fixture
def evidence_on_a(recall_example):
    collection = recall_example
    set_evidence_condition(
        query=Query.objects.get(collection=collection, external_id="A"), groups=[["a"]], by=None
    )
    snapshot, _ = freeze_snapshot(collection=collection, by=None, note="evidence on A")
    run = import_run(collection=collection, path=RECALL_EXAMPLE / "run.trec", name="example").run
    evaluation, _ = score_run_stage(
        run=run,
        stage=run.stages.get(),
        snapshot=snapshot,
        params=engine.EvalParams(ks=(2,), rel_level=1),
    )
    return collection, evaluation


def test_report_json_gives_each_aggregate_its_n_and_the_reason_when_it_differs(evidence_on_a):
    _, evaluation = evidence_on_a

    aggregates = build_report(evaluation)["aggregates"]

    assert aggregates["Evidence@2"]["macro"] == pytest.approx(1.0)  # 1 of 1, not 1 of 3
    assert aggregates["Evidence@2"]["n"] == 1
    reason = aggregates["Evidence@2"]["n_reason"]
    assert "1 scorable query with an evidence condition" in reason
    assert "other 2 have none" in reason
    assert aggregates["R@2"]["n"] == 3 and "n_reason" not in aggregates["R@2"]


def test_report_csv_has_the_n_and_its_reason(evidence_on_a):
    _, evaluation = evidence_on_a

    rows = list(csv.DictReader(io.StringIO(report_csv(build_report(evaluation)))))

    def cell(measure: str, statistic: str) -> str:
        found = [
            r["value"]
            for r in rows
            if (r["section"], r["measure"], r["statistic"]) == ("aggregate", measure, statistic)
        ]
        assert len(found) == 1, (measure, statistic, found)
        return found[0]

    assert cell("Evidence@2", "n") == "1"
    assert "evidence condition" in cell("Evidence@2", "n_reason")
    assert cell("R@2", "n") == "3"
    header = {r["measure"]: r["value"] for r in rows if r["section"] == "header"}
    assert header["queries"].startswith("3 queries seen: 3 scorable (averaged); none excluded")
    assert "Evidence@k averages over the 1 with an evidence condition only" in header["queries"]


def test_report_page_puts_accounting_in_the_header_and_n_beside_the_number(client, evidence_on_a):
    collection, evaluation = evidence_on_a
    client.force_login(member(collection, "ana", Role.REVIEWER))

    html = client.get(f"/c/{collection.slug}/evaluations/{evaluation.pk}/").content.decode()

    # the accounting comes before the aggregates, not under them
    assert html.index('id="accounting"') < html.index('id="aggregates"')
    row = re.search(r'<tr data-measure="Evidence@2">(.*?)</tr>', html, re.S).group(1)
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip()
    assert text.startswith("Evidence@2 evidence condition met at 2 100.00% — 1 only the 1 ")
    r2 = re.search(r'<tr data-measure="R@2">(.*?)</tr>', html, re.S).group(1)
    assert re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", r2)).strip().endswith("44.44% 40.00% 3")
    # B has no condition: its cell says why it is undefined
    b_row = re.search(r'<tr data-tags="[^"]*" data-query="B">(.*?)</tr>', html, re.S).group(1)
    assert "undefined (no evidence condition for this query)" in re.sub(
        r"\s+", " ", re.sub(r"<[^>]+>", "", b_row)
    )


def test_score_text_prints_n_and_the_reason(evidence_on_a, run_command):
    collection, _ = evidence_on_a

    out, _ = run_command("score", collection.slug, "example", "--snapshot", 1, "--k", 2)

    evidence = next(line for line in out.splitlines() if line.startswith("Evidence@2"))
    assert evidence.split() == ["Evidence@2", "1.0000", "1", "*"]
    recall = next(line for line in out.splitlines() if line.startswith("R@2 "))
    assert recall.split() == ["R@2", "0.4444", "0.4000", "3"]
    assert "* Evidence@2: n = 1, only the 1 scorable query with an evidence condition" in out


def test_api_evaluations_carry_n(client, evidence_on_a):
    collection, evaluation = evidence_on_a
    client.force_login(member(collection, "ana", Role.REVIEWER))

    listed = client.get(f"/api/collections/{collection.slug}/evaluations/").json()

    rows = listed["results"] if isinstance(listed, dict) else listed
    agg = next(e for e in rows if e["id"] == evaluation.pk)["aggregates"]
    assert agg["Evidence@2"]["n"] == 1 and agg["AP"]["n"] == 3
