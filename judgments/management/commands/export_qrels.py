"""Export a collection's judgments as TREC qrels, or everything as a JSONL bundle.

    manage.py export_qrels SLUG [--format trec|jsonl] [--with-unjudged] [--output FILE]

Both formats are deterministic: the same data gives the same bytes. A JSONL export
imported into an empty database (or under another slug) and exported again is
byte-identical (apart from the slug).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judgments import formats
from judgments.models import Collection
from judgments.selectors import bundle_of


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

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["slug"]
        collection = Collection.objects.filter(slug=slug).first()
        if collection is None:
            known = ", ".join(Collection.objects.values_list("slug", flat=True)) or "none yet"
            raise CommandError(f"no collection '{slug}'; the collections are: {known}")
        bundle = bundle_of(collection)
        if options["format"] == "jsonl":
            text = formats.dumps_bundle(bundle)
        else:
            unjudged = bundle.unjudged if options["with_unjudged"] else []
            text = formats.dumps_trec_qrels(bundle.judgments, unjudged)
        if options["output"]:
            Path(options["output"]).write_bytes(text.encode("utf-8"))
        else:
            self.stdout.write(text, ending="")
