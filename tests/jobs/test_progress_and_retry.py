"""Progress that means something, and the loose ends of a job's life: every phase of a run
import has a total, on either database (PostgreSQL's read-in-pieces storing had none); the
whole job's percent only grows; a second retry of the same job says it was retried
already; a job's input folder goes with its input; a job outliving VERITY_JOB_TIMEOUT is
stopped by its worker and says so."""

from __future__ import annotations

import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from jobs import files
from jobs.models import Job, JobKind, JobState
from jobs.progress import JobProgress, Progress, read_progress
from jobs.runner import run_job
from jobs.selectors import job_status
from jobs.services import end_job, retry_job
from judgments.models import Query
from judgments.services import set_membership
from scoring.services import import_run, run_lists
from tests.factories import make_collection
from tests.scoring.conftest import RECALL_EXAMPLE

pytestmark = pytest.mark.django_db

RUN = (RECALL_EXAMPLE / "run.trec").read_bytes()


class Recorded(Progress):
    """Every phase a service starts, with its total."""

    def __init__(self) -> None:
        super().__init__()
        self.phases: list[tuple[str, int | None]] = []

    def phase(self, name: str, total: int | None = None) -> None:
        super().phase(name, total)
        self.phases.append((name, total))


@pytest.mark.parametrize("pieces", [False, True], ids=["whole", "in-pieces"])
def test_every_phase_of_a_run_import_has_a_total(pieces, tmp_path, monkeypatch):
    if pieces:  # PostgreSQL stores a large TREC run as it reads it, a piece at a time
        monkeypatch.setattr(run_lists, "CHUNK_BYTES", 2000)
    collection = make_collection(slug="counted", pool_depth=5)
    Query.objects.bulk_create(
        Query(collection=collection, external_id=f"q{q}", text="t") for q in range(50)
    )
    path = tmp_path / "run.trec"
    path.write_text(
        "".join(f"q{q} Q0 d{q}-{r} {r + 1} {20 - r} t\n" for q in range(50) for r in range(20))
    )
    progress = Recorded()

    import_run(collection=collection, path=path, name="counted", progress=progress)

    names = [name for name, _ in progress.phases]
    assert "storing ranked lists" in names and "pooling unjudged items" in names
    assert [p for p in progress.phases if p[1] is None] == []
    assert dict(progress.phases)["storing ranked lists"] == 1000  # the file's lines
    assert dict(progress.phases)["reading run.trec"] == path.stat().st_size  # bytes


def test_the_whole_jobs_percent_only_grows_across_phases(job_dir):
    job = Job.objects.create(kind=JobKind.RUN_IMPORT, label="x", task_path="x")
    progress = JobProgress(job.key)
    seen = []

    def look() -> None:
        progress.beat()
        seen.append(read_progress(job.key)["percent"])

    progress.phase("reading", 100)
    look()
    progress.advance(100)
    look()
    progress.phase("storing", 10)  # a new phase starts at 0 of its own count
    look()
    progress.advance(5)
    look()
    progress.phase("pooling", 3)
    look()
    progress.advance(3)
    look()

    # Each phase stands for half of what is left when it starts (jobs.progress.PHASE_SHARE):
    # reading 0-50; storing 50-75, left at 62.5; pooling 62.5-81.25.
    assert seen == [0.0, 50.0, 50.0, 62.5, 62.5, 81.2]
    assert seen == sorted(seen)
    job.state = JobState.RUNNING
    job.save()
    assert job_status(job)["percent"] == 81.2


def failed_import(collection, eve) -> Job:
    job = Job.objects.create(
        kind=JobKind.RUN_IMPORT,
        label="import",
        collection=collection,
        created_by=eve,
        task_path="scoring.tasks.import_run_task",
        state=JobState.FAILED,
        error="it failed",
    )
    job.params = {"input": files.store_input(job, SimpleUploadedFile("r.trec", RUN), "r.trec")}
    job.save()
    return job


