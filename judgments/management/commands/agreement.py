"""Agreement between a collection's assessors.

    manage.py agreement SLUG [--snapshot N] [--json]

Krippendorff's alpha (ordinal and nominal) over all assessors and per query, Cohen's
kappa (plain and quadratic-weighted), raw agreement and shared units for every pair of
assessors, the confusion of grades, and each assessor against the resolved labels
(``judgments/agreement.py``). A figure with too little overlap is undefined, with why.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from judgments.management.arguments import collection_and_snapshot
from judgments.selectors import agreement_report


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


class Command(BaseCommand):
    help = "Agreement between a collection's assessors (alpha, kappa, raw agreement)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the collection")
        parser.add_argument(
            "--snapshot", metavar="N", type=int, help="the assessments frozen in snapshot vN"
        )
        parser.add_argument("--json", action="store_true", help="print the figures as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        collection, snapshot = collection_and_snapshot(options["slug"], options["snapshot"])
        report = agreement_report(collection, snapshot)
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2, sort_keys=True))
            return
        where = f"snapshot v{snapshot.number}" if snapshot else "current assessments"
        self.stdout.write(
            f"{collection.slug}, {where}: {len(report['assessors'])} assessors, "
            f"{report['units']} units graded by two or more"
        )
        alpha = report["alpha"]
        self.stdout.write(
            f"alpha ordinal {_fmt(alpha['ordinal'])}, nominal {_fmt(alpha['nominal'])}"
        )
        for level, why in alpha.get("undefined", {}).items():
            self.stdout.write(f"  {level} undefined: {why}")
        for p in report["pairs"]:
            line = (
                f"{p['a']} / {p['b']}: {p['n']} shared, kappa {_fmt(p['kappa'])}, "
                f"quadratic {_fmt(p['kappa_quadratic'])}, agreement {_fmt(p['agreement'])}"
            )
            self.stdout.write(line + (f" ({p['undefined']})" if "undefined" in p else ""))
