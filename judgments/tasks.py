"""The judgments side's background jobs: freezing a snapshot, importing into a
collection, exporting a large snapshot's qrels, exporting a collection's bundle.
``start_*`` runs in the request (quick checks, then a ``Job``); ``*_task`` runs in a
worker, through the services.

Task code uses Django's Tasks API only; which queue carries it is the settings' choice.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.urls import reverse
from django_tasks import task

from jobs.files import input_path, writing_output
from jobs.models import Job, JobKind
from jobs.progress import JobProgress, from_lines
from jobs.runner import complete, run_job
from jobs.services import JobFailed, create_job

from . import formats
from .extensions import bundle_runs
from .models import Collection, Snapshot
from .selectors import (
    SnapshotNotExportable,
    bundle_of,
    collection_bundle_lines,
    snapshot_bundle_of,
    snapshot_canonical_lines,
    snapshot_of,
    snapshot_trec_lines,
)
from .services import (
    ImportRefused,
    VerityError,
    freeze_snapshot,
    import_collection_data,
    record_export,
)
from .wording import counted

# -- snapshot freeze ------------------------------------------------------------------------


def start_freeze(*, collection: Collection, by: Any = None, note: str = "") -> Job:
    """Queue freezing the collection's labels as its next snapshot."""
    return create_job(
        kind=JobKind.SNAPSHOT_FREEZE,
        task=freeze_task,
        label=f"Freeze the labels of {collection.slug} as a snapshot",
        collection=collection,
        by=by,
        params={"note": note},
    )


def freeze_result(snapshot: Snapshot, created: bool) -> dict[str, Any]:
    slug = snapshot.collection.slug
    url = reverse("judgments:snapshots", args=[slug]) + f"#v{snapshot.number}"
    if not created:
        return {
            "summary": f"Nothing changed since v{snapshot.number} "
            f"(sha256:{snapshot.content_hash[:12]}…): no new snapshot was made.",
            "url": url,
            "link_text": "Open the snapshots",
            "api_url": reverse("judgments-api:snapshot", args=[slug, snapshot.number]),
            "snapshot": snapshot.number,
            "created": False,
        }
    result = {
        "summary": f"Froze v{snapshot.number}: {counted(snapshot.n_judgments, 'judgment')}, "
        f"{counted(snapshot.n_queries, 'query')}, {snapshot.unjudged_summary} "
        f"(sha256:{snapshot.content_hash[:12]}…)."
        + (f" Labels: {snapshot.label_sources}." if snapshot.model_labels else ""),
        "url": url,
        "link_text": "Open the snapshots",
        "api_url": reverse("judgments-api:snapshot", args=[slug, snapshot.number]),
        "snapshot": snapshot.number,
        "created": True,
    }
    if snapshot.number > 1:
        result["details"] = [f"What changed: see the diff from v{snapshot.number - 1}."]
        result["diff_url"] = reverse(
            "judgments:snapshot-diff", args=[slug, snapshot.number - 1, snapshot.number]
        )
    return result


def _freeze(job: Job, progress: JobProgress) -> None:
    collection = Collection.objects.get(pk=job.collection_id)
    try:
        with transaction.atomic():
            snapshot, created = freeze_snapshot(
                collection=collection,
                by=job.created_by,
                note=job.params.get("note", ""),
                progress=progress,
            )
            complete(job, progress, freeze_result(snapshot, created))
    except VerityError as exc:
        raise JobFailed(str(exc)) from None


@task()
def freeze_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _freeze)


# -- collection import ----------------------------------------------------------------------


def start_collection_import(
    *,
    collection: Collection,
    upload: Any,
    filename: str,
    create_missing_items: bool = False,
    set_status: bool = False,
    by: Any = None,
) -> Job:
    """Queue importing a JSONL bundle (kept as the job's input) into ``collection``."""
    return create_job(
        kind=JobKind.COLLECTION_IMPORT,
        task=collection_import_task,
        label=f"Import {filename} into {collection.slug}",
        collection=collection,
        by=by,
        params={"create_missing_items": create_missing_items, "set_status": set_status},
        input_file=upload,
        input_name=filename,
    )


