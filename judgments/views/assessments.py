"""Several assessors per item: the adjudication queue and the agreement page.

The adjudication queue shows one open pair at a time with every assessment and its note;
one key (the grade's digit) decides it. Only collection admins and members granted the
adjudicator capability see it.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ..models import AdjudicationTask, Collection, Role, Snapshot
from ..selectors import (
    agreement_report,
    assessments_of_pair,
    may_adjudicate,
    may_see_assessments,
    open_adjudications,
    reviewer_stats,
    snapshot_of,
)
from ..selectors.reviewers import SESSION_GAP
from ..services import InvariantError, adjudicate
from .common import RoleRequired, _grade_label, _grades, member_view


class DecideForm(forms.Form):
    task = forms.IntegerField(min_value=1)
    grade = forms.IntegerField(min_value=0)


def _require_adjudicator(request: HttpRequest, collection: Collection) -> None:
    if not may_adjudicate(request.user, collection):
        raise RoleRequired(
            "Adjudicating needs the admin role or the adjudicator capability in this "
            "collection; ask a collection admin to grant it.",
            role="adjudicator",
        )


@require_GET
@member_view()
def adjudication_queue(request: HttpRequest, collection: Collection) -> HttpResponse:
    """The open pair that waited longest, with every assessment, and the count of the rest."""
    _require_adjudicator(request, collection)
    pending = open_adjudications(collection)
    task = pending.first()
    assessments = list(assessments_of_pair(task)) if task is not None else []
    return render(
        request,
        "judgments/adjudicate.html",
        {
            "collection": collection,
            "task": task,
            "n_open": pending.count(),
            "assessments": [
                {"who": a.who, "label": _grade_label(collection, a.grade), "note": a.note}
                for a in assessments
            ],
            "grades": _grades(collection),
        },
    )


@require_POST
@member_view()
def adjudication_decide(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Decide one pair (``adjudicate``: the grade becomes its judgment, who is recorded)."""
    _require_adjudicator(request, collection)
    form = DecideForm(request.POST)
    if not form.is_valid():
        return HttpResponse("Nothing was decided: malformed request.", status=400)
    task = (
        AdjudicationTask.objects.filter(collection=collection, pk=form.cleaned_data["task"])
        .select_related("query", "item")
        .first()
    )
    if task is None:
        raise Http404("No such adjudication task in this collection.")
    grade = form.cleaned_data["grade"]
    try:
        adjudicate(task=task, grade=grade, by=request.user)
    except InvariantError as e:
        messages.error(request, f"Not decided: {e}.")
    else:
        messages.success(
            request,
            f"Decided {_grade_label(collection, grade)} for item '{task.item.external_id}' "
            f"of query '{task.query.external_id}'.",
        )
    return redirect(reverse("judgments:adjudicate", args=[collection.slug]))


@require_GET
@member_view()
def reviewer_stats_page(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Per assessor: labels, labels per hour, median seconds claim → submit, skips, and
    agreement with the resolved labels. Collection admins only."""
    if request.collection_role != Role.ADMIN:  # type: ignore[attr-defined]
        raise RoleRequired("Reviewer statistics are for the collection's admins.", role=Role.ADMIN)
    return render(
        request,
        "judgments/reviewers.html",
        {
            "collection": collection,
            "rows": reviewer_stats(collection),
            "gap_minutes": int(SESSION_GAP.total_seconds() // 60),
        },
    )


@require_GET
@member_view()
def agreement_page(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Agreement between the assessors: now, or as frozen in ``?snapshot=N``. Evaluators
    and admins only (``may_see_assessments``): with their own grades, a reviewer would
    read the other assessors' grades off the figures."""
    if not may_see_assessments(request.user, collection):
        raise RoleRequired(
            "Agreement between assessors is for evaluators and admins: with your own "
            "grades, its figures would tell you the other assessors' grades.",
            role=Role.EVALUATOR,
        )
    snapshot = None
    number = request.GET.get("snapshot", "")
    if number:
        try:
            snapshot = snapshot_of(collection, int(number))
        except (ValueError, Snapshot.DoesNotExist) as e:
            raise Http404(str(e)) from None
    report = agreement_report(collection, snapshot)
    return render(
        request,
        "judgments/agreement.html",
        {
            "collection": collection,
            "snapshot": snapshot,
            "report": report,
            "confusion_rows": list(
                zip(report["confusion"]["grades"], report["confusion"]["counts"], strict=True)
            ),
        },
    )
