"""Store a unit mapping (``fine<TAB>coarse`` per line) as the collection's next version.

manage.py import_mapping SLUG FILE [--from chunk] [--to document] [--note TEXT]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judgments.models import Collection, LabelingUnit
from judgments.selectors import collection_by_slug
from scoring.services import RunImportError, import_unit_mapping


class Command(BaseCommand):
    help = "Import a fine → coarse id mapping (e.g. chunk → document) as version N+1."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--from", dest="from_unit", default="chunk", choices=LabelingUnit.values
        )
        parser.add_argument("--to", dest="to_unit", default="document", choices=LabelingUnit.values)
        parser.add_argument("--note", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            collection = collection_by_slug(options["slug"])
            mapping, created = import_unit_mapping(
                collection=collection,
                path=path,
                from_unit=options["from_unit"],
                to_unit=options["to_unit"],
                note=options["note"],
            )
        except Collection.DoesNotExist as exc:
            raise CommandError(str(exc)) from None
        except RunImportError as exc:
            raise CommandError("\n".join([str(exc), *exc.errors[:25]])) from None
        if created:
            self.stdout.write(
                f"Stored unit mapping v{mapping.number} of '{collection.slug}': "
                f"{mapping.n_entries} {mapping.from_unit} → {mapping.to_unit} ids "
                f"(sha256:{mapping.content_hash[:12]})."
            )
        else:
            self.stdout.write(f"Same content as unit mapping v{mapping.number}; nothing stored.")