def test_a_second_retry_says_the_job_was_retried_already(recall_v1, django_user_model, job_dir):
    eve = django_user_model.objects.create_user("eve")
    set_membership(collection=recall_v1.collection, user=eve, role="evaluator")
    job = failed_import(recall_v1.collection, eve)
    api = APIClient()
    api.force_authenticate(eve)

    first = api.post(f"/api/jobs/{job.pk}/retry/")
    second = api.post(f"/api/jobs/{job.pk}/retry/")

    assert first.status_code == 202
    new = first.json()["id"]
    assert second.status_code == 409
    assert second.json()["detail"] == (
        f"job {job.pk} was already started again, as job {new} (its input went with it); "
        "follow that one, and retry it if it failed"
    )
    assert api.get(f"/api/jobs/{job.pk}/").json()["can_retry"] is False


def test_input_folders_go_with_their_input(recall_v1, django_user_model, job_dir):
    eve = django_user_model.objects.create_user("eve")
    set_membership(collection=recall_v1.collection, user=eve, role="evaluator")
    job = failed_import(recall_v1.collection, eve)
    inputs = job_dir / "files" / "inputs"
    assert (inputs / str(job.key)).is_dir()

    new = retry_job(job)  # moves the input to the new job's folder
    assert not (inputs / str(job.key)).exists()
    assert (inputs / str(new.key)).is_dir()

    new.refresh_from_db()
    end_job(new)
    assert list(inputs.iterdir()) == []


def test_a_job_over_the_workers_time_limit_fails_saying_so(settings, job_dir):
    settings.VERITY_JOB_TIMEOUT = 1
    job = Job.objects.create(kind=JobKind.SCORING, label="slow", task_path="x")

    def slow(job, progress):
        time.sleep(3)
        return {"summary": "finished after all"}

    started = time.monotonic()
    run_job(job.pk, slow)

    assert time.monotonic() - started < 2.5
    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert job.error.startswith(
        "The job ran longer than its worker allows (VERITY_JOB_TIMEOUT = 1 s) and was stopped."
    )
    assert "unexpected" not in job.error


def test_every_phase_of_a_scoring_has_a_total(recall_v1):
    from scoring.services import score_run_stage
    from verity_eval import EvalParams

    run = import_run(
        collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="scored"
    ).run
    progress = Recorded()

    score_run_stage(
        run=run,
        stage=run.stages.get(),
        snapshot=recall_v1,
        params=EvalParams(ks=(2,)),
        progress=progress,
    )

    assert progress.phases == [
        ("reading snapshot v1 and stage default", 2),
        ("scoring 3 ranked lists", 3),
        ("storing per-query rows", 3),
    ]
    assert progress.done == progress.total


def test_every_phase_of_a_freeze_has_a_total(recall_example):
    """On main the freeze's four phases had no total (issue 23 item 6)."""
    from judgments.services import freeze_snapshot

    progress = Recorded()
    freeze_snapshot(collection=recall_example, by=None, progress=progress)

    assert progress.phases == [
        ("reading the blocks of the latest version", 1),
        ("rendering every query", 3),
        ("hashing", 3),
        ("writing 3 new query blocks into v1", 3),
    ]
    assert progress.done == progress.total


@pytest.mark.parametrize("fmt", ["jsonl", "trec"])
def test_the_qrels_export_has_a_total_in_both_formats(fmt, recall_v1, job_dir):
    """On main the JSON Lines export wrote with no total (issue 23 item 6)."""
    from judgments.tasks import _export

    job = Job.objects.create(
        kind=JobKind.QRELS_EXPORT,
        label="export",
        collection=recall_v1.collection,
        task_path="judgments.tasks.export_qrels_task",
        params={"snapshot": 1, "format": fmt},
    )
    progress = Recorded()
    _export(job, progress)
    # the recall example's v1: 2 header lines, 3 queries and 8 judgments; its TREC form
    # is the 8 judgments
    assert progress.phases == [("writing the qrels", 13 if fmt == "jsonl" else 8)]
