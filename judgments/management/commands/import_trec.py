"""Create a collection from standard TREC files in one command.

    manage.py import_trec SLUG --qrels FILE --topics FILE [--docs FILE [--all-docs]]
        [--scale "0:not relevant,1:related,2:highly relevant,3:perfectly relevant"]
        [--relevant-grade N] [--status from-qrels|unreviewed] [--name NAME]
        [--unit document|chunk|evidence] [--pool-depth N] [--by USERNAME]

Qrels ``qid 0|Q0 docid grade`` (grade -1: pooled but unjudged), topics ``qid<TAB>text``
or ``qid text``, CRLF or LF; docs as TSV (``id<TAB>text``, ``id<TAB>title<TAB>text`` or
``id<TAB>url<TAB>title<TAB>text``) or JSON Lines (``{"id"|"_id"|"docid": …, "text": …}``).
Items are the documents the qrels name: their text comes from ``--docs`` when it holds
them (the rest of a corpus file is skipped, unless ``--all-docs``), else they are
placeholders whose text can be imported later. ``--status from-qrels`` (the default)
marks a query ``relevant`` when it has a judgment at the relevant grade; the others stay
unreviewed, counted. All or nothing, like ``import_collection``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judgments import formats
from judgments.management.arguments import file_bytes, user_named
from judgments.models import Collection, LabelingUnit
from judgments.services import ImportReport, VerityError, import_collection_data

STATUS_RULES = ("from-qrels", "unreviewed")


class Command(BaseCommand):
    help = "Create a collection from TREC qrels and topics (and optionally the documents)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="the new collection's slug, e.g. dl19-passage")
        parser.add_argument("--qrels", required=True, metavar="FILE", help="TREC qrels")
        parser.add_argument(
            "--topics", required=True, metavar="FILE", help="topics: qid<TAB>text per line"
        )
        parser.add_argument(
            "--docs", metavar="FILE", help="documents: TSV (id<TAB>text …) or JSON Lines"
        )
        parser.add_argument(
            "--all-docs",
            action="store_true",
            help="import every document of --docs, not only those the qrels name",
        )
        parser.add_argument(
            "--scale",
            help='grades and names, e.g. "0:not relevant,1:related,2:highly relevant,'
            '3:perfectly relevant" (default: the grades the qrels use, named by number)',
        )
        parser.add_argument(
            "--relevant-grade",
            type=int,
            help="lowest grade that counts as relevant (default 1; TREC DL uses 2)",
        )
        parser.add_argument(
            "--status",
            choices=STATUS_RULES,
            default="from-qrels",
            help="from-qrels: queries with a judgment at the relevant grade are marked "
            "relevant (default); unreviewed: every query is left for review",
        )
        parser.add_argument("--name", help="the collection's name (default: the slug)")
        parser.add_argument("--description", default="", help="the corpus boundary")
        parser.add_argument("--unit", choices=LabelingUnit.values, default=LabelingUnit.DOCUMENT)
        parser.add_argument("--pool-depth", type=int, default=10)
        parser.add_argument("--by", metavar="USERNAME", help="record this user as the importer")
        parser.add_argument(
            "--assessor",
            metavar="NAME",
            help="the qrels are this assessor's assessments (several assessors per item): "
            "each pair's label is resolved by the collection's policy",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()
        with ExitStack() as stack:
            docs = None
            if options["docs"]:
                try:
                    docs = (stack.enter_context(Path(options["docs"]).open("rb")), options["docs"])
                except OSError as e:
                    raise CommandError(
                        f"{options['docs']}: cannot read it ({e.strerror})"
                    ) from None
            bundle, problems, skipped = formats.read_trec_set(
                qrels=(file_bytes(options["qrels"]), options["qrels"]),
                topics=(file_bytes(options["topics"]), options["topics"]),
                docs=docs,
                all_docs=options["all_docs"],
            )
        if problems:
            raise CommandError(formats.describe_problems(problems))
        if options["assessor"]:
            bundle.credit_to(options["assessor"])
        bundle.collection = self._collection(bundle, options)
        if Collection.objects.filter(slug=options["slug"]).exists():
            # The shared refusal says "drop --create", an option this command lacks.
            raise CommandError(
                f"collection '{options['slug']}' exists already, and import_trec makes a new "
                "one: choose another slug, or add these qrels to it with "
                f"'manage.py import_collection --collection {options['slug']} --qrels "
                f"{options['qrels']}' (with --assessor NAME for one assessor's labels)"
            )
        try:
            report = import_collection_data(
                data=bundle,
                create=True,
                create_missing_items=True,
                set_status=options["status"] == "from-qrels",
                by=user_named(options["by"]),
                progress=self.stderr.write if len(bundle.judgments) >= 5000 else None,
            )
        except VerityError as e:
            raise CommandError(str(e)) from None
        self._summarise(report, bundle, options, skipped, time.monotonic() - started)

    def _collection(
        self, bundle: formats.Bundle, options: dict[str, Any]
    ) -> formats.CollectionRecord:
        if options["scale"]:
            try:
                scale = formats.parse_scale_option(options["scale"])
            except ValueError as e:
                raise CommandError(f"--scale: {e}") from None
        else:
            scale = formats.scale_from_grades(bundle)
        relevant = options["relevant_grade"] if options["relevant_grade"] is not None else 1
        return formats.CollectionRecord(
            where=formats.Where("command line"),
            slug=options["slug"],
            name=options["name"] or options["slug"],
            scale=scale,
            relevant_grade=relevant,
            unit=options["unit"],
            description=options["description"],
            pool_depth=options["pool_depth"],
        )

    def _summarise(
        self,
        r: ImportReport,
        bundle: formats.Bundle,
        options: dict[str, Any],
        skipped: int,
        seconds: float,
    ) -> None:
        c = r.collection
        grades: dict[str, list[int]] = defaultdict(list)
        for j in bundle.judgments:
            grades[j.query].append(j.grade)
        relevant = sum(1 for g in grades.values() if max(g) >= c.relevant_grade)
        non_relevant = len(grades) - relevant
        unjudged = r.queries_created - len(grades)
        marked = r.statuses_set.get("relevant", 0)
        docs = ""
        if options["docs"]:
            docs = f" ({skipped} documents of {options['docs']} skipped: no qrels line names them)"
        lines = [
            f"Created collection '{c.slug}' in {seconds:.1f} s: scale "
            + ", ".join(f"{g['grade']} {g['name']}" for g in c.scale)
            + f"; relevant from grade {c.relevant_grade}.",
            f"  queries: {r.queries_created} ({len(grades)} with judgments)",
            f"  items: {r.items_created} with text, {r.placeholders_created} placeholders "
            f"(ids only; import their text later with import_collection --items){docs}",
            f"  judgments: {r.judgments_created}; unjudged pairs queued: {r.unjudged_pairs}"
            + (
                f"; assessments by {options['assessor']}: {r.assessments_created}"
                if options["assessor"]
                else ""
            ),
            f"  statuses ({options['status']}): {marked} queries marked relevant; left "
            f"unreviewed: {relevant - marked} with a relevant judgment, {non_relevant} judged "
            f"non-relevant only, {unjudged} without judgments",
            "Next:",
            f"  manage.py freeze_snapshot {c.slug} --note 'TREC qrels'",
            f"  manage.py export_qrels {c.slug} --snapshot 1 > qrels.check  # the same lines",
            f"  manage.py import_run {c.slug} RUN_FILE --name NAME",
            f"  manage.py score {c.slug} NAME --snapshot 1 --k 10",
        ]
        if non_relevant:
            lines.insert(
                5,
                f"  {non_relevant} judged queries have no relevant item: review them (the "
                "queue's end-of-query prompt, or the bulk action on the collection page) to "
                "mark them 'confirmed no answer' if the corpus holds none",
            )
        self.stdout.write("\n".join(lines))
