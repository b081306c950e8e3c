"""Command-line edges (issue 10): two imports of one run name at once end in the API's
409 sentence, never an IntegrityError traceback (item 8); a closed pipe ends a command
quietly (item 10)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from judgments.services import set_membership
from judgments.services.tokens import create_api_token
from scoring.models import Run
from scoring.services import runs as run_services
from tests.factories import make_user
from tests.judgments.test_concurrency import race
from tests.scoring.conftest import RECALL_EXAMPLE, REPO

TAKEN = "collection 'recall-example' has a run named 'same' already; runs never change"


@pytest.fixture
def name_taken_meanwhile(monkeypatch, recall_example):
    """Another import stores a run named 'same' while this one reads its file."""
    real = run_services._read_stages

    def read_then_lose_the_race(path, **kwargs):
        stages = real(path, **kwargs)
        Run.objects.create(
            collection=recall_example,
            name="same",
            source_filename="other.trec",
            source_sha256="0" * 64,
            source_format="trec",
            order_rule="score",
            dedup_policy="error",
        )
        return stages

    monkeypatch.setattr(run_services, "_read_stages", read_then_lose_the_race)
    return recall_example


def test_a_cli_import_that_loses_the_name_race_says_so_like_the_api(
    name_taken_meanwhile, run_command
):
    with pytest.raises(CommandError) as refused:
        run_command("import_run", "recall-example", RECALL_EXAMPLE / "run.trec", "--name", "same")
    assert TAKEN in str(refused.value)
    assert "IntegrityError" not in str(refused.value)


def test_an_api_upload_that_loses_the_name_race_is_409_with_the_same_sentence(
    name_taken_meanwhile,
):
    user = make_user("eve")
    set_membership(collection=name_taken_meanwhile, user=user, role="evaluator")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=user).key}")
    upload = SimpleUploadedFile("run.trec", (RECALL_EXAMPLE / "run.trec").read_bytes())
    response = client.post(
        "/api/collections/recall-example/runs/",
        {"file": upload, "name": "same"},
        format="multipart",
    )
    assert response.status_code == 409
    assert TAKEN in response.json()["detail"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_six_parallel_cli_imports_of_one_name_store_one_and_refuse_five(run_command):
    run_command("import_collection", RECALL_EXAMPLE / "bundle.jsonl")

    def work():
        return run_command(
            "import_run", "recall-example", RECALL_EXAMPLE / "run.trec", "--name", "same"
        )

    outcomes = race(*[work] * 6)
    errors = [o.error for o in outcomes if o.error is not None]
    assert len(errors) == 5
    assert all(isinstance(e, CommandError) and TAKEN in str(e) for e in errors), errors
    assert Run.objects.filter(name="same").count() == 1


@pytest.mark.parametrize(
    "argv",
    [
        [str(REPO / "manage.py"), "help"],
        ["-m", "scoring", str(RECALL_EXAMPLE / "qrels.trec"), str(RECALL_EXAMPLE / "run.trec")],
    ],
    ids=["manage.py", "python -m scoring"],
)
def test_a_closed_pipe_ends_the_command_quietly(argv):
    process = subprocess.Popen(
        [sys.executable, *argv], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    process.stdout.close()  # the reader is gone before the first line: `| head -0`
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


@pytest.mark.parametrize("name", ["a" * 101, "two words", "bm25\x00", ""])
def test_a_run_name_that_does_not_fit_is_refused_by_the_service(recall_example, run_command, name):
    with pytest.raises(CommandError, match=r"run name .* must be 1 to 100 letters"):
        run_command("import_run", "recall-example", RECALL_EXAMPLE / "run.trec", "--name", name)
    assert not Run.objects.exists()
