"""How far a judge's proposals agree with people's labels on the pairs both graded.

manage.py calibration SLUG --judge NAME [--json] [--resamples N] [--seed S]
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judges.models import JudgeConfig
from judges.selectors import calibration_of, judge_named
from judgments.management.arguments import collection_named


def _fmt(value: Any, interval: Any = None) -> str:
    if value is None:
        return "undefined"
    text = f"{value:.3f}"
    return f"{text} [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else text


class Command(BaseCommand):
    help = "Kappa, alpha, confusion and bias of a judge against the resolved human labels."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--judge", required=True, metavar="NAME")
        parser.add_argument("--json", action="store_true", help="the report as JSON")
        parser.add_argument("--resamples", type=int, default=None, help="bootstrap resamples")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed")

    def handle(self, *args: Any, **options: Any) -> None:
        collection = collection_named(options["slug"])
        try:
            judge = judge_named(collection, options["judge"])
        except JudgeConfig.DoesNotExist as exc:
            raise CommandError(str(exc)) from None
        report = calibration_of(
            collection, judge.name, resamples=options["resamples"], seed=options["seed"]
        )
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=1))
            return
        ci = report["interval"] or {}
        lines = [
            f"Judge {judge.name} against people in {collection.slug}: {report['pairs']} pairs",
            f"  kappa            {_fmt(report['kappa'], ci.get('kappa'))}",
            f"  kappa quadratic  {_fmt(report['kappa_quadratic'], ci.get('kappa_quadratic'))}",
            f"  alpha (ordinal)  {_fmt(report['alpha_ordinal'], ci.get('alpha_ordinal'))}",
        ]
        if ci:
            lines.append(f"  intervals: {ci['level']:.0%} bootstrap over pairs, seed {ci['seed']}")
        if report.get("reason"):
            lines.append(f"  undefined: {report['reason']}")
        if report["pairs"] < report["min_pairs"]:
            lines.append(
                "  next: let the judge propose on pairs people already judged "
                f"(manage.py propose_labels {collection.slug} --judge {judge.name} "
                "--include-judged; it never sees their grades), or have reviewers judge the "
                "proposed pairs"
            )
        bias = report["bias"]
        if bias["mean_difference"] is not None:
            lines.append(
                f"  bias: {bias['leaning']} (mean model - human {bias['mean_difference']:+.3f})"
            )
        lines.append("  confusion (rows human, columns model): " + json.dumps(report["confusion"]))
        o = report["run_orderings"]
        tau = o["kendall_tau"]
        lines.append(
            f"  runs by {o.get('measure', 'nDCG@10')} on {o.get('queries', 0)} shared queries: "
            f"people {', '.join(o.get('human_order', [])) or '-'}; "
            f"judge {', '.join(o.get('model_order', [])) or '-'}; Kendall tau-b "
            + (
                f"{tau:.3f} (p {o['p_value']:.3f})"
                if tau is not None
                else f"undefined: {o['reason']}"
            )
        )
        d = report["decisions"]
        lines.append(
            f"  in the queue: {d['accepted']} accepted, {d['overridden']} overridden"
            + (
                f" (acceptance {d['acceptance_rate']:.3f})"
                if d["acceptance_rate"] is not None
                else ""
            )
        )
        self.stdout.write("\n".join(lines))