def _import_collection(job: Job, progress: JobProgress) -> None:
    collection = Collection.objects.get(pk=job.collection_id)
    with input_path(job) as path:
        try:
            progress.phase(f"reading {path.name}", path.stat().st_size)  # in bytes
            bundle, problems = formats.parse_bundle(path.read_bytes(), str(path))
        except OSError as exc:
            raise JobFailed(f"{path.name}: cannot read it ({exc.strerror})") from None
        progress.advance(path.stat().st_size)
        if problems:
            text = formats.describe_problems(problems).replace(str(path), path.name)
            first, *rest = text.splitlines()
            raise JobFailed(first, rest)
        try:
            with transaction.atomic():
                report = import_collection_data(
                    data=bundle,
                    collection_slug=collection.slug,
                    create_missing_items=bool(job.params.get("create_missing_items")),
                    set_status=bool(job.params.get("set_status")),
                    by=job.created_by,
                    progress=from_lines(progress),
                )
                complete(
                    job,
                    progress,
                    {
                        "summary": f"Imported {path.name} into {collection.slug}: "
                        f"{counted(report.items_created, 'item')}, "
                        f"{counted(report.queries_created, 'query')}, "
                        f"{counted(report.judgments_created, 'judgment')} created.",
                        "url": reverse("judgments:collection", args=[collection.slug]),
                        "link_text": "Open the collection",
                        "api_url": reverse("judgments-api:collection", args=[collection.slug]),
                    },
                )
        except ImportRefused as exc:
            first, *rest = str(exc).replace(str(path), path.name).splitlines()
            raise JobFailed(first, rest) from None
        except VerityError as exc:
            raise JobFailed(str(exc)) from None


@task()
def collection_import_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _import_collection)


# -- qrels export ---------------------------------------------------------------------------


def start_qrels_export(
    *,
    snapshot: Snapshot,
    fmt: str = "trec",
    with_unjudged: bool = False,
    assessor: str | None = None,
    by: Any = None,
    request: Any = None,
) -> Job:
    """Queue writing a snapshot's qrels (TREC, or its canonical JSONL form; ``assessor``:
    that assessor's TREC qrels) to a file the job's author then downloads. With
    The export is audited here, once, as it is asked for (``export.qrels``);
    downloading the job's file is not a second export."""
    with transaction.atomic():
        record_export(
            action="export.qrels",
            by=by,
            collection=snapshot.collection,
            target=f"v{snapshot.number}",
            detail=qrels_detail(fmt, with_unjudged, assessor, job=True),
            request=request,
        )
        who = f", assessor {assessor}" if assessor else ""
        return create_job(
            kind=JobKind.QRELS_EXPORT,
            task=qrels_export_task,
            label=f"Export the qrels of {snapshot.collection.slug} v{snapshot.number} "
            f"({fmt}{', with -1 lines' if with_unjudged else ''}{who})",
            collection=snapshot.collection,
            by=by,
            params={
                "snapshot": snapshot.number,
                "format": fmt,
                "with_unjudged": with_unjudged,
                **({"assessor": assessor} if assessor else {}),
            },
        )


def qrels_detail(
    fmt: str, with_unjudged: bool, assessor: str | None, *, job: bool
) -> dict[str, Any]:
    """What an ``export.qrels`` audit row says of the export."""
    detail: dict[str, Any] = {"format": fmt, "with_unjudged": with_unjudged, "as_job": job}
    if assessor:
        detail["assessor"] = assessor
    return detail


