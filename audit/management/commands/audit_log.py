"""``manage.py audit_log``: print the audit log as JSON Lines, or prune it.

    manage.py audit_log --since 2026-11-01 --collection handbook > handbook.jsonl
    manage.py audit_log --action token --actor alice
    manage.py audit_log --prune            # rows older than VERITY_AUDIT_RETENTION_DAYS
    manage.py audit_log --prune --days 365

Rows are printed oldest first, one JSON object a line (the fields of the page's export).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from audit.selectors import audit_events, jsonl_lines
from audit.services import prune


def _moment(text: str) -> date | datetime:
    """A day (2026-11-01) or a moment (2026-11-01T12:00, UTC unless it says otherwise)."""
    try:
        if "T" not in text and " " not in text.strip():
            return date.fromisoformat(text)
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CommandError(
            f"{text!r} is not a date: give YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][+HH:MM]"
        ) from None
    return moment if timezone.is_aware(moment) else moment.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = "Print the audit log as JSON Lines (oldest first), or --prune it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", help="from this day (YYYY-MM-DD) or moment, included")
        parser.add_argument("--until", help="to this day (YYYY-MM-DD), included")
        parser.add_argument("--collection", help="one collection's rows, by its slug")
        parser.add_argument("--action", help="an action (token.revoke) or a family (token)")
        parser.add_argument("--actor", help="a username, or 'system'")
        parser.add_argument(
            "--prune",
            action="store_true",
            help="delete rows older than the retention (VERITY_AUDIT_RETENTION_DAYS) instead",
        )
        parser.add_argument(
            "--days", type=int, help="with --prune: keep this many days instead of the setting"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["prune"]:
            self._prune(options["days"])
            return
        if options["days"] is not None:
            raise CommandError("--days goes with --prune")
        until = _moment(options["until"]) if options["until"] else None
        if isinstance(until, datetime):
            raise CommandError("--until takes a day (YYYY-MM-DD), which is included")
        rows = audit_events(
            collection_slug=options["collection"] or "",
            action=options["action"] or "",
            actor=options["actor"] or "",
            since=_moment(options["since"]) if options["since"] else None,
            until=until,
        ).order_by("at", "id")
        for line in jsonl_lines(rows):
            self.stdout.write(line, ending="")

    def _prune(self, days: int | None) -> None:
        if days is not None and days < 1:
            raise CommandError("--days is at least 1 (0 would delete the whole log)")
        keep = settings.VERITY_AUDIT_RETENTION_DAYS if days is None else days
        if not keep:
            self.stderr.write(
                "VERITY_AUDIT_RETENTION_DAYS is 0: the log is kept for ever, nothing pruned "
                "(set it, or pass --days N)."
            )
            return
        deleted = prune(days=keep)
        self.stderr.write(f"Pruned {deleted} audit row(s) older than {keep} days.")
