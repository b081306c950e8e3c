"""Run a job's body in a worker: start it, keep its heartbeat, record how it ended.

Task functions (``judgments/tasks.py``, ``scoring/tasks.py``) are one line each:
``return run_job(job_id, body)``. The body gets the job and its ``JobProgress``, calls
the services, and either calls ``complete(job, progress, result)`` inside the
transaction that stores what it made (so the job is done exactly when that commits) or
returns the result for the runner to record.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings

from .files import discard_output
from .models import Job, JobState
from .progress import JobCancelled, JobProgress
from .selectors import requester_may_run
from .services import (
    JobFailed,
    JobStateError,
    end_job,
    fail_job,
    fail_stale_jobs,
    finish_job,
    record_cancelled,
    requeue_job,
    start_job,
)

log = logging.getLogger(__name__)

Body = Callable[[Job, JobProgress], "dict[str, Any] | None"]

UNEXPECTED = (
    "The job stopped on an unexpected error ({error}). Nothing of it was stored. The "
    "worker's log has the details; retry it, and report the error if it happens again."
)


TIMED_OUT = (
    "The job ran longer than its worker allows (VERITY_JOB_TIMEOUT = {limit} s) and was "
    "stopped. Nothing of it was stored. If it is simply large, raise VERITY_JOB_TIMEOUT in "
    "the workers' environment and restart them, then Retry."
)


class JobTimedOut(Exception):
    """Raised in the job's thread when it outlives ``VERITY_JOB_TIMEOUT``."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``JobTimedOut`` in this thread after ``seconds`` (0: no limit). The worker
    sets it, from its own settings: the limit is the worker's, whatever the web process
    that queued the job was configured with. Needs the main thread (as db_worker and RQ's
    work horse run jobs); elsewhere there is no limit."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise JobTimedOut(f"ran longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def complete(job: Job, progress: JobProgress, result: dict[str, Any]) -> None:
    """Mark the job done with ``result``, with the progress it reached; call it inside
    the transaction that stores what the job made. A requester who lost the role the
    job needs while it ran (removed or demoted) fails it instead (``JobFailed``): that
    transaction is rolled back, and no result is handed out."""
    refused = requester_may_run(job, running=True)
    if refused:
        raise JobFailed(refused)
    finish_job(job, result, phase=progress.name, done=progress.done, total=progress.total)


def _heartbeat(progress: JobProgress, stop: threading.Event) -> None:
    interval = float(settings.VERITY_JOB_HEARTBEAT_SECONDS)
    while not stop.wait(interval):
        try:
            progress.beat()
        except Exception:  # a lost beat is retried; the job itself must go on
            log.warning("job heartbeat failed", exc_info=True)


def _worker_stop_in(exc: BaseException) -> bool:
    """True if a SystemExit or KeyboardInterrupt (the worker made to stop) is among the
    exceptions ``exc`` was raised while handling."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, SystemExit | KeyboardInterrupt):
            return True
        cause = cause.__context__
    return False


def run_job(job_id: int, body: Body) -> dict[str, Any]:
    """Run ``body`` for the queued job ``job_id`` and record its outcome; returns the
    task's (small, JSON) return value."""
    fail_stale_jobs()
    job = start_job(job_id)
    if job is None:
        log.warning("job %s is not queued any more; nothing to do", job_id)
        return {"job": job_id, "skipped": True}
    refused = requester_may_run(job)  # the role is checked now, not when it was queued
    if refused:
        fail_job(job, refused)
        end_job(job)
        return {"job": job.pk, "state": job.state}
    progress = JobProgress(job.key)
    progress.beat()
    stop = threading.Event()
    beating = threading.Thread(target=_heartbeat, args=(progress, stop), daemon=True)
    beating.start()
    try:
        with time_limit(float(settings.VERITY_JOB_TIMEOUT)):
            result = body(job, progress)
            if job.state == JobState.RUNNING:
                complete(job, progress, result or {})
        end_job(job)
    except JobTimedOut:
        # Its transaction was rolled back; the input is kept for Retry.
        discard_output(job)
        fail_job(job, TIMED_OUT.format(limit=settings.VERITY_JOB_TIMEOUT))
    except JobCancelled as exc:
        # Someone cancelled it: its transaction was rolled back, nothing is stored.
        discard_output(job)
        record_cancelled(job, exc.request)
    except JobFailed as exc:
        # The input was refused (or the requester lost the role while it ran): the same
        # input would be refused again. An output it wrote is not kept.
        discard_output(job)
        fail_job(job, str(exc), exc.errors)
        end_job(job)
    except JobStateError as exc:
        log.warning("%s", exc)
    except Exception as exc:
        if _worker_stop_in(exc):
            # The stop (SystemExit from the worker's signal handler) landed in code whose
            # clean-up raised in turn (a cache file's rename, say): still a stop.
            log.warning("worker stopped during job %s; it is queued again", job.pk)
            requeue_job(job)
            raise
        # A bug or a passing fault (the database went away): the input is kept for Retry.
        fail_job(job, UNEXPECTED.format(error=f"{type(exc).__name__}: {exc}"))
        raise
    except BaseException:  # SystemExit, KeyboardInterrupt: the worker was made to stop now
        # Nothing is wrong with the job, and its transaction was rolled back: it goes
        # back on the queue for the next worker instead of failing.
        log.warning("worker stopped during job %s; it is queued again", job.pk)
        requeue_job(job)
        raise
    finally:
        stop.set()
        beating.join()
    return {"job": job.pk, "state": job.state}
