"""List what changed between two snapshots of a collection.

    manage.py diff_snapshots SLUG A B

Judgments added, removed and regraded; query status and evidence changes; how many
unjudged markers appeared or went away.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judgments.models import Collection, Snapshot
from judgments.selectors import collection_by_slug, diff_snapshots, snapshot_of


class Command(BaseCommand):
    help = "Diff two snapshots: judgments added, removed, regraded; status changes."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("a", type=int, help="the older version number")
        parser.add_argument("b", type=int, help="the newer version number")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            collection = collection_by_slug(options["slug"])
            a = snapshot_of(collection, options["a"])
            b = snapshot_of(collection, options["b"])
        except (Collection.DoesNotExist, Snapshot.DoesNotExist) as exc:
            raise CommandError(str(exc)) from None
        d = diff_snapshots(a, b)
        w = self.stdout.write
        w(
            f"'{collection.slug}' v{a.number} (sha256:{a.content_hash[:12]}) → "
            f"v{b.number} (sha256:{b.content_hash[:12]})"
        )
        if d.is_empty:
            w("No differences.")
            return
        if d.scale_changed:
            w(
                f"scale: {a.scale} relevant ≥ {a.relevant_grade} → {b.scale} relevant ≥ "
                f"{b.relevant_grade}"
            )
        w(f"judgments added: {len(d.added)}")
        for q, i, g in d.added:
            w(f"  + {q} {i} {g}")
        w(f"judgments removed: {len(d.removed)}")
        for q, i, g in d.removed:
            w(f"  - {q} {i} {g}")
        w(f"judgments regraded: {len(d.regraded)}")
        for q, i, old, new in d.regraded:
            w(f"  ~ {q} {i} {old} → {new}")
        w(f"query status changes: {len(d.status_changes)}")
        for q, old, new in d.status_changes:
            w(f"  ~ {q} {old or '(absent)'} → {new or '(absent)'}")
        if d.evidence_changes:
            w(f"evidence condition changes: {len(d.evidence_changes)}")
            for q, old, new in d.evidence_changes:
                w(f"  ~ {q} {old} → {new}")
        w(f"unjudged markers: +{d.unjudged_added} -{d.unjudged_removed}")
