"""Compare two runs (or one run on two snapshots) query by query, with paired statistics.

    manage.py compare_runs SLUG RUN_A RUN_B [--snapshot N] [--snapshot-b M] [--stage S]
                           [--k 5,10] [--rel-level N] [--unjudged nonrel|judged-only|bounds]
                           [--mapping N] [--seed N] [--json | --csv]
    manage.py compare_runs SLUG --evaluations A B [--seed N] [--json | --csv]

With run names, both are scored first exactly as ``score`` would (the same inputs return
the stored evaluation), with one set of parameters; ``--snapshot-b`` scores b on another
snapshot, which is allowed only for one run (RUN_A = RUN_B): the difference is then the
label changes, which are listed. Anything not comparable is refused with every reason.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

import verity_eval as engine
from judgments.models import Collection, Snapshot
from judgments.selectors import collection_by_slug, snapshot_of
from judgments.services import VerityError
from scoring import comparison
from scoring.models import Evaluation, Run, RunStage, UnitMapping
from scoring.reports import (
    ComparisonRefused,
    compare_evaluations,
    comparison_csv,
    fmt_diff,
    fmt_number,
    fmt_p,
)
from scoring.selectors import (
    ScoringInputError,
    evaluation_in,
    refuse_cli_parameters,
    run_by_name,
    stage_of,
)
from scoring.services import score_run_stage
from verity_eval.params import parse_ks


class Command(BaseCommand):
    help = "Paired comparison of two runs' per-query scores (a - b), with the reasons if refused."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("runs", nargs="*", metavar="RUN", help="RUN_A RUN_B (run names)")
        parser.add_argument(
            "--evaluations", nargs=2, type=int, metavar=("A", "B"), help="compare stored ids"
        )
        parser.add_argument("--snapshot", type=int, metavar="N", help="default: the latest")
        parser.add_argument(
            "--snapshot-b", type=int, metavar="M", help="score b on this snapshot (same run only)"
        )
        parser.add_argument("--stage", help="required when the runs have several stages")
        parser.add_argument("--k", type=parse_ks, default=(5, 10), help="cutoffs, e.g. 5,10")
        parser.add_argument("--rel-level", type=int, help="default: the snapshot's")
        parser.add_argument(
            "--unjudged", choices=("nonrel", "judged-only", "bounds"), default="nonrel"
        )
        parser.add_argument("--mapping", type=int, metavar="N", help="unit mapping version")
        parser.add_argument(
            "--seed",
            type=int,
            default=comparison.DEFAULT_SEED,
            help=f"seed of the resampling (default {comparison.DEFAULT_SEED})",
        )
        out = parser.add_mutually_exclusive_group()
        out.add_argument("--json", action="store_true", help="print the comparison as JSON")
        out.add_argument("--csv", action="store_true", help="print one CSV row per measure")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            collection = collection_by_slug(options["slug"])
            a, b = self._evaluations(collection, options)
            result = compare_evaluations(a, b, seed=options["seed"])
        except ComparisonRefused as exc:
            reasons = "\n".join(f"  - {r}" for r in exc.reasons)
            raise CommandError(f"these evaluations cannot be compared:\n{reasons}") from None
        except (
            Collection.DoesNotExist,
            Snapshot.DoesNotExist,
            Run.DoesNotExist,
            RunStage.DoesNotExist,
            engine.EngineError,
            VerityError,
        ) as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps(result, indent=2, ensure_ascii=False))
        elif options["csv"]:
            self.stdout.write(comparison_csv(result), ending="")
        else:
            self._print(result)

    def _evaluations(
        self, collection: Collection, options: dict[str, Any]
    ) -> tuple[Evaluation, Evaluation]:
        if options["evaluations"]:
            if options["runs"]:
                raise CommandError("give either RUN_A RUN_B or --evaluations A B, not both")
            ids = options["evaluations"]
            try:
                return evaluation_in(collection, ids[0]), evaluation_in(collection, ids[1])
            except Evaluation.DoesNotExist:
                raise CommandError(
                    f"'{collection.slug}' has no evaluation {ids[0]} or {ids[1]}"
                ) from None
        if len(options["runs"]) != 2:
            raise CommandError("name two runs (RUN_A RUN_B), or pass --evaluations A B")
        name_a, name_b = options["runs"]
        snapshot_a = snapshot_of(collection, options["snapshot"])
        snapshot_b = snapshot_a
        if options["snapshot_b"] is not None:
            if name_a != name_b:
                raise CommandError(
                    "--snapshot-b compares one run on two snapshots: give the same run twice"
                )
            snapshot_b = snapshot_of(collection, options["snapshot_b"])
        mapping = None
        if options["mapping"] is not None:
            mapping = UnitMapping.objects.filter(
                collection=collection, number=options["mapping"]
            ).first()
            if mapping is None:
                raise CommandError(f"'{collection.slug}' has no unit mapping v{options['mapping']}")
        for snapshot in {snapshot_a, snapshot_b}:
            try:
                refuse_cli_parameters(snapshot, ks=options["k"], rel_level=options["rel_level"])
            except ScoringInputError as exc:
                raise CommandError(str(exc)) from None
        scored = []
        for name, snapshot in ((name_a, snapshot_a), (name_b, snapshot_b)):
            run = run_by_name(collection, name)
            params = engine.EvalParams(
                ks=options["k"],
                rel_level=options["rel_level"]
                if options["rel_level"] is not None
                else snapshot.relevant_grade,
                unjudged=options["unjudged"],
            )
            evaluation, _ = score_run_stage(
                run=run,
                stage=stage_of(run, options["stage"]),
                snapshot=snapshot,
                params=params,
                mapping=mapping,
            )
            scored.append(evaluation)
        return scored[0], scored[1]

    def _print(self, r: dict[str, Any]) -> None:
        w = self.stdout.write
        a, b = r["a"], r["b"]
        w(f"a: evaluation {a['id']}, run {a['run']} / {a['stage']} on snapshot v{a['snapshot']}")
        w(f"b: evaluation {b['id']}, run {b['run']} / {b['stage']} on snapshot v{b['snapshot']}")
        w(
            f"cutoffs {', '.join(map(str, a['ks']))}; threshold ≥ {a['rel_level']}; unjudged "
            f"{a['unjudged']}; mapping " + (f"v{a['mapping']}" if a["mapping"] else "none")
        )
        q = r["queries"]
        w(
            f"paired queries: {q['paired']} (a - b per query)"
            + (f"; only in a: {len(q['only_a'])}" if q["only_a"] else "")
            + (f"; only in b: {len(q['only_b'])}" if q["only_b"] else "")
        )
        w(f"interval: {r['methods']['interval']}")
        w(f"p: {r['methods']['test']}; p(Holm): {r['methods']['adjustment']}")
        w("")
        head = (
            f"{'measure':<16}{'n':>4}{'mean a':>10}{'mean b':>10}{'a - b':>12}"
            f"{'95% interval':>28}{'p':>9}{'p(Holm)':>9}{'p(t)':>9}{'d_z':>8}  w/t/l"
        )
        w(head)
        for e in r["measures"]:
            m = e["measure"]
            ci = (
                f"[{fmt_diff(m, e['ci_low'])}, {fmt_diff(m, e['ci_high'])}]"
                if e["ci_low"] is not None
                else "undefined"
            )
            d_z = "undef." if e["d_z"] is None else f"{e['d_z']:.3f}"
            w(
                f"{e['key']:<16}{e['n']:>4}{fmt_number(m, e['mean_a']):>10}"
                f"{fmt_number(m, e['mean_b']):>10}{fmt_diff(m, e['mean_diff']):>12}{ci:>28}"
                f"{fmt_p(e['p']):>9}{fmt_p(e['p_holm']):>9}{fmt_p(e['p_t']):>9}{d_z:>8}"
                f"  {e['wins']}/{e['ties']}/{e['losses']}"
            )
        for key, p in r["pooled"].items():
            ci = (
                f"[{fmt_diff(key, p['ci_low'])}, {fmt_diff(key, p['ci_high'])}]"
                if p["ci_low"] is not None
                else "undefined"
            )
            w(
                f"pooled {key}: a {fmt_number(key, p['pooled_a'])}, b "
                f"{fmt_number(key, p['pooled_b'])}, a - b {fmt_diff(key, p['diff'])} {ci}"
            )
        diff = r["snapshot_diff"]
        if diff is not None:
            w("")
            w(
                f"label changes v{diff['from']} → v{diff['to']}: {diff['added']['count']} added, "
                f"{diff['removed']['count']} removed, {diff['regraded']['count']} regraded, "
                f"{diff['status_changes']['count']} status changes"
            )
