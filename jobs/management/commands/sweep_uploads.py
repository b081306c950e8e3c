"""``manage.py sweep_uploads``: remove stale temporary uploads (see ``jobs.uploads``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from jobs.uploads import sweep_uploads


class Command(BaseCommand):
    help = (
        "Remove files left in the upload folder (FILE_UPLOAD_TEMP_DIR) by uploads that "
        "never finished, e.g. a worker killed mid-upload. Younger files may be uploads in "
        "progress and are kept."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=int,
            default=None,
            metavar="SECONDS",
            help="Age from which a file is stale (default: VERITY_UPLOAD_STALE_SECONDS, "
            f"now {settings.VERITY_UPLOAD_STALE_SECONDS}).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        swept = sweep_uploads(older_than=options["older_than"])
        self.stdout.write(
            f"{settings.FILE_UPLOAD_TEMP_DIR}: removed {swept.removed} stale upload(s) "
            f"({swept.bytes:,} bytes); kept {swept.kept} younger one(s)"
        )
