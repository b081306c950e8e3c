"""Store a run (TREC or multi-stage JSON Lines) and queue the unjudged items it surfaces.

manage.py import_run SLUG FILE --name NAME [--description TEXT]
                     [--order score|rank] [--dedup error|first] [--by USERNAME]
                     [--ignore-unknown-queries]
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from jobs.progress import command_progress
from judgments.formats import MAX_LISTED
from judgments.management.arguments import collection_named, user_named
from judgments.services import VerityError
from scoring.services import RunImportError, import_run


class Command(BaseCommand):
    help = "Import a run file; all-or-nothing, with line-numbered errors."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the collection the run was made against")
        parser.add_argument("file", type=Path)
        parser.add_argument("--name", required=True, help="a short unique name, e.g. bm25")
        parser.add_argument("--description", default="")
        parser.add_argument(
            "--order",
            choices=("score", "rank"),
            default="score",
            help="TREC runs: score descending with docid tie-break (trec_eval), or rank",
        )
        parser.add_argument(
            "--dedup",
            choices=("error", "first"),
            default="error",
            help="duplicate ids in one query's list: refuse (default) or keep the first",
        )
        parser.add_argument(
            "--ignore-unknown-queries",
            action="store_true",
            help="store the run without the lines whose query the collection lacks (by "
            "default they refuse the file)",
        )
        parser.add_argument(
            "--pool-strategy",
            metavar="STRATEGY",
            help="the order of this run's pooled pairs: depth, mtf, bandit, or "
            "'depth K + bandit' (default: the collection's; docs/POOLING.md)",
        )
        parser.add_argument("--by", metavar="USERNAME")
        parser.add_argument(
            "--quiet", action="store_true", help="no progress bar (there is none off a terminal)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        collection = collection_named(options["slug"])
        by = user_named(options["by"])
        started = time.perf_counter()
        try:
            report = import_run(
                collection=collection,
                path=path,
                name=options["name"],
                description=options["description"],
                order=options["order"],
                dedup=options["dedup"],
                by=by,
                progress=command_progress(self, quiet=options["quiet"]),
                ignore_unknown_queries=options["ignore_unknown_queries"],
                pool_strategy=options["pool_strategy"],
            )
        except RunImportError as exc:
            listed = exc.errors[:MAX_LISTED]
            more = len(exc.errors) - len(listed)
            lines = [str(exc), *listed] + ([f"… and {more} more"] if more > 0 else [])
            raise CommandError("\n".join(lines)) from None
        except VerityError as exc:
            raise CommandError(str(exc)) from None
        run = report.run
        w = self.stdout.write
        w(
            f"Imported run '{run.name}' into '{collection.slug}' in "
            f"{time.perf_counter() - started:.1f} s (sha256:{run.source_sha256[:12]}, "
            f"order: {run.order_rule}, dedup: {run.dedup_policy}, "
            f"{run.duplicates_dropped} duplicates dropped)."
        )
        for line in report.lines(collection):
            w(f"  {line}")
