"""What Verity writes out must not act on the reader: item links only for http(s)
addresses (issue 10, item 5), and CSV cells that a spreadsheet would run as formulas
neutralised with a leading ``'`` (item 6, OWASP's rule)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.core.management import call_command

import verity_eval as engine
from judgments.models import Collection
from judgments.services import freeze_snapshot, queue_unjudged, set_membership
from judgments.templatetags.links import http_url
from scoring.reports import build_report, report_csv, to_csv
from scoring.reports.csv import neutralise_cell
from scoring.services import import_run, score_run_stage
from tests.factories import make_collection, make_item, make_query


@pytest.mark.parametrize(
    "value,expected",
    [
        ("https://example.org/a?b=1", "https://example.org/a?b=1"),
        ("HTTP://example.org/", "HTTP://example.org/"),
        ("javascript:alert(1)", ""),
        (" JavaScript:alert(1)", ""),
        ("data:text/html,<script>alert(1)</script>", ""),
        ("vbscript:msgbox", ""),
        ("//evil.example/", ""),
        ("http:///no-host", ""),
        ("http://[::1", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_only_http_urls_pass_the_link_filter(value, expected):
    assert http_url(value) == expected


def _review_page(client, reviewer_ana, url: str) -> str:
    collection = make_collection(slug="links")
    query = make_query(collection, external_id="q1")
    item = make_item(collection, external_id="d1", url=url)
    queue_unjudged(collection=collection, pairs=[(query.pk, item.pk, 1)], source="test")
    set_membership(collection=collection, user=reviewer_ana, role="reviewer")
    client.force_login(reviewer_ana)
    client.post(f"/c/{collection.slug}/review/claim/")  # claim by POST, then read the page
    response = client.get(f"/c/{collection.slug}/review/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_javascript_url_is_shown_as_text_not_as_a_link(client, reviewer_ana):
    html = _review_page(client, reviewer_ana, "javascript:alert(document.cookie)")
    assert 'href="javascript:' not in html.lower()
    assert "javascript:alert(document.cookie)" in html  # shown, as text
    assert "Open the source" not in html


def test_an_https_url_is_a_link(client, reviewer_ana):
    html = _review_page(client, reviewer_ana, "https://example.org/doc/1")
    assert 'href="https://example.org/doc/1"' in html


@pytest.mark.parametrize(
    "cell,expected",
    [
        ("=SUM(1+1)", "'=SUM(1+1)"),
        ("@cmd", "'@cmd"),
        ("+1+2", "'+1+2"),
        ("-2+3", "'-2+3"),
        ("\tq", "'\tq"),
        ("\rq", "'\rq"),
        ("q=1", "q=1"),
        ("-0.25", "-0.25"),  # a number the report wrote stays a number
        (-0.25, -0.25),
        (3, 3),
    ],
)
def test_formula_cells_get_a_leading_quote(cell, expected):
    assert neutralise_cell(cell) == expected


def test_to_csv_neutralises_every_text_cell():
    text = to_csv([["query", "value"], ['=HYPERLINK("x")', "-1"], ["@a", "0.5"]])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [["query", "value"], ['\'=HYPERLINK("x")', "-1"], ["'@a", "0.5"]]


def test_a_report_csv_of_formula_query_ids_runs_nothing(db, tmp_path: Path):
    bundle = tmp_path / "b.jsonl"
    bundle.write_text(
        '{"type": "collection", "slug": "formulas", "scale": [{"grade": 0, "name": "no"}, '
        '{"grade": 1, "name": "yes"}], "relevant_grade": 1}\n'
        '{"type": "item", "id": "d1", "text": "one"}\n'
        '{"type": "query", "id": "=SUM(1+1)", "text": "sum", "status": "relevant"}\n'
        '{"type": "query", "id": "@cmd", "text": "cmd", "status": "relevant"}\n'
        '{"type": "judgment", "query": "=SUM(1+1)", "item": "d1", "grade": 1}\n'
        '{"type": "judgment", "query": "@cmd", "item": "d1", "grade": 1}\n',
        encoding="utf-8",
    )
    call_command("import_collection", str(bundle), stdout=io.StringIO())
    collection = Collection.objects.get(slug="formulas")
    snapshot, _ = freeze_snapshot(collection=collection, by=None)
    run_file = tmp_path / "run.trec"
    run_file.write_text("=SUM(1+1) Q0 d1 1 1.0 t\n@cmd Q0 d1 1 1.0 t\n", encoding="utf-8")
    run = import_run(collection=collection, path=run_file, name="r").run
    evaluation, _ = score_run_stage(
        run=run, stage=run.stages.get(), snapshot=snapshot, params=engine.EvalParams(ks=(1,))
    )
    rows = list(csv.reader(io.StringIO(report_csv(build_report(evaluation)))))
    queries = {r[1] for r in rows[1:] if r[1]}
    assert queries == {"'=SUM(1+1)", "'@cmd"}
    assert not any(cell.startswith(("=", "@")) for row in rows for cell in row)
