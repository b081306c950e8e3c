"""Export a collection's judgments as TREC qrels, or everything as a JSONL bundle.

    manage.py export_qrels SLUG [--snapshot N] [--format trec|jsonl] [--with-unjudged]
                                [--output FILE] [--assessor NAME]

Without ``--snapshot`` it exports the live labels; with it, a frozen snapshot, which
exports byte-identically every time. Both formats are deterministic. A live JSONL export
is a bundle that ``import_collection`` reads back (import → export → import gives
identical data). A snapshot's JSONL export is its canonical form (``judgments/
snapshots.py``): ``sha256sum`` of the file equals the snapshot's content hash.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judgments import formats
from judgments.management.arguments import collection_and_snapshot
from judgments.models import Snapshot
from judgments.selectors import (
    bundle_of,
    live_assessments,
    one_assessor,
    snapshot_canonical_lines,
    snapshot_trec_lines,
)


class Command(BaseCommand):
    help = (
        "Export a collection: TREC qrels 'qid 0 docid grade' sorted by (qid, docid), or a "
        "JSONL bundle that import_collection reads back."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the collection to export")
        parser.add_argument("--format", choices=("trec", "jsonl"), default="trec")
        parser.add_argument(
            "--with-unjudged",
            action="store_true",
            help="trec: add 'qid 0 docid -1' for open review tasks (JSONL always has them)",
        )
        parser.add_argument("--output", metavar="FILE", help="write here instead of stdout")
        parser.add_argument(
            "--assessor",
            metavar="NAME",
            help="trec: one assessor's assessments instead of the resolved labels",
        )
        parser.add_argument(
            "--snapshot",
            metavar="N",
            type=int,
            help="export frozen snapshot vN instead of the live labels",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        collection, snapshot = collection_and_snapshot(options["slug"], options["snapshot"])
        if options["assessor"] and options["format"] != "trec":
            raise CommandError("--assessor exports TREC qrels; leave out --format jsonl")
        if snapshot is not None:
            self._export_snapshot(snapshot, options)
            return
        bundle = bundle_of(collection)
        if options["assessor"]:
            try:
                rows = one_assessor(
                    live_assessments(collection), options["assessor"], f"'{collection.slug}'"
                )
            except LookupError as e:
                raise CommandError(str(e)) from None
            graded = {(q, i) for q, i, _ in rows}
            unjudged = [
                u
                for u in (bundle.unjudged if options["with_unjudged"] else [])
                if (u.query, u.item) not in graded
            ]
            judged = [
                formats.JudgmentRecord(where=formats.Where("db"), query=q, item=i, grade=g)
                for q, i, g in rows
            ]
            text = formats.dumps_trec_qrels(judged, unjudged)
        elif options["format"] == "jsonl":
            text = formats.dumps_bundle(bundle)
        else:
            unjudged = bundle.unjudged if options["with_unjudged"] else []
            labels = [j for j in bundle.judgments if j.assessor is None]  # not assessments
            text = formats.dumps_trec_qrels(labels, unjudged)
        if options["output"]:
            Path(options["output"]).write_bytes(text.encode("utf-8"))
        else:
            self.stdout.write(text, ending="")

    def _export_snapshot(self, snapshot: Snapshot, options: dict[str, Any]) -> None:
        if snapshot.model_labels:  # the qrels lines cannot say it; stderr does
            self.stderr.write(
                f"note: v{snapshot.number} labels by source: {snapshot.label_counts} "
                "(model labels accepted by the collection's policy where no person assessed)"
            )
        if options["format"] == "jsonl":
            chunks: Iterable[bytes] = snapshot_canonical_lines(snapshot)
        else:
            try:
                lines = snapshot_trec_lines(
                    snapshot, with_unjudged=options["with_unjudged"], assessor=options["assessor"]
                )
            except LookupError as e:
                raise CommandError(str(e)) from None
            chunks = (line.encode("utf-8") for line in lines)
        if options["output"]:
            with open(options["output"], "wb") as fh:
                fh.writelines(chunks)
        else:
            for chunk in chunks:
                self.stdout.write(chunk.decode("utf-8"), ending="")
