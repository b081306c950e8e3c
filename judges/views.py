"""The judges' pages: the collection's judges with a button to start a judging job,
a judge's proposals, and its calibration report against people."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from judgments.models import Collection, Role
from judgments.selectors import may
from judgments.views.common import member_view

from .models import JudgeConfig
from .selectors import calibration_of, judge_named, judge_names, proposals_of
from .tasks import start_proposals


def _judge(collection: Collection, name: str) -> JudgeConfig:
    try:
        return judge_named(collection, name)
    except JudgeConfig.DoesNotExist as exc:
        raise Http404(str(exc)) from None


@require_GET
@member_view()
def judge_list(request: HttpRequest, collection: Collection) -> HttpResponse:
    judges = [_judge(collection, name) for name in judge_names(collection)]
    return render(
        request,
        "judges/judges.html",
        {
            "collection": collection,
            "judges": judges,
            "may_start": may(request.user, collection, Role.EVALUATOR),
        },
    )


@require_POST
@member_view()
def judge_start(request: HttpRequest, collection: Collection, judge: str) -> HttpResponse:
    """Start a judging job over the pooled unjudged pairs (evaluator)."""
    if not may(request.user, collection, Role.EVALUATOR):
        raise PermissionDenied("Starting a judge needs the evaluator role.")
    config = _judge(collection, judge)
    limit = request.POST.get("limit", "").strip()
    job = start_proposals(
        collection=collection,
        judge=config.name,
        include_judged=request.POST.get("include_judged") == "on",
        limit=int(limit) if limit.isdigit() and int(limit) > 0 else None,
        by=request.user,
    )
    return redirect("jobs:job", pk=job.pk)


@require_GET
@member_view()
def proposal_list(request: HttpRequest, collection: Collection, judge: str) -> HttpResponse:
    config = _judge(collection, judge)
    rows = proposals_of(collection, config.name).order_by("-created_at", "-pk")
    page = Paginator(rows, 100).get_page(request.GET.get("page"))
    return render(
        request,
        "judges/proposals.html",
        {"collection": collection, "judge": config, "page": page},
    )


@require_GET
@member_view()
def calibration_page(request: HttpRequest, collection: Collection, judge: str) -> HttpResponse:
    config = _judge(collection, judge)
    report = calibration_of(collection, config.name)
    grades = [{"grade": g, "name": collection.grade_name(g)} for g in collection.grades]
    rows = [
        {"grade": g, "counts": counts}
        for g, counts in zip(grades, report["confusion"], strict=True)  # type: ignore[call-overload]
    ]
    return render(
        request,
        "judges/calibration.html",
        {
            "collection": collection,
            "judge": config,
            "report": report,
            "interval": report["interval"] or {},
            "grades": grades,
            "confusion_rows": rows,
        },
    )
