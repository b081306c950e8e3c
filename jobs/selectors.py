"""Reads of jobs: the ones a user may see, and one job as the page and the API show it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.urls import reverse
from django.utils import timezone

from . import files
from .models import Job, JobState
from .progress import read_cancel, read_progress
from .services import is_stale, stale_message

#: A job queued longer than this without a worker taking it gets a hint on its page.
WAITING_HINT_AFTER = timedelta(seconds=15)


def jobs_visible_to(user: Any) -> QuerySet[Job]:
    """Jobs the user started, and the jobs of collections the user is a member of (every
    job, for a superuser)."""
    if not getattr(user, "is_authenticated", False):
        return Job.objects.none()
    jobs = Job.objects.select_related("collection", "created_by", "cancelled_by")
    if user.is_superuser:
        return jobs
    return jobs.filter(Q(created_by=user) | Q(collection__members__user=user)).distinct()


def may_retry(user: Any, job: Job) -> bool:
    return bool(user.is_superuser or (job.created_by_id and job.created_by_id == user.pk))


def job_status(job: Job, *, now: Any = None) -> dict[str, Any]:
    """The job as the page and the API show it. A running job's progress comes from the
    cache, where its worker writes it; a running job whose worker went silent is shown
    failed with the reason (the sweep records that; a read never writes)."""
    now = now or timezone.now()
    state, error, errors = job.state, job.error, list(job.errors)
    phase, done, total = job.phase, job.done, job.total
    live = read_progress(job.key) if job.state == JobState.RUNNING else None
    if live:
        phase, done, total = live.get("phase") or phase, live.get("done") or 0, live.get("total")
    stale = is_stale(job, now)
    if stale:
        state, error = JobState.FAILED, stale_message(job)
    # The whole job's percent, which only grows (jobs.progress.JobProgress); done and
    # total count the current phase.
    percent = live.get("percent") if live else None
    if state == JobState.DONE:
        percent = 100.0
    waiting = ""
    if state == JobState.QUEUED and now - job.created_at > WAITING_HINT_AFTER:
        waiting = (
            "No worker has taken this job yet. Is one running? Start one with "
            "'manage.py jobs_worker' (make run starts one for you)."
        )
    result = dict(job.result)
    if result.get("file"):
        result["download_url"] = reverse("jobs-api:job-file", args=[job.pk])
        result["size"] = files.output_size(job)
        result.pop("file")
    return {
        "id": job.pk,
        "kind": job.kind,
        "kind_label": job.get_kind_display(),
        "label": job.label,
        "state": state,
        "stale": stale,
        "phase": phase,
        "done": done,
        "total": total,
        "percent": percent,
        "result": result,
        "error": error,
        "errors": errors,
        "waiting": waiting,
        "collection": job.collection.slug if job.collection_id else None,
        "created_by": job.created_by.get_username() if job.created_by_id else None,
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "retry_of": job.retry_of_id,
        "cancelling": state == JobState.RUNNING and read_cancel(job.key) is not None,
        "cancelled_by": job.cancelled_by.get_username() if job.cancelled_by_id else None,
        "cancelled_at": job.cancelled_at.isoformat() if job.cancelled_at else None,
        "can_cancel": state in (JobState.QUEUED, JobState.RUNNING),
        "can_retry": state == JobState.FAILED
        and not job.retries.exists()
        and (not job.params.get("input") or files.has_input(job)),
        "url": reverse("jobs:job", args=[job.pk]),
        "api_url": reverse("jobs-api:job", args=[job.pk]),
    }
