"""Export a whole collection as one JSONL bundle that ``import_collection`` reads back.

    manage.py export_collection SLUG [--snapshot N] [--runs] [-o FILE]

The bundle (format in docs/BUNDLES.md) holds the collection line with every setting,
the items, the queries with their review status and evidence condition, the labels with
their reviewers, every assessment with its assessor's name, the adjudication tasks (open,
or decided: grade, who, when), the unjudged markers and, with ``--runs``, the runs (each
stage's ranked lists). Importing it into an empty database and exporting again gives the
same bytes; freezing both gives the same snapshot hash.

With ``--snapshot N`` it is what version N holds instead of the live labels: importing
that bundle and freezing gives version N's hash.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judgments.management.arguments import collection_and_snapshot
from judgments.selectors import SnapshotNotExportable, collection_bundle_lines


class Command(BaseCommand):
    help = (
        "Export a collection (or one snapshot of it) as a JSONL bundle: every setting, "
        "items, queries, labels, assessments, adjudications, unjudged markers, optionally "
        "runs. import_collection reads it back."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the collection to export")
        parser.add_argument(
            "--snapshot",
            metavar="N",
            type=int,
            help="export what frozen snapshot vN holds instead of the live labels",
        )
        parser.add_argument(
            "--runs", action="store_true", help="add the collection's runs (run, ranking lines)"
        )
        parser.add_argument(
            "-o", "--output", metavar="FILE", help="write here instead of standard output"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        collection, snapshot = collection_and_snapshot(options["slug"], options["snapshot"])
        try:
            lines = collection_bundle_lines(collection, snapshot=snapshot, runs=options["runs"])
        except SnapshotNotExportable as e:
            raise CommandError(str(e)) from None
        if not options["output"]:
            for line in lines:
                self.stdout.write(line, ending="")
            return
        n = size = 0
        with open(options["output"], "wb") as fh:
            for line in lines:
                data = line.encode("utf-8")
                fh.write(data)
                n += 1
                size += len(data)
        what = f"v{snapshot.number} of {collection.slug}" if snapshot else collection.slug
        self.stderr.write(
            f"Wrote {options['output']}: {what}, {n:,} lines, {size:,} bytes in "
            f"{time.monotonic() - started:.1f} s."
        )
