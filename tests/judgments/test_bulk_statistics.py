"""Bulk imports leave PostgreSQL with statistics for the tables they filled (issue 23,
item 14): ``ANALYZE`` runs once the import has committed. ``pg_class.reltuples`` is -1 for
a table never analysed (0 after autovacuum saw it empty); ANALYZE sets the row count.
"""

from __future__ import annotations

import pytest
from django.db import connection

from judgments.models import Judgment, ReviewTask
from judgments.services import statistics

pytestmark = pytest.mark.django_db


def _reltuples(model) -> float:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [model._meta.db_table]
        )
        return cursor.fetchone()[0]


@pytest.mark.postgres
def test_import_trec_analyses_the_tables_it_filled(
    run_command, write_file, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(statistics, "ANALYZE_MIN_ROWS", 50)
    lines = "".join(f"q{q} 0 d{d} {d % 3}\n" for q in range(10) for d in range(8))
    lines += "q0 0 extra -1\n"
    topics = "".join(f"q{q}\tquery {q}\n" for q in range(10))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        run_command(
            "import_trec",
            "stats",
            "--qrels",
            write_file("q.txt", lines),
            "--topics",
            write_file("t.tsv", topics),
        )
    assert len(callbacks) == 1
    assert _reltuples(Judgment) == 80
    assert _reltuples(ReviewTask) == 1


@pytest.mark.postgres
def test_a_run_import_analyses_its_tables(
    recall_example, run_command, write_file, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(statistics, "ANALYZE_MIN_ROWS", 5)
    run = "".join(f"{q} Q0 new{q}{r} {r} {10 - r} t\n" for q in "ABC" for r in range(1, 4))
    with django_capture_on_commit_callbacks(execute=True):
        run_command("import_run", "recall-example", write_file("r.trec", run), "--name", "r")
    assert _reltuples(ReviewTask) == ReviewTask.objects.count() >= 9


@pytest.mark.postgres
def test_a_small_import_leaves_statistics_to_autovacuum(
    run_command, write_file, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run_command(
            "import_trec",
            "small",
            "--qrels",
            write_file("q.txt", "1 0 a 1\n"),
            "--topics",
            write_file("t.tsv", "1\tone\n"),
        )
    assert callbacks == []
