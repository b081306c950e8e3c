"""Jobs as state: created and queued once, started once, finished inside the transaction
that stores their work, failed with words; a silent worker is noticed, reads never write,
and a failed job can be run again with the same input."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.cache import caches
from django.utils import timezone

from jobs.files import store_input
from jobs.models import Job, JobKind, JobState
from jobs.progress import (
    JobProgress,
    Progress,
    TerminalProgress,
    from_lines,
    progress_key,
    read_progress,
)
from jobs.runner import run_job
from jobs.selectors import job_status
from jobs.services import (
    JobFailed,
    JobStateError,
    fail_stale_jobs,
    finish_job,
    retry_job,
    start_job,
)
from scoring.tasks import import_run_task

pytestmark = pytest.mark.django_db


def make_job(**fields) -> Job:
    defaults = {
        "kind": JobKind.SNAPSHOT_FREEZE,
        "label": "a job",
        "task_path": "judgments.tasks.freeze_task",
    }
    return Job.objects.create(**{**defaults, **fields})


def beat_at(job: Job, seconds_ago: float) -> None:
    """Write the job's heartbeat as its worker would have, ``seconds_ago``."""
    at = (timezone.now() - timedelta(seconds=seconds_ago)).timestamp()
    caches["jobs"].set(progress_key(job.key), {"phase": "storing", "done": 5, "total": 9, "at": at})


# -- one state change at a time -------------------------------------------------------------


def test_a_job_starts_once_and_finishes_once(job_dir):
    job = make_job()

    started = start_job(job.pk)
    again = start_job(job.pk)
    finish_job(started, {"summary": "made"}, phase="done", done=3, total=3)

    assert started is not None and again is None
    job.refresh_from_db()
    assert (job.state, job.result, job.done, job.total) == (
        JobState.DONE,
        {"summary": "made"},
        3,
        3,
    )
    assert job.started_at is not None and job.finished_at is not None
    with pytest.raises(JobStateError):
        finish_job(started, {})


def test_a_job_the_sweep_gave_up_cannot_be_finished_late(job_dir, settings):
    settings.VERITY_JOB_STALE_SECONDS = 30
    job = start_job(make_job().pk)
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(minutes=5))
    beat_at(job, 120)

    swept = fail_stale_jobs()

    assert [j.pk for j in swept] == [job.pk]
    with pytest.raises(JobStateError):
        finish_job(job, {"summary": "too late"})
    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert "stopped answering" in job.error and "Retry" in job.error
    assert f"/api/jobs/{job.pk}/retry/" in job.error
    # The last progress the worker wrote is kept on the row.
    assert (job.phase, job.done, job.total) == ("storing", 5, 9)


def test_a_worker_that_beats_is_not_stale(job_dir, settings):
    settings.VERITY_JOB_STALE_SECONDS = 30
    job = start_job(make_job().pk)
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(minutes=5))
    beat_at(job, 10)

    assert fail_stale_jobs() == []
    job.refresh_from_db()
    assert job.state == JobState.RUNNING


def test_reading_a_stale_job_shows_it_failed_but_writes_nothing(job_dir, settings):
    settings.VERITY_JOB_STALE_SECONDS = 30
    job = start_job(make_job().pk)
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(minutes=5))
    job.refresh_from_db()
    beat_at(job, 120)

    shown = job_status(job)

    assert shown["state"] == "failed" and shown["stale"] is True
    assert "stopped answering" in shown["error"]
    job.refresh_from_db()
    assert job.state == JobState.RUNNING  # the sweep records it, not a read


def test_a_running_job_shows_the_progress_its_worker_wrote(job_dir):
    job = start_job(make_job().pk)
    progress = JobProgress(job.key)

    progress.phase("storing ranked lists", 400)
    progress.advance(100)
    progress.beat()  # the heartbeat thread writes the latest state
    shown = job_status(job)

    # The first phase stands for half the job (jobs.progress.PHASE_SHARE): 100 of 400
    # of it is 12.5% of the whole job.
    assert (shown["phase"], shown["done"], shown["total"], shown["percent"]) == (
        "storing ranked lists",
        100,
        400,
        12.5,
    )
    assert read_progress(job.key)["at"] > 0


def test_a_queued_job_nobody_takes_says_how_to_start_a_worker(job_dir):
    job = make_job()
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=2))
    job.refresh_from_db()

    assert "manage.py jobs_worker" in job_status(job)["waiting"]


# -- the runner -----------------------------------------------------------------------------


