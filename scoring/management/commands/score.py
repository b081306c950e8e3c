"""Score one stage of a run against a pinned snapshot and print the report.

    manage.py score SLUG RUN [--snapshot N] [--stage S] [--k 5,10] [--measures ...]
                    [--rel-level N] [--unjudged nonrel|judged-only|bounds]
                    [--mapping N] [--json | --csv]

Without ``--snapshot`` it uses the latest snapshot and says so. There is no way to score
against live labels: freeze a snapshot first.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

import verity_eval as engine
from jobs.progress import command_progress
from judgments.models import Collection, Snapshot
from judgments.selectors import collection_by_slug, snapshot_of
from judgments.services import VerityError
from scoring.models import Run, RunStage, UnitMapping
from scoring.reports import build_report, report_csv
from scoring.selectors import (
    ScoringInputError,
    evaluation_report,
    refuse_cli_parameters,
    run_by_name,
    stage_of,
)
from scoring.services import score_run_stage
from verity_eval.params import parse_ks


def _value(v: Any) -> str:
    if v is None:
        return "undefined"
    if isinstance(v, dict):
        return f"[{_value(v.get('low'))}, {_value(v.get('high'))}]"
    return f"{v:.4f}"


class Command(BaseCommand):
    help = "Score a run stage against a snapshot (latest by default); prints the report."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("run", help="the run's name")
        parser.add_argument("--snapshot", type=int, metavar="N", help="default: the latest")
        parser.add_argument("--stage", help="required when the run has several stages")
        parser.add_argument("--k", type=parse_ks, default=(5, 10), help="cutoffs, e.g. 2,10,100")
        parser.add_argument("--measures", help="comma-separated, e.g. R,nDCG@10,AP")
        parser.add_argument(
            "--rel-level",
            type=int,
            help="lowest relevant grade (default: the snapshot's relevant grade)",
        )
        parser.add_argument(
            "--unjudged", choices=("nonrel", "judged-only", "bounds"), default="nonrel"
        )
        parser.add_argument("--mapping", type=int, metavar="N", help="unit mapping version")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument(
            "--csv",
            action="store_true",
            help="print the report as CSV rows: section, query, measure, statistic, value",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            collection = collection_by_slug(options["slug"])
            snapshot = snapshot_of(collection, options["snapshot"])
            run = run_by_name(collection, options["run"])
            stage = stage_of(run, options["stage"])
            mapping = None
            if options["mapping"] is not None:
                mapping = UnitMapping.objects.filter(
                    collection=collection, number=options["mapping"]
                ).first()
                if mapping is None:
                    have = ", ".join(
                        f"v{n}"
                        for n in collection.unit_mappings.order_by("number").values_list(
                            "number", flat=True
                        )
                    )
                    raise CommandError(
                        f"'{collection.slug}' has no unit mapping v{options['mapping']}; "
                        + (f"it has {have}" if have else "import one with manage.py import_mapping")
                    )
            refuse_cli_parameters(snapshot, ks=options["k"], rel_level=options["rel_level"])
            params = engine.EvalParams(
                ks=options["k"],
                measures=tuple(m.strip() for m in options["measures"].split(",") if m.strip())
                if options["measures"]
                else None,
                rel_level=options["rel_level"]
                if options["rel_level"] is not None
                else snapshot.relevant_grade,
                unjudged=options["unjudged"],
            )
            evaluation, created = score_run_stage(
                run=run,
                stage=stage,
                snapshot=snapshot,
                params=params,
                mapping=mapping,
                progress=command_progress(self),
            )
        except (
            Collection.DoesNotExist,
            Snapshot.DoesNotExist,
            Run.DoesNotExist,
            RunStage.DoesNotExist,
            engine.EngineError,
            ScoringInputError,
            VerityError,
        ) as exc:
            raise CommandError(str(exc)) from None
        if options["json"] or options["csv"]:
            # The same report the browser and the API show (scoring.reports).
            full = build_report(evaluation)
            if options["csv"]:
                self.stdout.write(report_csv(full), ending="")
            else:
                self.stdout.write(json.dumps(full, indent=2, ensure_ascii=False))
            return
        report = evaluation_report(evaluation)
        self._print(report, latest_default=options["snapshot"] is None, created=created)

    def _print(self, r: dict[str, Any], *, latest_default: bool, created: bool) -> None:
        w = self.stdout.write
        snap = r["snapshot"]
        which = " (the latest; pass --snapshot N to pin another)" if latest_default else ""
        w(f"evaluation {r['id']}" + ("" if created else " (same inputs as before: stored result)"))
        w(f"collection: {r['collection']['slug']} — unit: {r['collection']['unit']}")
        w(f"snapshot: v{snap['number']} sha256:{snap['content_hash'][:12]}{which}")
        w(f"labels: {snap['labels']['summary']}")
        run = r["run"]
        p = r["params"]
        w(f"run: {run['name']} stage: {r['stage']} order: {run['order']} dedup: {run['dedup']}")
        w(
            f"cutoffs: {', '.join(map(str, p['ks']))}  rel-level: {p['rel_level']}  "
            f"unjudged: {p['unjudged']}  mapping: "
            + (f"v{r['mapping']['number']}" if r["mapping"] else "none")
        )
        c = r["counts"]
        excluded = ", ".join(f"{k} {v}" for k, v in sorted(c["excluded"].items())) or "none"
        w(
            f"queries: {c['scorable']} scorable; excluded: {excluded}; "
            f"empty ranking: {c['empty_ranking']}"
        )
        if r["status"] == "undefined":
            w("status: undefined — no scorable query, so every aggregate is undefined (not 0)")
        w("aggregation: macro = mean over scorable queries; pooled = Σ hits / Σ |G| (recall)")
        w("")
        w(f"{'measure':<14}{'macro':>20}{'pooled':>20}{'n':>7}")
        notes = []
        for name, agg in r["aggregates"].items():
            pooled = _value(agg["pooled"]) if "pooled" in agg else ""
            n = agg.get("n", c["scorable"])
            mark = " *" if agg.get("n_reason") else ""
            w(f"{name:<14}{_value(agg.get('macro')):>20}{pooled:>20}{n:>7}{mark}")
            if agg.get("n_reason"):
                notes.append(f"* {name}: n = {n}, {agg['n_reason']}")
        for note in notes:
            w(note)
