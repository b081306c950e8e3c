"""Holes per run (issue 28, item 2) on the runs pages, the run's API and ``score --json``,
on the hand-worked example of ``settle_helpers`` (snapshot v1 judges d1, d2, d3, e1, e2).

run-a: q1 [d1, u1], q2 [e2, u3]: in the first 2, one judged and one unjudged each
(Judged@2 = .5); in the first 10, Judged@10 = 1/10 each. run-d: q1 [d2, u5], q2 [e2]:
q1 as run-a's, q2 ranks one judged item (Judged@2 = .5, nothing unjudged).
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from judgments.models import Role
from judgments.services import set_membership, update_collection_settings
from tests.factories import make_user
from tests.scoring.settle_helpers import build

pytestmark = pytest.mark.django_db


@pytest.fixture
def example(tmp_path):
    ex = build(tmp_path)
    ex["evaluator"] = make_user("holes-evaluator")
    set_membership(collection=ex["collection"], user=ex["evaluator"], role=Role.EVALUATOR)
    return ex


def test_the_runs_api_gives_holes_per_query_and_overall(client, example):
    client.force_login(example["evaluator"])
    data = client.get("/api/collections/settle/runs/run-a/?k=2").json()
    holes = data["holes"]
    assert (holes["snapshot"], holes["ks"]) == (1, [2])
    stage = holes["stages"]["default"]
    assert stage["overall"] == {
        "queries": 2,
        "ks": {"2": {"judged_at": 0.5, "unjudged": 2, "queries_with_unjudged": 2}},
    }
    assert stage["per_query"] == {
        "q1": {"ranked": 2, "k": {"2": {"judged_at": 0.5, "unjudged": 1}}},
        "q2": {"ranked": 2, "k": {"2": {"judged_at": 0.5, "unjudged": 1}}},
    }
    d = client.get("/api/collections/settle/runs/run-d/?k=2,10").json()["holes"]
    overall = d["stages"]["default"]["overall"]["ks"]
    assert overall["2"] == {"judged_at": 0.5, "unjudged": 1, "queries_with_unjudged": 1}
    assert overall["10"] == {"judged_at": 0.1, "unjudged": 1, "queries_with_unjudged": 1}
    assert client.get("/api/collections/settle/runs/run-a/?k=0").status_code == 400


def test_score_json_has_the_holes_at_the_evaluations_cutoffs(example):
    out = io.StringIO()
    call_command("score", "settle", "run-d", "--k", "2", "--measures", "P@2", "--json", stdout=out)
    holes = json.loads(out.getvalue())["holes"]
    assert (holes["snapshot"], holes["stage"]) == (1, "default")
    assert holes["overall"]["ks"]["2"] == {
        "judged_at": 0.5,
        "unjudged": 1,
        "queries_with_unjudged": 1,
    }
    assert holes["per_query"]["q2"] == {"ranked": 1, "k": {"2": {"judged_at": 0.5, "unjudged": 0}}}


def test_the_runs_pages_show_the_holes(client, example):
    client.force_login(example["evaluator"])
    runs = client.get("/c/settle/runs/").content.decode()
    assert "Holes <span" in runs and "against v1" in runs
    # run-a at k = 10 (and the pool depth, 10): 2 judged of 20 positions
    assert "Judged@10 10.0%, 2 unjudged in 2 queries" in runs
    assert "Judged@10 10.0%, 1 unjudged in 1 query" in runs  # run-d
    run = client.get("/c/settle/runs/run-d/").content.decode()
    assert "Judged@10 10% (1 unjudged)" in run and "Judged@10 10% (0 unjudged)" in run


def test_a_reviewer_of_a_blind_collection_sees_no_holes(client, example):
    update_collection_settings(collection=example["collection"], assessors_per_item=2)
    reviewer = make_user("holes-reviewer")
    set_membership(collection=example["collection"], user=reviewer, role=Role.REVIEWER)
    client.force_login(reviewer)
    assert "Holes" not in client.get("/c/settle/runs/").content.decode()
    assert "holes" not in client.get("/api/collections/settle/runs/run-a/").json()


def test_the_runs_page_leaves_a_large_stages_holes_to_its_page(client, example, monkeypatch):
    from scoring.views import runs

    monkeypatch.setattr(runs, "LIST_HOLES_MAX_ROWS", 3)  # run-d has 3 rows; the others 4
    client.force_login(example["evaluator"])
    page = client.get("/c/settle/runs/").content.decode()
    assert "Judged@10 10.0%, 1 unjudged in 1 query" in page  # run-d, inline
    assert page.count("(a large stage)") == 3