def _export(job: Job, progress: JobProgress) -> dict[str, Any]:
    p = job.params
    collection = Collection.objects.get(pk=job.collection_id)
    try:
        snapshot = snapshot_of(collection, p["snapshot"])
    except Snapshot.DoesNotExist as exc:
        raise JobFailed(str(exc)) from None
    fmt = p.get("format", "trec")
    assessor = p.get("assessor") or None
    suffix = "jsonl" if fmt == "jsonl" else "qrels"
    name = f"{collection.slug}-v{snapshot.number}{'-' + assessor if assessor else ''}.{suffix}"
    if fmt == "jsonl":  # the canonical form's lines: its two header lines, then one per
        # query, judgment or model label, assessment and unjudged pair (clamped at 100 %)
        total = 2 + snapshot.n_queries + snapshot.n_judgments + snapshot.n_assessments
        total += snapshot.n_unjudged
    else:
        total = snapshot.n_assessments if assessor else snapshot.n_judgments
        total += snapshot.unjudged_total if p.get("with_unjudged") else 0
    progress.phase("writing the qrels", total)
    with writing_output(job, name) as out:
        if fmt == "jsonl":
            for n, chunk in enumerate(snapshot_canonical_lines(snapshot), 1):
                out.write(chunk)
                if n % 50000 == 0:
                    progress.advance(50000)
        else:
            try:
                lines = snapshot_trec_lines(
                    snapshot, with_unjudged=bool(p.get("with_unjudged")), assessor=assessor
                )
            except LookupError as exc:
                raise JobFailed(str(exc)) from None
            for n, line in enumerate(lines, 1):
                out.write(line.encode("utf-8"))
                if n % 50000 == 0:
                    progress.advance(50000)
    return {
        "summary": f"Wrote {name}."
        + (f" Labels by source: {snapshot.label_counts}." if snapshot.model_labels else ""),
        "label_sources": snapshot.label_counts,
        "download_name": name,
        "content_type": "application/jsonl" if fmt == "jsonl" else "text/plain; charset=utf-8",
        "etag": f"sha256:{snapshot.content_hash}",
    }


@task()
def qrels_export_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _export)


# -- bundle export --------------------------------------------------------------------------


def start_bundle_export(
    *,
    collection: Collection,
    snapshot: Snapshot | None = None,
    runs: bool = False,
    by: Any = None,
    request: Any = None,
) -> Job:
    """Queue writing the collection's JSONL bundle (live, or what ``snapshot`` holds;
    with ``runs``, its runs too) to a file its author then downloads, and record the
    ``export.bundle`` audit row with it. Refused (``SnapshotNotExportable``) for a
    snapshot that holds model labels."""
    if snapshot is not None and snapshot.model_labels:
        collection_bundle_lines(collection, snapshot=snapshot)  # raises, saying why
    what = f"v{snapshot.number}" if snapshot is not None else "live"
    with transaction.atomic():
        record_export(
            action="export.bundle",
            by=by,
            collection=collection,
            target=what,
            detail={"snapshot": snapshot.number if snapshot is not None else None, "runs": runs},
            request=request,
        )
        return create_job(
            kind=JobKind.BUNDLE_EXPORT,
            task=bundle_export_task,
            label=f"Export {collection.slug} ({what}{', with its runs' if runs else ''}) "
            "as a bundle",
            collection=collection,
            by=by,
            params={"snapshot": snapshot.number if snapshot is not None else None, "runs": runs},
        )


def _export_bundle(job: Job, progress: JobProgress) -> dict[str, Any]:
    collection = Collection.objects.get(pk=job.collection_id)
    number = job.params.get("snapshot")
    snapshot = None
    if number is not None:
        try:
            snapshot = snapshot_of(collection, number)
        except Snapshot.DoesNotExist as exc:
            raise JobFailed(str(exc)) from None
    name = f"{collection.slug}{f'-v{number}' if number else ''}.bundle.jsonl"
    progress.phase("reading the collection", 1)
    try:
        bundle = bundle_of(collection) if snapshot is None else snapshot_bundle_of(snapshot)
    except SnapshotNotExportable as exc:
        raise JobFailed(str(exc)) from None
    if job.params.get("runs"):
        source = bundle_runs()
        if source is None:
            raise JobFailed("no app stores runs here (add 'scoring' to INSTALLED_APPS)")
        bundle.runs, bundle.rankings = source.records(collection)
    progress.advance(1)
    parts = (bundle.items, bundle.queries, bundle.judgments, bundle.adjudications)
    total = 1 + sum(map(len, parts)) + len(bundle.unjudged)
    total += len(bundle.runs) + len(bundle.rankings)
    progress.phase("writing the bundle", total)
    with writing_output(job, name) as out:
        for n, line in enumerate(formats.bundle_lines(bundle), 1):
            out.write(line.encode("utf-8"))
            if n % 20000 == 0:
                progress.advance(20000)
    return {
        "summary": f"Wrote {name}: {counted(total, 'line')}, the collection "
        + (f"as snapshot v{number} holds it" if number else "as it is now")
        + ". import_collection reads it back.",
        "download_name": name,
        "content_type": "application/jsonl",
    }


@task()
def bundle_export_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _export_bundle)
