"""Freeze a collection's labels as its next numbered, content-hashed snapshot.

manage.py freeze_snapshot SLUG [--note TEXT] [--by USERNAME]
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from jobs.progress import command_progress
from judgments.management.arguments import collection_named, user_named
from judgments.services import VerityError, freeze_snapshot
from judgments.wording import counted


class Command(BaseCommand):
    help = "Freeze the collection's judgments, query statuses and unjudged markers as vN+1."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--note", default="", help="why this version was frozen")
        parser.add_argument("--by", metavar="USERNAME", help="record this user as its author")

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_named(options["slug"])
        by = user_named(options["by"])
        started = time.perf_counter()
        try:
            snapshot, created = freeze_snapshot(
                collection=collection,
                by=by,
                note=options["note"],
                progress=command_progress(self),
            )
        except VerityError as exc:
            raise CommandError(str(exc)) from None
        took = time.perf_counter() - started
        if not created:
            self.stdout.write(
                f"Nothing changed since v{snapshot.number} of '{collection.slug}' "
                f"(sha256:{snapshot.content_hash}); no new snapshot made."
            )
            return
        self.stdout.write(
            f"Froze '{collection.slug}' v{snapshot.number} in {took:.1f} s: "
            f"{counted(snapshot.n_judgments, 'judgment')}, {counted(snapshot.n_queries, 'query')}, "
            f"{snapshot.unjudged_summary}.\nsha256:{snapshot.content_hash}"
            + (f"\nLabels: {snapshot.label_sources}." if snapshot.model_labels else "")
        )
