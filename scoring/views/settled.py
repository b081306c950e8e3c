"""Whether a comparison is settled: the section of the compare page, the POST that queues
the pairs which could change it (a focus set), and "compare on vN" (a job)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from judgments.models import Collection, Role
from judgments.selectors import snapshot_of
from judgments.services import InvariantError
from judgments.views.common import RoleRequired

from .. import reports
from ..models import Evaluation
from ..reports.settled import scored_like
from ..selectors import evaluation_in
from ..settling import queue_comparison_pairs, review_url
from ..tasks import start_comparison_on
from .common import label_page

VERDICTS = {
    "a": "settled: a is better whatever the unjudged items are",
    "b": "settled: b is better whatever the unjudged items are",
    "tie": "settled: a tie, and no unjudged item can move it",
    "open": "not settled: the unjudged items could change the sign",
    "undefined": "undefined: no paired query",
}


def settlement_view(data: dict[str, Any]) -> dict[str, Any]:
    """The page's rows: each measure's range and verdict as text, pairs capped."""
    rows = []
    for e in data.get("measures", []):
        m = e["measure"]
        rows.append(
            {
                **e,
                "range_text": (
                    f"[{reports.fmt_diff(m, e['low'])}, {reports.fmt_diff(m, e['high'])}]"
                    if e["low"] is not None
                    else "undefined"
                ),
                "verdict_text": VERDICTS[e["verdict"]],
                "shown": e["pairs"]["rows"][: reports.PAGE_PAIRS],
                "more": max(0, e["pairs"]["count"] - reports.PAGE_PAIRS),
            }
        )
    return {"rows": rows}


def _pair(request: HttpRequest, collection: Collection) -> tuple[Evaluation, Evaluation]:
    try:
        return (
            evaluation_in(collection, int(request.POST.get("a", ""))),
            evaluation_in(collection, int(request.POST.get("b", ""))),
        )
    except (ValueError, Evaluation.DoesNotExist):
        raise Http404(f"collection '{collection.slug}' has no such evaluation") from None


def _back(collection: Collection, a: Evaluation, b: Evaluation) -> str:
    return reverse("scoring:compare", args=[collection.slug]) + f"?a={a.pk}&b={b.pk}#settled"


def _need_evaluator(request: HttpRequest, collection: Collection, what: str) -> None:
    # Queueing urgent pairs reorders every reviewer's queue, and scoring stores
    # evaluations: both are the evaluator's decisions (judgments/services/focus.py).
    if not reports.may_score(request.user, collection):
        raise RoleRequired(f"{what} needs the evaluator role.", role=Role.EVALUATOR)


@require_POST
@label_page
def compare_focus(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Queue, first in every reviewer's queue, exactly the unjudged pairs that could change
    the sign of comparison (a, b), as the focus set ``compare-A-B``; back to the page."""
    _need_evaluator(request, collection, "Queueing the pairs that could change a comparison")
    a, b = _pair(request, collection)
    try:
        outcome = queue_comparison_pairs(
            a, b, by=request.user, measure=request.POST.get("measure") or None, request=request
        )
    except (reports.ComparisonRefused, InvariantError) as exc:
        messages.error(request, str(exc))
        return redirect(_back(collection, a, b))
    if outcome is None:
        messages.success(request, "Nothing to queue: no unjudged pair could change it.")
    else:
        messages.success(
            request,
            f"Queued {outcome.pairs} pair{'s' if outcome.pairs != 1 else ''} first in the "
            f"review queue as '{outcome.focus.name}' ({outcome.unjudged} unjudged). Point "
            f"reviewers at {review_url(collection, outcome.focus.name)}",
        )
    return redirect(_back(collection, a, b))


@require_POST
@label_page
def compare_on_latest(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Score a's and b's stages on the latest snapshot as they were scored (a job), then
    show that comparison; at once when both are scored there already."""
    _need_evaluator(request, collection, "Scoring on a newer snapshot")
    a, b = _pair(request, collection)
    latest = snapshot_of(collection)
    ea, eb = scored_like(a, latest), scored_like(b, latest)
    if ea is not None and eb is not None:
        return redirect(
            reverse("scoring:compare", args=[collection.slug]) + f"?a={ea.pk}&b={eb.pk}"
        )
    return redirect(
        "jobs:job", pk=start_comparison_on(a=a, b=b, snapshot=latest, by=request.user).pk
    )
