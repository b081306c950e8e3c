"""Look at background jobs, and fail those whose worker died.

    manage.py jobs [--limit N]          # the latest jobs, newest first
    manage.py jobs --show ID            # one job as JSON, as GET /api/jobs/ID/ gives it
    manage.py jobs --fail-stale         # mark running jobs with a silent worker failed
    manage.py jobs --cancel ID          # cancel a queued or running job

Workers sweep stale jobs themselves when they start and before each job; ``--fail-stale``
is for a cron job where workers may stay down.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from jobs.models import Job
from jobs.selectors import job_status
from jobs.services import JobStateError, cancel_job, fail_stale_jobs


class Command(BaseCommand):
    help = "List background jobs, show one, or fail those whose worker died."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--limit", type=int, default=20)
        parser.add_argument("--show", type=int, metavar="ID")
        parser.add_argument("--fail-stale", action="store_true")
        parser.add_argument(
            "--cancel", type=int, metavar="ID", help="cancel a queued or running job"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["fail_stale"]:
            failed = fail_stale_jobs()
            for job in failed:
                self.stdout.write(f"job {job.pk} ({job.kind}): marked failed (worker died)")
            self.stdout.write(f"{len(failed)} stale job(s) failed.")
            return
        if options["cancel"] is not None:
            job = Job.objects.filter(pk=options["cancel"]).first()
            if job is None:
                raise CommandError(f"no job {options['cancel']}")
            try:
                job = cancel_job(job, by=None, via="command")
            except JobStateError as exc:
                raise CommandError(str(exc)) from None
            if job.state == "cancelled":
                self.stdout.write(f"job {job.pk} cancelled; nothing of it was stored.")
            else:
                self.stdout.write(f"job {job.pk}: cancel requested; its worker stops it.")
            return
        if options["show"] is not None:
            job = Job.objects.filter(pk=options["show"]).first()
            if job is None:
                raise CommandError(f"no job {options['show']}")
            self.stdout.write(json.dumps(job_status(job), indent=2))
            return
        for job in Job.objects.select_related("collection", "created_by")[: options["limit"]]:
            s = job_status(job)
            progress = f"{s['done']}/{s['total']}" if s["total"] else str(s["done"] or "")
            self.stdout.write(
                f"{s['id']:>6}  {s['state']:<8} {s['kind']:<18} {s['phase'][:30]:<30} "
                f"{progress:>20}  {s['label']}"
            )
