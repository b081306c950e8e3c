"""Ask a model judge to propose grades, stored as proposals (never as judgments).

manage.py propose_labels SLUG --judge NAME [--limit N] [--pairs FILE] [--include-judged]
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from jobs.progress import command_progress
from judges.models import JudgeConfig
from judges.selectors import judge_named
from judges.services import JudgeError, pairs_from_lines, propose_labels
from judgments.management.arguments import collection_named, file_bytes


class Command(BaseCommand):
    help = (
        "Ask a judge (local-baseline in every collection, or a configured one) to propose "
        "grades for the pooled unjudged pairs, or for the pairs of --pairs FILE."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--judge", required=True, metavar="NAME")
        parser.add_argument("--limit", type=int, metavar="N", help="ask about N pairs at most")
        parser.add_argument(
            "--pairs", metavar="FILE", help="one 'QUERY_ID ITEM_ID' per line instead of the pool"
        )
        parser.add_argument(
            "--include-judged",
            action="store_true",
            help="also the pairs people judged, so that the calibration report has pairs",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_named(options["slug"])
        if options["limit"] is not None and options["limit"] < 1:
            raise CommandError("--limit must be a positive number of pairs")
        try:
            judge = judge_named(collection, options["judge"])
            pairs = None
            if options["pairs"]:
                text = file_bytes(options["pairs"]).decode("utf-8", errors="replace")
                pairs = pairs_from_lines(collection, text, options["pairs"])
            started = time.perf_counter()
            asked, stored = propose_labels(
                collection=collection,
                judge=judge,
                pairs=pairs,
                include_judged=options["include_judged"],
                limit=options["limit"],
                progress=command_progress(self),
            )
        except (JudgeError, JudgeConfig.DoesNotExist) as exc:
            raise CommandError(str(exc)) from None
        took = time.perf_counter() - started
        if asked.all_failed:
            # Exit non-zero: a script chaining this must not go on as if it had labels.
            raise CommandError(
                f"{asked.summary(len(stored))} ({took:.1f} s). The failed proposals are kept "
                "with their reasons; fix the judge or its server, then run again."
            )
        self.stdout.write(f"{asked.summary(len(stored))} ({took:.1f} s)")
