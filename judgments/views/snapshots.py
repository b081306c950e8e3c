"""The snapshots of a collection: their list (with a Freeze button for evaluators) and
what changed between two of them."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from verity_limits import NOTE_MAX

from ..models import Collection, QueryStatus, Role, Snapshot, SnapshotAssessment, SnapshotQuery
from ..selectors import (
    diff_snapshots,
    may,
    may_score,
    may_see_assessments,
    may_see_labels,
    snapshot_of,
)
from ..tasks import start_freeze
from .common import RoleRequired, member_view

#: Rows of each kind listed on the diff page (every count is exact).
DIFF_ROWS_SHOWN = 1000


@require_GET
@member_view()
def snapshot_list(request: HttpRequest, collection: Collection) -> HttpResponse:
    snapshots = list(
        Snapshot.objects.filter(collection=collection)
        .select_related("created_by")
        .order_by("-number")
    )
    by_status: dict[int, dict[str, int]] = {}
    for row in (  # blocks by run of versions and status: a few rows per version
        SnapshotQuery.objects.filter(collection=collection)
        .values("first_number", "end_number", "status")
        .annotate(n=Count("pk"))
    ):
        for s in snapshots:
            if row["first_number"] <= s.number and (
                row["end_number"] is None or s.number < row["end_number"]
            ):
                counts = by_status.setdefault(s.pk, {})
                counts[row["status"]] = counts.get(row["status"], 0) + row["n"]
    may_export = may_see_assessments(request.user, collection)
    assessors = _assessors_by_version(snapshots) if may_export else {}
    rows = [
        {
            "snapshot": s,
            "assessors": assessors.get(s.pk, []),
            "statuses": [
                (label, by_status.get(s.pk, {}).get(value, 0))
                for value, label in QueryStatus.choices
            ],
            "previous": s.number - 1 if s.number > 1 else None,
        }
        for s in snapshots
    ]
    return render(
        request,
        "judgments/snapshots.html",
        {
            "collection": collection,
            "rows": rows,
            "blind": not may_see_labels(request.user, collection),
            "may_freeze": may_score(request.user, collection),
            "may_export": may_export,
            "may_bundle": may(request.user, collection, Role.ADMIN),
            "inline_max": f"{settings.VERITY_INLINE_MAX_ROWS:,}",
            "numbers": [s.number for s in snapshots],
        },
    )


def _assessors_by_version(snapshots: list[Snapshot]) -> dict[int, list[str]]:
    """The assessors each version with several assessors per item froze, by name: the
    per-assessor downloads it offers."""
    overlap = [s for s in snapshots if s.has_overlap]
    found: dict[int, set[str]] = {}
    if overlap:
        for first, end, name in (
            SnapshotAssessment.objects.filter(block__collection=overlap[0].collection_id)
            .values_list("block__first_number", "block__end_number", "assessor")
            .distinct()
        ):
            for s in overlap:
                if first <= s.number and (end is None or s.number < end):
                    found.setdefault(s.pk, set()).add(name)
    return {pk: sorted(names) for pk, names in found.items()}


@require_POST
@member_view()
def snapshot_freeze(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Freeze the labels as the next snapshot: a job, whose page says what was made, or
    plainly that nothing changed."""
    if not may_score(request.user, collection):
        raise RoleRequired("Freezing a snapshot needs the evaluator role.", role=Role.EVALUATOR)
    note = request.POST.get("note", "").strip()[:NOTE_MAX]
    return redirect(
        "jobs:job", pk=start_freeze(collection=collection, by=request.user, note=note).pk
    )


@require_GET
@member_view()
def snapshot_diff_pick(request: HttpRequest, collection: Collection) -> HttpResponse:
    """The diff form's GET (``?a=&b=``) sent on to the diff page's own URL."""
    try:
        a, b = int(request.GET.get("a", "")), int(request.GET.get("b", ""))
    except ValueError:
        return redirect("judgments:snapshots", slug=collection.slug)
    return redirect("judgments:snapshot-diff", slug=collection.slug, a=a, b=b)


@require_GET
@member_view(labels=True)
def snapshot_diff(request: HttpRequest, collection: Collection, a: int, b: int) -> HttpResponse:
    try:
        old, new = snapshot_of(collection, a), snapshot_of(collection, b)
    except Snapshot.DoesNotExist as exc:
        raise Http404(str(exc)) from None
    diff = diff_snapshots(old, new)
    grade_names = {int(g["grade"]): g["name"] for g in new.scale}

    def listed(rows: list[Any]) -> dict[str, Any]:
        return {"count": len(rows), "rows": rows[:DIFF_ROWS_SHOWN]}

    return render(
        request,
        "judgments/snapshot_diff.html",
        {
            "collection": collection,
            "a": old,
            "b": new,
            "diff": diff,
            "added": listed(diff.added),
            "removed": listed(diff.removed),
            "regraded": listed(diff.regraded),
            "status_changes": listed(diff.status_changes),
            "evidence_changes": listed(diff.evidence_changes),
            "grade_names": grade_names,
            "limit": DIFF_ROWS_SHOWN,
            "numbers": Snapshot.objects.filter(collection=collection)
            .order_by("-number")
            .values_list("number", flat=True),
        },
    )
