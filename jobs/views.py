"""The job page: what the job does, a progress bar while it runs (polled by
``static/jobs/job.js``, or the page reloads itself without JavaScript), then its result
or its error, and Retry for a failed one."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from .models import Job, JobKind, JobState
from .selectors import job_for, job_status, may_manage_job
from .services import JobStateError, cancel_job, retry_job

#: Seconds between reloads of a running job's page when JavaScript is off.
REFRESH_SECONDS = 2


def _job_or_404(request: HttpRequest, pk: int) -> Job:
    job = job_for(request.user, pk)
    if job is None:
        raise Http404("No such job among yours.")
    return job


@require_GET
@login_required
def job_page(request: HttpRequest, pk: int) -> HttpResponse:
    job = _job_or_404(request, pk)
    status = job_status(job)
    # A job whose result is a page to read (a report) lands there when done.
    if status["state"] == JobState.DONE and job.result.get("open") and "stay" not in request.GET:
        return redirect(job.result["url"])
    return render(
        request,
        "jobs/job.html",
        {
            "job": job,
            "s": status,
            "running": status["state"] in (JobState.QUEUED, JobState.RUNNING),
            "refresh": REFRESH_SECONDS,
            "may_retry": may_manage_job(request.user, job),
            "cancelled": status["state"] == JobState.CANCELLED,
            "back": back_to_form(job) if status["state"] == JobState.FAILED else None,
        },
    )


#: Where each kind of job is started from a page: (URL name, anchor, link text).
FORMS = {
    JobKind.RUN_IMPORT: ("scoring:runs", "#upload-title", "Back to the upload form"),
    JobKind.SCORING: ("scoring:evaluation-new", "", "Back to the scoring form"),
    JobKind.SNAPSHOT_FREEZE: ("judgments:snapshots", "", "Back to the snapshots"),
    JobKind.DIAGNOSIS: ("scoring:runs", "", "Back to the runs"),
    JobKind.COMPARISON: ("scoring:compare", "", "Back to the comparison form"),
    JobKind.JUDGING: ("judges:judges", "", "Back to the judges"),
    JobKind.QRELS_EXPORT: ("judgments:snapshots", "", "Back to the snapshots"),
    JobKind.BUNDLE_EXPORT: ("judgments:collection", "", "Back to the collection"),
}


def back_to_form(job: Any) -> dict[str, str] | None:
    """The link from a failed job to the page whose form started it (in its collection)."""
    where = FORMS.get(job.kind)
    if where is None or not job.collection_id:
        return None
    name, anchor, text = where
    return {"url": reverse(name, args=[job.collection.slug]) + anchor, "text": text}


@require_POST
@login_required
def job_retry(request: HttpRequest, pk: int) -> HttpResponse:
    job = _job_or_404(request, pk)
    if not may_manage_job(request.user, job):
        messages.error(request, "Only the job's author (or a superuser) may start it again.")
        return redirect("jobs:job", pk=job.pk)
    try:
        new = retry_job(job, by=request.user)
    except JobStateError as exc:
        messages.error(request, f"Not started again: {exc}.")
        return redirect("jobs:job", pk=job.pk)
    messages.success(request, f"Started again as job {new.pk}.")
    return redirect("jobs:job", pk=new.pk)


@require_POST
@login_required
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    job = _job_or_404(request, pk)
    if not may_manage_job(request.user, job):
        messages.error(request, "Only the job's author (or a superuser) may cancel it.")
        return redirect("jobs:job", pk=job.pk)
    try:
        job = cancel_job(job, by=request.user, via="page")
    except JobStateError as exc:
        messages.error(request, f"Not cancelled: {exc}.")
        return redirect("jobs:job", pk=job.pk)
    if job.state == JobState.CANCELLED:
        messages.success(request, f"Job {job.pk} is cancelled; nothing of it was stored.")
    else:
        messages.success(request, f"Cancelling job {job.pk}: its worker stops it at its next step.")
    return redirect("jobs:job", pk=job.pk)
