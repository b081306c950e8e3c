"""Run a worker for Verity's background jobs, on the queue the settings choose.

    manage.py jobs_worker [--batch] [--interval SECONDS] [--reload]

VERITY_JOBS_BACKEND=database (the default): django-tasks-db's ``db_worker`` on the
``default`` queue; any number of them, on any number of machines sharing the database
(and ``VERITY_JOB_DIR``). VERITY_JOBS_BACKEND=rq: RQ's worker (django-rq's ``rqworker``)
on Redis. Either way it first fails the jobs whose worker died (``jobs.services``), and
each job does so again before it starts.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from jobs.services import fail_stale_jobs
from jobs.uploads import sweep_uploads


def let_jobs_finish_on_sigterm() -> None:
    """A worker told to stop (SIGTERM, Ctrl-C) finishes the job it runs. pyarrow would
    instead cancel a file read in progress on that signal (``ArrowCancelled``), and so
    fail the job; its handlers are turned off in workers. A second signal still stops
    the worker at once, and ``jobs.runner`` then puts the job back on the queue."""
    try:
        import pyarrow
    except ImportError:  # pragma: no cover - pyarrow is a requirement of the engine
        return
    pyarrow.enable_signal_handlers(False)


class Command(BaseCommand):
    help = "Run a worker for background jobs (database queue or RQ, as the settings say)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", action="store_true", help="run what is queued, then exit")
        parser.add_argument(
            "--interval",
            type=float,
            default=1.0,
            help="database queue: seconds between looks at an empty queue (default 1)",
        )
        parser.add_argument(
            "--reload",
            action="store_true",
            help="database queue: restart on code changes (kills a running job: development only)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        let_jobs_finish_on_sigterm()
        sweep_uploads()  # what a killed worker left in the upload folder
        for job in fail_stale_jobs():
            self.stderr.write(f"job {job.pk} ({job.kind}): its worker had died; marked failed")
        backend = settings.VERITY_JOBS_BACKEND
        self.stdout.write(f"Verity jobs worker on the {backend} queue; Ctrl-C stops it.")
        if backend == "rq":
            call_command("rqworker", "default", burst=options["batch"], with_scheduler=False)
            return
        call_command(
            "db_worker",
            queue_name="default",
            interval=options["interval"],
            batch=options["batch"],
            reload=options["reload"],
            startup_delay=False,
            verbosity=options["verbosity"],
            stdout=self.stdout._out,
            stderr=self.stderr._out,
        )
