"""A new collection made from start files, as a background job: ``start_collection_setup``
runs in the request (the form has checked the fields), ``collection_setup_task`` in a
worker. The start files are TREC qrels and topics (and optionally the documents), read
as ``manage.py import_trec`` reads them, or a JSONL bundle, read as ``import_collection``
reads it. They travel as one zip (the job's one input, so Retry has them all), each
under its role (``qrels/``, ``topics/``, ``docs/``, ``bundle/``) and its own name, which
every refusal names with its line numbers.

The collection is created, its creator made admin, the files imported and the review
settings applied in one transaction (``set_up_collection``): a refused file leaves no
collection, and the job page lists each problem.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django_tasks import task

from jobs.files import input_path, safe_name
from jobs.models import Job, JobKind
from jobs.progress import JobProgress, from_lines
from jobs.runner import complete, run_job
from jobs.services import JobFailed, create_job

from . import formats
from .models import Collection
from .selectors import may_create_collections
from .services import REVIEW_SETTINGS, ImportRefused, VerityError, set_up_collection
from .wording import counted

TREC, BUNDLE = "trec", "bundle"
ROLES = {TREC: ("qrels", "topics", "docs"), BUNDLE: ("bundle",)}


def start_collection_setup(
    *,
    fields: dict[str, Any],
    review: dict[str, Any],
    start: str,
    uploads: dict[str, Any],
    by: Any,
    create_missing_items: bool = False,
    set_status: bool = False,
) -> Job:
    """Queue creating the collection ``fields`` describe from ``uploads`` ({role: file}).
    ``fields`` and ``review`` are the form's checked values (``set_up_collection``); TREC
    files always make placeholders and set statuses (``import_trec``'s rules), a bundle
    as its two options say (``import_collection``'s)."""
    with tempfile.TemporaryDirectory(
        prefix="verity-new-", dir=settings.FILE_UPLOAD_TEMP_DIR
    ) as folder:
        packed = Path(folder) / "start.zip"
        names = {}
        with zipfile.ZipFile(packed, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            for role in ROLES[start]:
                upload = uploads.get(role)
                if upload is None:
                    continue
                names[role] = safe_name(upload.name, role)
                upload.seek(0)
                with zf.open(f"{role}/{names[role]}", "w", force_zip64=True) as out:
                    shutil.copyfileobj(upload, out, 1 << 20)
        return create_job(
            kind=JobKind.COLLECTION_CREATE,
            task=collection_setup_task,
            label=f"Create collection {fields['slug']} from "
            + ", ".join(names[r] for r in ROLES[start] if r in names),
            by=by,
            params={
                "fields": fields,
                "review": review,
                "start": start,
                "files": names,
                "create_missing_items": start == TREC or create_missing_items,
                "set_status": start == TREC or set_status,
            },
            input_file=packed,
            input_name=f"{fields['slug']}-start.zip",
        )


def _refused(problems: list[formats.Problem]) -> JobFailed:
    first, *rest = formats.describe_problems(problems).splitlines()
    return JobFailed(first, rest)


def _bundle_disagrees(
    bundle: formats.Bundle, fields: dict[str, Any], review: dict[str, Any]
) -> list[formats.Problem]:
    """A bundle's own collection line must mean what the form says about the labels
    (unit, scale, relevant grade): its grades would mean something else otherwise. A
    bundle of several assessors per item must also have the form's review settings: its
    assessments and adjudications were made, and its labels resolved, under them (and a
    snapshot's hash holds them). Its name, slug and texts give way to the form's."""
    record = bundle.collection
    if record is None:
        return []
    problems = []
    given = {**fields, **review}
    keys = ["unit", "scale", "relevant_grade"]
    if (record.assessors_per_item or 1) > 1:
        keys += [k for k in REVIEW_SETTINGS if k in record.settings()]
    for key in keys:
        mine, theirs = given[key], getattr(record, key)
        if key == "scale":
            theirs = [
                {"grade": e.get("grade"), "name": str(e.get("name", "")).strip()} for e in theirs
            ]
        if mine != theirs:
            problems.append(
                formats.Problem(
                    record.where,
                    f"the bundle's collection has {key} {theirs!r}, the form {mine!r}: make "
                    "the form match the bundle"
                    + (
                        " (its assessments were made and resolved under its setting)"
                        if key in REVIEW_SETTINGS
                        else ""
                    ),
                )
            )
    return problems


def _read(job: Job, zf: zipfile.ZipFile, progress: JobProgress) -> tuple[formats.Bundle, int]:
    p = job.params
    names = p["files"]
    members = {role: f"{role}/{name}" for role, name in names.items()}
    progress.phase("reading the files", sum(zf.getinfo(m).file_size for m in members.values()))
    if p["start"] == TREC:
        with ExitStack() as stack:
            docs = None
            if "docs" in members:
                docs = (stack.enter_context(zf.open(members["docs"])), names["docs"])
            bundle, problems, skipped = formats.read_trec_set(
                qrels=(zf.read(members["qrels"]), names["qrels"]),
                topics=(zf.read(members["topics"]), names["topics"]),
                docs=docs,
            )
    else:
        bundle, problems = formats.parse_bundle(zf.read(members["bundle"]), names["bundle"])
        problems += _bundle_disagrees(bundle, p["fields"], p["review"])
        skipped = 0
    progress.advance(sum(zf.getinfo(m).file_size for m in members.values()))
    if problems:
        raise _refused(problems)
    return bundle, skipped


def _set_up(job: Job, progress: JobProgress) -> None:
    creator = job.created_by
    if creator is None or not may_create_collections(creator):
        raise JobFailed(
            "Not run: whoever queued this job may not create collections now "
            "(VERITY_COLLECTION_CREATORS). Nothing was created."
        )
    p = job.params
    fields = p["fields"]
    if Collection.objects.filter(slug=fields["slug"]).exists():
        raise JobFailed(
            f"Nothing was created: a collection '{fields['slug']}' was made since this job "
            "was queued. Start again on the new-collection page with another slug."
        )
    with input_path(job) as path, zipfile.ZipFile(path) as zf:
        bundle, skipped = _read(job, zf, progress)
    try:
        with transaction.atomic():
            collection, report = set_up_collection(
                creator=creator,
                **fields,
                review=p["review"],
                data=bundle,
                create_missing_items=bool(p.get("create_missing_items")),
                set_status=bool(p.get("set_status")),
                progress=from_lines(progress),
            )
            assert report is not None
            Job.objects.filter(pk=job.pk).update(collection=collection)
            job.collection = collection
            details = [
                f"{counted(report.items_created, 'item')} with text, "
                f"{counted(report.placeholders_created, 'placeholder item')} (ids only)"
                + (
                    f"; skipped {counted(skipped, 'document')} that no qrels line names"
                    if skipped
                    else ""
                ),
                f"{counted(report.judgments_created, 'judgment')}, "
                f"{counted(report.unjudged_pairs, 'unjudged pair')} queued for review",
                f"{counted(report.statuses_set.get('relevant', 0), 'query')} marked relevant "
                "(a judgment at the relevant grade)",
            ]
            complete(
                job,
                progress,
                {
                    "summary": f"Created collection '{collection.slug}' with "
                    f"{counted(report.queries_created, 'query')}; you are its admin.",
                    "details": details,
                    "url": reverse("judgments:collection", args=[collection.slug]),
                    "link_text": "Open the collection",
                    "api_url": reverse("judgments-api:collection", args=[collection.slug]),
                },
            )
    except ImportRefused as exc:
        first, *rest = str(exc).splitlines()
        raise JobFailed(first, rest) from None
    except VerityError as exc:
        raise JobFailed(f"Nothing was created: {exc}") from None


@task()
def collection_setup_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _set_up)