def test_run_job_records_a_refusal_in_words_and_drops_the_input(job_dir, tmp_path):
    path = tmp_path / "bad.trec"
    path.write_text("A Q0 a 1 1.0 t\nA Q0 a 2 0.5 t\n", encoding="utf-8")
    job = make_job(kind=JobKind.RUN_IMPORT, task_path="scoring.tasks.import_run_task")
    job.params = {"input": store_input(job, path, "bad.trec")}
    job.save()

    def body(job, progress):
        raise JobFailed("bad.trec: the run was refused", ["bad.trec line 2: duplicate docid"])

    run_job(job.pk, body)

    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert job.error == "bad.trec: the run was refused"
    assert job.errors == ["bad.trec line 2: duplicate docid"]
    assert not (job_dir / "files" / job.params["input"]).exists()


def test_run_job_keeps_the_input_after_an_unexpected_error_so_it_can_be_retried(job_dir, tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("A Q0 a 1 1.0 t\n", encoding="utf-8")
    job = make_job(kind=JobKind.RUN_IMPORT, task_path="scoring.tasks.import_run_task")
    job.params = {"input": store_input(job, path, "run.trec"), "name": "again"}
    job.save()

    def body(job, progress):
        raise RuntimeError("the database went away")

    with pytest.raises(RuntimeError):
        run_job(job.pk, body)

    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert "unexpected error (RuntimeError: the database went away)" in job.error
    assert job_status(job)["can_retry"]
    new = retry_job(job)
    assert new.retry_of_id == job.pk and new.state == JobState.QUEUED
    assert new.params["name"] == "again"
    assert (job_dir / "files" / new.params["input"]).read_text() == "A Q0 a 1 1.0 t\n"
    assert not (job_dir / "files" / job.params["input"]).exists()


def test_only_a_failed_job_can_be_retried(job_dir):
    for state in (JobState.QUEUED, JobState.RUNNING, JobState.DONE):
        job = make_job(state=state, started_at=timezone.now())
        with pytest.raises(JobStateError, match="only a failed job"):
            retry_job(job)


def test_a_task_for_a_job_that_is_not_queued_does_nothing(job_dir):
    job = make_job(state=JobState.FAILED)

    assert import_run_task.call(job.pk) == {"job": job.pk, "skipped": True}


# -- progress on a terminal -----------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_progress_is_silent_off_a_terminal():
    assert type(TerminalProgress.for_stream(io.StringIO())) is Progress
    assert isinstance(TerminalProgress.for_stream(Terminal()), TerminalProgress)


def test_terminal_progress_redraws_one_line_per_phase():
    out = Terminal()
    bar = TerminalProgress(out)

    bar.phase("reading")
    bar.phase("storing", 4)
    bar.advance(1)  # 25%: 6 of 25 marks
    bar.advance(1)  # 50%
    bar.advance(2)  # 100%, the line ends

    assert out.getvalue() == (
        "reading …\n"
        f"\rstoring [{' ' * 25}]   0% (0/4)"
        f"\rstoring [{'#' * 6}{' ' * 19}]  25% (1/4)"
        f"\rstoring [{'#' * 12}{' ' * 13}]  50% (2/4)"
        f"\rstoring [{'#' * 25}] 100% (4/4)\n"
    )


def test_progress_lines_of_an_import_become_phases():
    out = Terminal()
    line = from_lines(TerminalProgress(out))

    for text in ("items: 2/4", "items: 4/4", "judgments: 3/3", "a line that is no count"):
        line(text)

    full = "#" * 25
    assert out.getvalue() == (
        f"\rstoring items [{' ' * 25}]   0% (0/4)"
        f"\rstoring items [{'#' * 12}{' ' * 13}]  50% (2/4)"
        f"\rstoring items [{full}] 100% (4/4)\n"
        f"\rstoring judgments [{' ' * 25}]   0% (0/3)"
        f"\rstoring judgments [{full}] 100% (3/3)\n"
    )


def test_a_stop_whose_clean_up_raises_in_turn_puts_the_job_back_never_fails_it(job_dir, tmp_path):
    """db_worker's second SIGTERM raises SystemExit wherever the job is; there a cache
    file's clean-up raised FileNotFoundError while handling it, and the job failed ("an
    unexpected error") instead of going back on the queue (CI, test_signals)."""
    path = tmp_path / "run.trec"
    path.write_text("A Q0 a 1 1.0 t\n", encoding="utf-8")
    job = make_job(kind=JobKind.RUN_IMPORT, task_path="scoring.tasks.import_run_task")
    job.params = {"input": store_input(job, path, "run.trec")}
    job.save()

    def body(job, progress):
        try:
            raise SystemExit(1)  # the worker's signal handler, mid-way through a write
        finally:
            raise FileNotFoundError("the cache's temporary file is gone")

    with pytest.raises(FileNotFoundError):
        run_job(job.pk, body)

    job.refresh_from_db()
    assert (job.state, job.error) == (JobState.QUEUED, "")
    assert (job_dir / "files" / job.params["input"]).exists()
