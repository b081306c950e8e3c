"""State changes of jobs: create and enqueue, start, finish, fail, retry, and the sweep
that fails jobs whose worker died. Each is one compare-and-set on the job's state, so a
job is started once, finished once, and a late finish after a sweep is refused.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from audit.services import record

from . import files
from .models import Job, JobKind, JobState
from .progress import JobCancelled, forget_progress, read_cancel, read_progress, request_cancel

log = logging.getLogger(__name__)

#: What the sweep writes on a job whose worker stopped answering.
STALE_MESSAGE = (
    "The worker running this job stopped answering{where} (it was killed, or its machine "
    "went down) and the job was abandoned. Nothing of it was stored: this operation is "
    "all-or-nothing. Start it again with the Retry button on this page (or POST "
    "/api/jobs/{pk}/retry/); if it stops again, look at the worker's log."
)


class JobFailed(Exception):
    """Raised by a job's body to fail it with a message in words (and ``errors``, e.g. a
    refused file's lines); nothing else is logged as an error."""

    def __init__(self, message: str, errors: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.errors = list(errors)


class JobStateError(Exception):
    """The job is not in the state the change needs (e.g. retrying a running job)."""


class QueueUnavailable(Exception):
    """The job queue (Redis, or the database's task table) refused a job. The job is
    recorded as failed with this message, its input kept, so Retry starts it once the
    queue is back; the API answers 503 and a page says so (``jobs.middleware``)."""

    def __init__(self, message: str, job: Job) -> None:
        super().__init__(message)
        self.job = job


UNQUEUED_MESSAGE = (
    "The job could not be queued: the job queue ({backend}) did not answer "
    "({error}). Nothing was started and nothing is lost: its input is kept. Start it "
    "again with Retry on this page (or POST /api/jobs/{pk}/retry/) once the queue is "
    "back; /healthz says when it is."
)


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def create_job(
    *,
    kind: str,
    task: Any,
    label: str,
    collection: Any = None,
    by: Any = None,
    params: dict[str, Any] | None = None,
    input_file: Any = None,
    input_name: str = "",
) -> Job:
    """Record a job and put its task on the queue when the transaction commits.

    ``task`` is a Tasks-API task taking the job's id; ``input_file`` (an upload or a path)
    is kept as the job's input. If the queue cannot be reached, the job is failed with
    that reason instead of waiting forever.
    """
    if kind not in JobKind.values:
        raise ValueError(f"unknown job kind {kind!r}")
    with transaction.atomic():
        job = Job.objects.create(
            kind=kind,
            label=label,
            collection=collection,
            created_by=by if getattr(by, "is_authenticated", False) else None,
            params=dict(params or {}),
            task_path=task.module_path,
        )
        if input_file is not None:
            job.params["input"] = files.store_input(job, input_file, input_name)
            job.save(update_fields=["params"])
        transaction.on_commit(lambda: _enqueue(job, task))
    return job


def uses_rq() -> bool:
    """The jobs go to RQ on Redis (``VERITY_JOBS_BACKEND=rq``), not the database."""
    return "RQBackend" in str(settings.TASKS.get("default", {}).get("BACKEND", ""))


def _enqueue(job: Job, task: Any, *, raise_unavailable: bool = True) -> None:
    """Put the job's task on the queue. When the queue cannot take it, the job is failed
    (retryable: its input stays) and ``QueueUnavailable`` raised, so that the request
    that started it answers 503 instead of leaving it queued forever."""
    try:
        result = task.enqueue(job.pk)
    except Exception as exc:  # the queue is down or misconfigured: say so on the job
        log.exception("could not enqueue job %s", job.pk)
        message = UNQUEUED_MESSAGE.format(
            backend="Redis" if uses_rq() else "database",
            error=f"{type(exc).__name__}: {exc}",
            pk=job.pk,
        )
        fail_job(job, message)
        if raise_unavailable:
            raise QueueUnavailable(message, job) from exc
        return
    Job.objects.filter(pk=job.pk, task_id="").update(task_id=str(result.id)[:64])
    job.task_id = str(result.id)[:64]


def start_job(job_id: int) -> Job | None:
    """Mark a queued job running on this worker; ``None`` when it is not queued any more
    (started elsewhere, failed by the sweep, or gone): the caller then does nothing."""
    now = timezone.now()
    taken = Job.objects.filter(pk=job_id, state=JobState.QUEUED).update(
        state=JobState.RUNNING, started_at=now, worker=worker_name()[:200]
    )
    if not taken:
        return None
    return Job.objects.get(pk=job_id)


def finish_job(
    job: Job, result: dict[str, Any], *, phase: str = "", done: int = 0, total: int | None = None
) -> None:
    """Mark a running job done with ``result``. Call it inside the transaction that stores
    what the job made: both commit together, or neither. Raises ``JobStateError`` (and so
    rolls that transaction back) when the job is not running any more: a sweep gave it
    up, and a retry may be under way), and ``JobCancelled`` when someone cancelled it:
    nothing of it is then stored."""
    cancel = read_cancel(job.key)
    if cancel is not None:
        raise JobCancelled(cancel)
    updated = Job.objects.filter(pk=job.pk, state=JobState.RUNNING).update(
        state=JobState.DONE,
        finished_at=timezone.now(),
        result={**job.result, **result},
        phase=phase or "done",
        done=done,
        total=total,
    )
    if not updated:
        raise JobStateError(f"job {job.pk} is no longer running (the sweep gave it up)")
    job.state = JobState.DONE
    job.result = {**job.result, **result}


def fail_job(
    job: Job,
    message: str,
    errors: Sequence[str] = (),
    *,
    expect: Sequence[str] = (JobState.QUEUED, JobState.RUNNING),
) -> bool:
    """Mark the job failed with ``message`` (and ``errors``) unless it finished already."""
    progress = read_progress(job.key) or {}
    updated = Job.objects.filter(pk=job.pk, state__in=list(expect)).update(
        state=JobState.FAILED,
        finished_at=timezone.now(),
        error=message,
        errors=list(errors),
        phase=progress.get("phase") or job.phase,
        done=progress.get("done") or job.done,
        total=progress.get("total") if progress else job.total,
    )
    if updated:
        job.state, job.error, job.errors = JobState.FAILED, message, list(errors)
    return bool(updated)


def requeue_job(job: Job) -> bool:
    """Put a running job back on the queue, to run again from the start: its worker was
    told to stop before the job ended (a second SIGTERM, Ctrl-C). Its transaction was
    rolled back, so nothing of it is stored; it is not failed, since nothing is wrong
    with it. False when it is not running any more."""
    updated = Job.objects.filter(pk=job.pk, state=JobState.RUNNING).update(
        state=JobState.QUEUED, started_at=None, worker="", task_id="", phase="", done=0, total=None
    )
    if not updated:
        return False
    forget_progress(job.key)
    job.state, job.task_id = JobState.QUEUED, ""
    _enqueue(job, import_string(job.task_path), raise_unavailable=False)
    return True


def stale_after() -> timedelta:
    return timedelta(seconds=float(settings.VERITY_JOB_STALE_SECONDS))


def last_sign_of_life(job: Job) -> datetime | None:
    """When the job's worker last wrote its heartbeat (or started it)."""
    progress = read_progress(job.key)
    if progress and progress.get("at"):
        beat = datetime.fromtimestamp(progress["at"], tz=timezone.get_current_timezone())
        return max(beat, job.started_at) if job.started_at else beat
    return job.started_at


def backend_says_dead(job: Job) -> bool:
    """The task queue knows the process running this job died: its task failed while the
    job still reads running (``run_job`` records every failure it lives to see). RQ says
    so within seconds when a job's work horse is killed (the worker moves the job to its
    failed registry); django-tasks-db never does (its row stays RUNNING), so there only
    the heartbeat tells."""
    if job.state != JobState.RUNNING or not job.task_id or not uses_rq():
        return False
    try:
        from django_tasks import task_backends
        from django_tasks.base import TaskResultStatus

        status = task_backends["default"].get_result(job.task_id).status
    except Exception:  # no such task, or Redis unreachable: no word from the backend
        return False
    return bool(status == TaskResultStatus.FAILED)


def is_stale(job: Job, now: datetime | None = None) -> bool:
    """A running job whose worker died: the task queue says so (RQ), or its heartbeat has
    been silent for longer than the stale limit."""
    if job.state != JobState.RUNNING:
        return False
    seen = last_sign_of_life(job)
    if seen is not None and (now or timezone.now()) - seen > stale_after():
        return True
    return backend_says_dead(job)


def fail_stale_jobs(now: datetime | None = None) -> list[Job]:
    """Fail every running job whose worker died; return them. Run by each worker when it
    starts and before each job, and by ``manage.py jobs --fail-stale``. Their task rows
    in django-tasks-db, left RUNNING by the dead worker, are marked failed too."""
    now = now or timezone.now()
    running = Job.objects.filter(state=JobState.RUNNING)
    if not uses_rq():  # only the heartbeat tells: a job younger than the limit is alive
        running = running.filter(started_at__lt=now - stale_after())
    failed = []
    for job in running:
        if is_stale(job, now) and fail_job(job, stale_message(job), expect=[JobState.RUNNING]):
            failed.append(job)
    abandon_task_rows([job.task_id for job in failed])
    return failed


def abandon_task_rows(task_ids: Sequence[str]) -> int:
    """Mark django-tasks-db's rows of these tasks failed where a dead worker left them
    RUNNING (nothing will ever end them); return how many. RQ cleans its own registries."""
    ids = [t for t in task_ids if t]
    if not ids or uses_rq():
        return 0
    from django_tasks.base import TaskResultStatus
    from django_tasks_db.models import DBTaskResult

    return DBTaskResult.objects.filter(id__in=ids, status=TaskResultStatus.RUNNING).update(
        status=TaskResultStatus.FAILED,
        finished_at=timezone.now(),
        exception_class_path="jobs.services.WorkerDied",
        traceback="The worker running this task stopped answering (killed, or its machine "
        "went down); Verity's sweep (jobs.services.fail_stale_jobs) marked it failed.",
    )


def stale_message(job: Job) -> str:
    where = f" on {job.worker.split(':')[0]}" if job.worker else ""
    return STALE_MESSAGE.format(where=where, pk=job.pk)


def cancelled_message(by: Any, via: str) -> str:
    who = f"by {by.get_username()}" if by is not None else "from the command line"
    if via == "api" and by is not None:
        who += " (API)"
    return f"Cancelled {who}. Nothing of it was stored."


def cancel_job(job: Job, *, by: Any = None, via: str = "page") -> Job:
    """Cancel a queued or running job; ``by`` (a user, or None for the command line) is
    recorded. A queued job is cancelled at once. A running one is asked to stop: its
    worker rolls its transaction back at its next progress report, or when it would
    finish, and records the cancel (``record_cancelled``); nothing half-done is stored.
    A running job whose worker died is cancelled at once. Refused (``JobStateError``)
    for a job that has ended. The audit log's ``job.cancel`` row is written with the
    cancel itself: here, or by the worker for a running job."""
    user = by if getattr(by, "is_authenticated", False) else None
    now = timezone.now()
    fields = {
        "state": JobState.CANCELLED,
        "cancelled_by": user,
        "cancelled_at": now,
        "finished_at": now,
        "error": cancelled_message(user, via),
    }
    # Read first, write only a queued (or dead) job's row: on SQLite a running import
    # holds the one write lock, and even an UPDATE that matches nothing would wait for it.
    job.refresh_from_db()
    if job.state == JobState.QUEUED and _cancel_now(job, JobState.QUEUED, fields, via):
        end_job(job)
    elif job.state == JobState.RUNNING and is_stale(job):
        if _cancel_now(job, JobState.RUNNING, fields, via):
            abandon_task_rows([job.task_id])
            end_job(job)
    else:
        job.refresh_from_db()
        if job.state != JobState.RUNNING:
            raise JobStateError(
                f"job {job.pk} is {job.state}; only a queued or running job can be cancelled"
            )
        request_cancel(job.key, by=user.pk if user else None, via=via)
    job.refresh_from_db()
    return job


def _cancel_now(job: Job, state: str, fields: dict[str, Any], via: str) -> bool:
    """Cancel ``job`` if it is still in ``state``, with its audit row, in one transaction."""
    with transaction.atomic():
        if not Job.objects.filter(pk=job.pk, state=state).update(**fields):
            return False
        _audit_cancel(job, fields["cancelled_by"], via)
    return True


def _audit_cancel(job: Job, user: Any, via: str) -> None:
    record(
        "job.cancel",
        actor=user,
        collection=job.collection,
        target=f"job {job.pk}",
        detail={"kind": job.kind, "label": job.label, "via": via},
    )


def record_cancelled(job: Job, request: dict[str, Any]) -> bool:
    """The worker's side of a cancel: its transaction was rolled back; mark the job
    cancelled by whoever asked, and tidy up its input. A running job's cancel is audited
    here, when it happens (a job that finished before it saw the request was not
    cancelled), and not in the request: on SQLite the running job holds the one write
    lock, so the request writes nothing."""
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.filter(pk=request.get("by")).first()
    now = timezone.now()
    with transaction.atomic():
        updated = Job.objects.filter(pk=job.pk, state=JobState.RUNNING).update(
            state=JobState.CANCELLED,
            cancelled_by=user,
            cancelled_at=now,
            finished_at=now,
            error=cancelled_message(user, request.get("via", "")),
        )
        if updated:
            _audit_cancel(job, user, request.get("via", ""))
    if updated:
        job.state = JobState.CANCELLED
    end_job(job)
    return bool(updated)


def end_job(job: Job) -> None:
    """Tidy up after a job that needs no retry: its input file and progress entry go."""
    files.discard_input(job)
    forget_progress(job.key)


def retry_job(job: Job, *, by: Any = None) -> Job:
    """Start a failed job (or one whose worker died) again, as a new job with the same
    parameters and the same input file. Refused for a job that is queued, running
    normally or done, or whose input is gone."""
    if is_stale(job):
        if fail_job(job, stale_message(job), expect=[JobState.RUNNING]):
            abandon_task_rows([job.task_id])
        job.refresh_from_db()
    if job.state != JobState.FAILED:
        raise JobStateError(f"job {job.pk} is {job.state}; only a failed job can be started again")
    again = job.retries.order_by("pk").first()
    if again is not None:
        raise JobStateError(
            f"job {job.pk} was already started again, as job {again.pk} (its input went with "
            f"it); follow that one, and retry it if it failed"
        )
    if job.params.get("input") and not files.has_input(job):
        raise JobStateError(
            f"job {job.pk}'s input file is gone (it is removed when a job ends); upload it again"
        )
    task = import_string(job.task_path)
    with transaction.atomic():
        new = Job.objects.create(
            kind=job.kind,
            label=job.label,
            collection=job.collection,
            created_by=by if getattr(by, "is_authenticated", False) else job.created_by,
            params={k: v for k, v in job.params.items() if k != "input"},
            task_path=job.task_path,
            retry_of=job,
        )
        moved = files.move_input(job, new)
        if moved:
            new.params["input"] = moved
            new.save(update_fields=["params"])
        record(
            "job.retry",
            actor=by if getattr(by, "is_authenticated", False) else None,
            collection=job.collection,
            target=f"job {job.pk}",
            detail={"kind": job.kind, "label": job.label, "new_job": new.pk},
        )
        transaction.on_commit(lambda: _enqueue(new, task))
    return new
