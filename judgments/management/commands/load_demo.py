"""Load the demo: demo users, the demo handbook collection and the founding-text example.

    manage.py load_demo

Idempotent: it creates (or resets) the demo users with ``create_demo_users``, which
refuses unless DEBUG is on, then imports each bundle below with ``import_collection``
unless a collection with the bundle's slug exists already. A collection that is there
is left as it is, whatever was done to it since; delete it to load it afresh.

A collection it imports is then frozen as v1 (by ``evaluator``), and the handbook gets
the runs of ``fixtures/demo/runs/`` (two TREC runs and a three-stage pipeline, made by
``make_runs.py``) and their evaluations against v1, so that every evaluator's page has
something to show on a fresh machine. The runs add no review task (see make_runs.py).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from judgments.formats.jsonl import parse_bundle
from judgments.models import Collection, Judgment, QueryStatus, ReviewTask, TaskStatus
from judgments.services import import_collection_data, set_membership

BUNDLES = (
    ("fixtures/demo/bundle.jsonl", "regenerate it with python fixtures/demo/generate.py"),
    ("fixtures/recall-example/bundle.jsonl", "restore it with git checkout"),
)

#: Runs of the handbook: (file under fixtures/demo/runs, name, description).
DEMO_RUNS = (
    ("lexical.trec", "lexical", "Items ranked by query-word counts in their text."),
    ("titles.trec", "titles", "Items ranked by query-word counts in their titles."),
    ("pipeline.jsonl", "pipeline", "A RAG pipeline: candidates 50 → reranked 20 → context 5."),
)
#: What the demo scores against v1: (run, stage, cutoffs). The pipeline's stages at k = 5,
#: the context budget, are what its diagnosis page reads.
DEMO_SCORES = (
    ("lexical", None, (5, 10)),
    ("titles", None, (5, 10)),
    ("pipeline", "candidates", (5,)),
    ("pipeline", "reranked", (5,)),
    ("pipeline", "context", (5,)),
)
RUNS_DIR = "fixtures/demo/runs"
HANDBOOK = "demo-handbook"

# Demo users' roles in every demo collection (``admin`` is a superuser as well).
DEMO_ROLES = {"reviewer": "reviewer", "evaluator": "evaluator", "admin": "admin"}


def bundle_slug(path: Path, fix: str) -> str:
    """The slug on the bundle's first line, which must be its collection record."""
    try:
        with path.open(encoding="utf-8") as f:
            first = json.loads(f.readline())
    except FileNotFoundError:
        raise CommandError(f"{path}: the demo bundle is missing; {fix}") from None
    except (OSError, ValueError) as e:
        raise CommandError(f"{path}: cannot read its first line ({e}); {fix}") from None
    if not isinstance(first, dict) or first.get("type") != "collection" or not first.get("slug"):
        raise CommandError(f"{path}: the first line must be the collection record; {fix}")
    return str(first["slug"])


def collection_summary(collection: Collection) -> str:
    queries = collection.queries.all()
    statuses = ", ".join(
        f"{queries.filter(status=status).count()} {status}" for status in QueryStatus.values
    )
    judgments = Judgment.objects.filter(query__collection=collection).count()
    open_tasks = (
        ReviewTask.objects.filter(collection=collection).exclude(status=TaskStatus.DONE).count()
    )
    return (
        f"{collection.slug}: {collection.items.count()} items, {queries.count()} queries "
        f"({statuses}), {judgments} judgments, {open_tasks} open review tasks"
    )


class Command(BaseCommand):
    help = (
        "Create the demo users and import the demo collections (fixtures/demo, "
        "fixtures/recall-example) unless they are loaded already. DEBUG only."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        # First, so that a refusal (DEBUG off) happens before anything is imported, and
        # so that the bundles' reviewers exist when their judgments are imported.
        logins = io.StringIO()
        call_command("create_demo_users", stdout=logins)
        users = get_user_model().objects.in_bulk(list(DEMO_ROLES), field_name="username")
        slugs, fresh = [], []
        for relative, fix in BUNDLES:
            path = Path(settings.BASE_DIR) / relative
            slug = bundle_slug(path, fix)
            slugs.append(slug)
            if Collection.objects.filter(slug=slug).exists():
                self.stdout.write(f"{slug}: already loaded, left as it is ({relative}).")
                continue
            self.stdout.write(f"{slug}: importing {relative} …")
            # The collection and its members first: an import keeps a named reviewer as
            # the judgment's reviewer only when they are a member (else it is a name).
            with path.open("rb") as f:
                head, _ = parse_bundle(f.readline(), path.name)
            collection = import_collection_data(data=head).collection
            for username, role in DEMO_ROLES.items():
                set_membership(collection=collection, user=users[username], role=role)
            call_command("import_collection", str(path), stdout=self.stdout, stderr=self.stderr)
            fresh.append(slug)
        self.stdout.write("")
        for slug in slugs:
            collection = Collection.objects.get(slug=slug)
            for username, role in DEMO_ROLES.items():
                set_membership(collection=collection, user=users[username], role=role)
            if slug in fresh:
                self._evaluate(slug)
            self.stdout.write(collection_summary(collection))
        self.stdout.write("")
        self.stdout.write(logins.getvalue().rstrip("\n"))

    def _evaluate(self, slug: str) -> None:
        """v1 of a freshly loaded collection; for the handbook, its runs and their scores.
        Through the commands, as a user would (``judgments`` never imports ``scoring``)."""
        quiet = {"stdout": io.StringIO(), "stderr": io.StringIO()}
        call_command("freeze_snapshot", slug, note="the demo's labels", by="evaluator", **quiet)
        if slug != HANDBOOK:
            return
        folder = Path(settings.BASE_DIR) / RUNS_DIR
        for filename, name, description in DEMO_RUNS:
            path = folder / filename
            if not path.is_file():
                raise CommandError(f"{path}: missing; python fixtures/demo/make_runs.py makes it")
            call_command(
                "import_run",
                slug,
                str(path),
                name=name,
                description=description,
                by="evaluator",
                quiet=True,
                **quiet,
            )
        for run, stage, ks in DEMO_SCORES:
            options = {"stage": stage} if stage else {}
            call_command("score", slug, run, snapshot=1, k=ks, **options, **quiet)
        self.stdout.write(
            f"{slug}: snapshot v1, runs {', '.join(n for _, n, _ in DEMO_RUNS)} and "
            f"{len(DEMO_SCORES)} evaluations"
        )
