"""Issue 24, item 3: scoring refuses a relevance threshold outside the snapshot's scale
and a cutoff no ranked list can mean, on every path (the form, the API, ``score`` and
``compare_runs``), giving the valid range, and stores nothing.

The founding example's scale is 0 not relevant, 1 relevant: a threshold of 2 makes every
query unscorable, so it can only be a mistake; on main it was accepted (and a cutoff of
10^11 too, on the form and the command).
"""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from jobs.models import Job
from judgments.models import Role
from scoring.models import Evaluation
from scoring.services import import_run
from tests.scoring.report_helpers import RECALL_EXAMPLE, member
from tests.scoring.test_pages import text

pytestmark = pytest.mark.django_db

HUGE = 10**11


@pytest.fixture
def example_run(recall_v1):
    import_run(collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="example")
    return recall_v1.collection


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"ks": "2", "rel_level": "2"},
            "relevance threshold 2 is outside snapshot v1's scale (0 not relevant, 1 relevant): "
            "give a grade from 1 to 1",
        ),
        ({"ks": f"5,{HUGE}"}, "cutoff 100,000,000,000 is out of range: each k must be a "),
    ],
    ids=["threshold-off-scale", "cutoff-absurd"],
)
def test_the_form_refuses_with_the_valid_range(client, example_run, fields, expected):
    client.force_login(member(example_run, "eve", Role.EVALUATOR))

    refused = client.post(
        "/c/recall-example/evaluations/new/",
        {"stage": "example/default", "snapshot": 1, "unjudged": "nonrel", **fields},
    )

    assert refused.status_code == 400
    assert expected in text(refused)
    assert not Job.objects.filter(kind="scoring").exists()


def test_the_api_refuses_with_the_valid_range(example_run):
    api = APIClient()
    api.force_authenticate(member(example_run, "eve", Role.EVALUATOR))

    off_scale = api.post(
        "/api/collections/recall-example/evaluations/",
        {"run": "example", "snapshot": 1, "ks": [2], "rel_level": 2},
        format="json",
    )
    absurd = api.post(
        "/api/collections/recall-example/evaluations/",
        {"run": "example", "snapshot": 1, "ks": [HUGE]},
        format="json",
    )

    assert off_scale.status_code == 400
    assert [e["field"] for e in off_scale.json()["errors"]] == ["rel_level"]
    assert "give a grade from 1 to 1" in off_scale.json()["detail"]
    assert absurd.status_code == 400
    assert "1000000" in absurd.json()["detail"].replace(",", "")
    assert not Evaluation.objects.exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--k", "2", "--rel-level", "2"], "--rel-level: relevance threshold 2 is outside"),
        (["--k", str(HUGE)], "--k: cutoff 100,000,000,000 is out of range"),
    ],
)
def test_the_commands_refuse_with_the_valid_range(run_command, example_run, args, expected):
    with pytest.raises(CommandError, match=expected):
        run_command("score", "recall-example", "example", "--snapshot", 1, *args)
    with pytest.raises(CommandError, match=expected):
        run_command("compare_runs", "recall-example", "example", "example", *args)

    assert not Evaluation.objects.exists()


def test_the_scale_top_grade_is_accepted(run_command, example_run):
    out, _ = run_command("score", "recall-example", "example", "--snapshot", 1, "--k", 2)
    assert "R@2" in out and Evaluation.objects.count() == 1
