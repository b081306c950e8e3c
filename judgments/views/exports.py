"""Downloads from the pages: a snapshot's qrels (TREC with or without ``-1`` lines, its
canonical JSONL form, one assessor's qrels) and a collection's bundle.

Every download is asked for with a POST, which records the ``export.qrels`` or
``export.bundle`` audit row: a snapshot small enough (``VERITY_INLINE_MAX_ROWS`` lines)
comes back in the POST's answer; a larger one, and every bundle, is written by a job,
whose page shows its progress and then a link that fetches the file with a GET (which
writes nothing). Who may: the REST qrels export's rule, evaluators and admins (with
several assessors per item a plain reviewer's own grades plus any qrels would tell them
the others'); the bundle, admins only: it is the whole project (every reviewer's notes
and name, every decision), the counterpart of importing one, which is an admin's too.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from ..models import Collection, Role, Snapshot
from ..selectors import (
    SnapshotNotExportable,
    may,
    may_see_assessments,
    snapshot_canonical_lines,
    snapshot_of,
    snapshot_trec_lines,
)
from ..services import record_export
from ..tasks import qrels_detail, start_bundle_export, start_qrels_export
from .common import RoleRequired, member_view

#: What the snapshots page's download menu offers: value → (format, with -1 lines).
QRELS_CHOICES = {
    "trec": ("trec", False),
    "trec-unjudged": ("trec", True),
    "jsonl": ("jsonl", False),
}
MEDIA_TYPES = {"trec": "text/plain; charset=utf-8", "jsonl": "application/jsonl"}


def _snapshot(collection: Collection, number: int) -> Snapshot:
    try:
        return snapshot_of(collection, number)
    except Snapshot.DoesNotExist as exc:
        raise Http404(str(exc)) from None


def _rows(snapshot: Snapshot, fmt: str, with_unjudged: bool, assessor: str | None) -> int:
    """About how many lines the export has: what decides between the answer and a job."""
    if fmt == "jsonl":
        return snapshot.n_queries + snapshot.n_judgments + snapshot.n_assessments
    rows = snapshot.n_assessments if assessor else snapshot.n_judgments
    return rows + (snapshot.unjudged_total if with_unjudged else 0)


def _encoded(lines: Iterator[str]) -> Iterator[bytes]:
    for line in lines:
        yield line.encode("utf-8")


@require_POST
@member_view()
def snapshot_download(request: HttpRequest, collection: Collection, number: int) -> HttpResponse:
    """Download version ``number``'s qrels (``what``: trec, trec-unjudged, jsonl,
    assessor with ``assessor`` NAME) or, for admins, its bundle (``what=bundle``)."""
    what = request.POST.get("what", "trec")
    snapshot = _snapshot(collection, number)
    if what == "bundle":
        return _bundle(request, collection, snapshot)
    if not may_see_assessments(request.user, collection):
        raise RoleRequired(
            "Downloading qrels needs the evaluator role (as the qrels API does).",
            role=Role.EVALUATOR,
        )
    assessor = None
    if what.startswith("assessor:") and what != "assessor:":
        assessor = what.removeprefix("assessor:")
        fmt, with_unjudged = "trec", False
    elif what in QRELS_CHOICES:
        fmt, with_unjudged = QRELS_CHOICES[what]
    else:
        messages.error(request, f"Nothing downloaded: {what!r} is not one of the choices.")
        return redirect("judgments:snapshots", slug=collection.slug)
    if _rows(snapshot, fmt, with_unjudged, assessor) > settings.VERITY_INLINE_MAX_ROWS:
        job = start_qrels_export(
            snapshot=snapshot,
            fmt=fmt,
            with_unjudged=with_unjudged,
            assessor=assessor,
            by=request.user,
            request=request,
        )
        return redirect("jobs:job", pk=job.pk)
    try:
        chunks = (
            snapshot_canonical_lines(snapshot)
            if fmt == "jsonl"
            else _encoded(
                snapshot_trec_lines(snapshot, with_unjudged=with_unjudged, assessor=assessor)
            )
        )
    except LookupError as exc:
        messages.error(request, f"Nothing downloaded: {exc}.")
        return redirect("judgments:snapshots", slug=collection.slug)
    record_export(
        action="export.qrels",
        by=request.user,
        collection=collection,
        target=f"v{snapshot.number}",
        detail=qrels_detail(fmt, with_unjudged, assessor, job=False),
        request=request,
    )
    response = StreamingHttpResponse(chunks, content_type=MEDIA_TYPES[fmt])
    suffix = "jsonl" if fmt == "jsonl" else "qrels"
    name = f"{collection.slug}-v{snapshot.number}"
    name += f"-{assessor}" if assessor else "-with-unjudged" if with_unjudged else ""
    response["Content-Disposition"] = f'attachment; filename="{name}.{suffix}"'
    response["ETag"] = f'"sha256:{snapshot.content_hash}"'
    return response


@require_POST
@member_view()
def collection_bundle(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Export the live collection as a bundle, with its runs if asked: a job (admins)."""
    return _bundle(request, collection, None, runs=request.POST.get("runs") == "1")


def _bundle(
    request: HttpRequest, collection: Collection, snapshot: Snapshot | None, *, runs: bool = False
) -> HttpResponse:
    if not may(request.user, collection, Role.ADMIN):
        raise RoleRequired(
            "Exporting the whole collection as a bundle needs the admin role.", role=Role.ADMIN
        )
    try:
        job = start_bundle_export(
            collection=collection, snapshot=snapshot, runs=runs, by=request.user, request=request
        )
    except SnapshotNotExportable as exc:
        messages.error(request, f"Nothing exported: {exc}.")
        return redirect("judgments:snapshots", slug=collection.slug)
    return redirect("jobs:job", pk=job.pk)
