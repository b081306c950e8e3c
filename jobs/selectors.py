"""Reads of jobs: the ones a user may see, and one job as the page and the API show it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.urls import reverse
from django.utils import timezone

from . import files
from .models import Job, JobKind, JobState
from .progress import read_cancel, read_progress
from .services import is_stale, stale_message

#: A job queued longer than this without a worker taking it gets a hint on its page.
WAITING_HINT_AFTER = timedelta(seconds=15)


#: The role each kind of job needs in its collection: to start it, and, checked again at
#: every request and when a worker starts it, to read it, retry or cancel it and fetch its
#: result or file. The names are ``judgments.models.Role`` values; jobs sits below
#: judgments and does not import it (tests/jobs/test_access.py checks that they agree).
ROLE_FOR_KIND: dict[str, str] = {
    JobKind.RUN_IMPORT: "evaluator",
    JobKind.SNAPSHOT_FREEZE: "evaluator",
    JobKind.SCORING: "evaluator",
    JobKind.DIAGNOSIS: "evaluator",
    JobKind.COMPARISON: "evaluator",
    JobKind.QRELS_EXPORT: "evaluator",
    JobKind.JUDGING: "evaluator",
    JobKind.MAPPING_IMPORT: "evaluator",
    JobKind.COLLECTION_IMPORT: "admin",
    # Made with no collection (its author alone sees it); the collection it made is set
    # on it when it is done, and from then its admins see it.
    JobKind.COLLECTION_CREATE: "admin",
    # The whole project: every reviewer's notes and name, every decision (judgments.tasks).
    JobKind.BUNDLE_EXPORT: "admin",
}

#: The roles that include each role (``judgments.models.ROLE_RANK``, strongest last).
ROLES_AT_LEAST: dict[str, tuple[str, ...]] = {
    "reviewer": ("reviewer", "evaluator", "admin"),
    "evaluator": ("evaluator", "admin"),
    "admin": ("admin",),
}


def _role_q(user: Any) -> Q:
    """Jobs of a collection where the user holds, now, the role that job's kind needs
    (one membership row per collection: the conditions join it once)."""
    q = Q(pk__in=[])
    for role, held in ROLES_AT_LEAST.items():
        kinds = [k for k, needed in ROLE_FOR_KIND.items() if needed == role]
        if kinds:
            q |= Q(
                kind__in=kinds, collection__members__user=user, collection__members__role__in=held
            )
    return q


def jobs_visible_to(user: Any) -> QuerySet[Job]:
    """The jobs a user may read, checked against their role now: a collection's jobs
    for its members holding the role the job's kind needs (``ROLE_FOR_KIND``), whoever
    started them; a job of no collection for its author; every job for a superuser. A
    member removed or demoted since does not see their own jobs any more."""
    if not getattr(user, "is_authenticated", False):
        return Job.objects.none()
    jobs = Job.objects.select_related("collection", "created_by", "cancelled_by")
    if user.is_superuser:
        return jobs
    mine_without_collection = Q(collection__isnull=True, created_by=user)
    return jobs.filter(mine_without_collection | _role_q(user)).distinct()


def job_for(user: Any, pk: int) -> Job | None:
    """The job ``pk`` if ``user`` may read it now (``jobs_visible_to``), else ``None``:
    pages and the API answer 404 then, whether it does not exist or is not theirs."""
    return jobs_visible_to(user).filter(pk=pk).first()


def may_manage_job(user: Any, job: Job) -> bool:
    """Retrying or cancelling a job, and downloading its file: its author or a superuser,
    who must also hold, now, the role its kind needs in its collection (``job_for``
    first: without that role the job is not theirs to see at all)."""
    if not getattr(user, "is_authenticated", False):
        return False
    if not jobs_visible_to(user).filter(pk=job.pk).exists():
        return False
    return bool(user.is_superuser or (job.created_by_id and job.created_by_id == user.pk))


#: The name the pages and the API used before; the same rule.
may_retry = may_manage_job


def requester_may_run(job: Job, *, running: bool = False) -> str:
    """Why the job's requester may not run it now ('' when they may): the worker asks
    before it starts a job, so a job queued by a member removed or demoted since fails
    instead of acting with a role they no longer hold; and again (``running``) in the
    transaction that stores what the job made, so a job whose requester lost the role
    while it ran stores nothing. A job without a requester (a management command's, or
    one whose user was deleted) is the operator's."""
    user = job.created_by
    if user is None or not job.collection_id:
        return ""
    if user.is_active and jobs_visible_to(user).filter(pk=job.pk).exists():
        return ""
    needed = ROLE_FOR_KIND.get(job.kind, "admin")
    if running:
        return (
            f"Not completed: {user.get_username()} lost the {needed} role in collection "
            f"'{job.collection.slug}' while this job ran (removed or demoted). Nothing of it "
            "was stored; someone who holds the role can start it again."
        )
    return (
        f"Not run: {user.get_username()} does not hold the {needed} role in collection "
        f"'{job.collection.slug}' any more (removed or demoted since queuing this job). "
        "Nothing was done; someone who holds the role can start it again."
    )


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
