"""Import a collection's items, queries and judgments: all or nothing.

    manage.py import_collection BUNDLE.jsonl [--collection SLUG]
    manage.py import_collection --collection SLUG [--create --scale ... --relevant-grade G]
        [--queries F] [--items F] [--qrels F | --judgments F] [--set-status]
        [--create-missing-items]

Any problem in any file refuses the whole import: the command lists the problems (file,
line, what is wrong, how to fix it), exits non-zero and leaves the database unchanged.
"""

from __future__ import annotations

import time
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from jobs.progress import command_progress, from_lines
from judgments import formats
from judgments.management.arguments import file_bytes
from judgments.models import LabelingUnit
from judgments.services import ImportReport, VerityError, import_collection_data


class Command(BaseCommand):
    help = (
        "Import a JSONL bundle, or topics/items/qrels/judgments into a collection. All or "
        "nothing: any problem refuses the whole import and lists file, line and fix."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("bundle", nargs="?", help="a JSONL bundle (collection line first)")
        parser.add_argument(
            "--collection",
            metavar="SLUG",
            help="the collection to import into (with a bundle: import under this slug)",
        )
        parser.add_argument(
            "--create", action="store_true", help="create the collection (needs --scale etc.)"
        )
        parser.add_argument("--name", help="with --create: the collection's name")
        parser.add_argument("--description", default="", help="with --create: corpus boundary")
        parser.add_argument(
            "--scale",
            help='with --create: grades, e.g. "0:not relevant,1:relevant,2:highly relevant"',
        )
        parser.add_argument(
            "--relevant-grade", type=int, help="with --create: lowest grade that is relevant"
        )
        parser.add_argument("--unit", choices=LabelingUnit.values, default=LabelingUnit.DOCUMENT)
        parser.add_argument("--pool-depth", type=int, default=10)
        parser.add_argument(
            "--queries", metavar="FILE", help="TREC topics (qid<TAB>text) or JSONL queries"
        )
        parser.add_argument("--items", metavar="FILE", help="JSONL item records")
        labels = parser.add_mutually_exclusive_group()
        labels.add_argument(
            "--qrels", metavar="FILE", help="TREC qrels 'qid 0 docid grade' (-1: unjudged)"
        )
        labels.add_argument(
            "--judgments", metavar="FILE", help="JSONL judgment, unjudged and status records"
        )
        parser.add_argument(
            "--set-status",
            action="store_true",
            help="mark each unreviewed query of the import with a relevant judgment 'relevant'",
        )
        parser.add_argument(
            "--create-missing-items",
            action="store_true",
            help="create items that judgments name but no one imported as placeholders",
        )
        parser.add_argument("--by", metavar="USERNAME", help="record this user as the importer")
        parser.add_argument(
            "--assessor",
            metavar="NAME",
            help="the qrels are this assessor's assessments (several assessors per item): "
            "each pair's label is resolved by the collection's policy",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        files = {k: options[k] for k in ("queries", "items", "qrels", "judgments") if options[k]}
        bundle, problems = formats.Bundle(), []
        if options["bundle"]:
            if files:
                raise CommandError(
                    "a bundle holds everything; import it alone, or leave it out and use "
                    f"{', '.join('--' + k for k in files)} with --collection"
                )
            bundle, problems = formats.parse_bundle(
                file_bytes(options["bundle"]), options["bundle"]
            )
        elif not options["collection"]:
            raise CommandError("give a BUNDLE file, or --collection SLUG with files to import")
        elif not files and not options["create"]:
            raise CommandError("nothing to import: give --queries, --items, --qrels or --judgments")
        parsers = {
            "queries": formats.parse_queries,
            "items": formats.parse_items,
            "qrels": formats.parse_qrels,
            "judgments": formats.parse_judgments,
        }
        for kind, path in files.items():
            part, part_problems = parsers[kind](file_bytes(path), path)
            bundle.absorb(part)
            problems += part_problems
        if problems:
            raise CommandError(formats.describe_problems(problems))
        if options["assessor"]:
            if options["bundle"]:
                raise CommandError(
                    "--assessor is for --qrels and --judgments files; a bundle names its "
                    'assessors with "assessor" on each judgment line'
                )
            bundle.credit_to(options["assessor"])
        if options["create"] and not options["bundle"]:
            bundle.collection = self._collection_from_options(options)
        try:
            report = import_collection_data(
                data=bundle,
                collection_slug=options["collection"],
                create=options["create"],
                create_missing_items=options["create_missing_items"],
                set_status=options["set_status"],
                by=self._user(options["by"]),
                progress=from_lines(command_progress(self)),
            )
        except VerityError as e:
            raise CommandError(str(e)) from None
        self._summarise(report, options, time.monotonic() - started)

    def _collection_from_options(self, options: dict[str, Any]) -> formats.CollectionRecord:
        if not options["scale"] or options["relevant_grade"] is None:
            raise CommandError(
                '--create needs --scale (e.g. "0:not relevant,1:relevant") and --relevant-grade'
            )
        try:
            scale = formats.parse_scale_option(options["scale"])
        except ValueError as e:
            raise CommandError(f"--scale: {e}") from None
        return formats.CollectionRecord(
            where=formats.Where("command line"),
            slug=options["collection"],
            name=options["name"] or options["collection"],
            scale=scale,
            relevant_grade=options["relevant_grade"],
            unit=options["unit"],
            description=options["description"],
            pool_depth=options["pool_depth"],
        )

    def _user(self, username: str | None) -> Any:
        if username is None:
            return None
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
        if user is None:
            raise CommandError(f"--by: no user '{username}'; create the user first")
        return user

    def _summarise(self, r: ImportReport, options: dict[str, Any], seconds: float) -> None:
        c = r.collection
        lines = [
            f"Imported into collection '{c.slug}'{' (created)' if r.collection_created else ''}"
            f" in {seconds:.1f} s.",
            f"  items: {r.items_created} created, {r.placeholders_created} placeholders "
            f"created, {r.placeholders_filled} placeholders filled in, {r.items_skipped} "
            "already there",
            f"  queries: {r.queries_created} created, {r.queries_skipped} already there"
            + (f", {r.evidence_set} evidence conditions set" if r.evidence_set else ""),
            f"  judgments: {r.judgments_created} created, {r.judgments_skipped} identical ones "
            "already there (skipped)"
            + (f"; assessments: {r.assessments_created} created" if r.assessments_created else ""),
        ]
        if r.adjudications_created or r.adjudications_skipped:
            lines.append(
                f"  adjudications: {r.adjudications_created} created, "
                f"{r.adjudications_skipped} already there"
            )
        if r.runs_created:
            lines.append(f"  runs: {r.runs_created} stored as they were (not pooled again)")
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(r.statuses_set.items()))
        lines.append(f"  statuses set: {statuses or 'none'}")
        if options["set_status"]:
            lines.append(
                f"  --set-status: queries of this import with a judgment at grade ≥ "
                f"{c.relevant_grade} are marked relevant; the others are left unreviewed"
            )
        elif r.unreviewed_with_relevant:
            lines.append(
                f"  {r.unreviewed_with_relevant} queries with a relevant judgment are left "
                "unreviewed (not scorable until reviewed); pass --set-status to mark them "
                "relevant"
            )
        lines.append(
            f"  review tasks: {r.unjudged_pairs} unjudged pairs queued ({r.tasks_created} new "
            f"tasks), {r.tasks_completed} open tasks completed by imported judgments"
        )
        self.stdout.write("\n".join(lines))
