"""The collection pages: the home page's list of collections, one collection's queries
with their review progress, and the bulk status action over the queries a filter shows
(previewed on the page, applied by a POST)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ..formats import MAX_LISTED
from ..forms import BulkStatusForm
from ..models import Collection, QueryStatus
from ..selectors import (
    collections_with_review_progress,
    may_adjudicate,
    may_create_collections,
    may_see_assessments,
    may_see_labels,
    open_adjudications,
    queries_with_progress,
    query_tags_of,
    queue_progress,
    status_change_plan,
)
from ..services import set_query_statuses
from ..wording import counted
from .common import _grades, _invalid, member_view

QUERIES_PER_PAGE = 50


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    rows = collections_with_review_progress(request.user)
    return render(
        request,
        "judgments/home.html",
        {"rows": rows, "may_create": may_create_collections(request.user)},
    )


def _filters(data: Any) -> tuple[str, str]:
    """The page's (status, tag) filters, from its query string or a form."""
    status = data.get("status", "")
    return (status if status in QueryStatus.values else ""), data.get("tag", "").strip()


@require_GET
@member_view()
def collection_detail(request: HttpRequest, collection: Collection) -> HttpResponse:
    status, tag = _filters(request.GET)
    queries = queries_with_progress(collection, status=status or None, tag=tag or None)
    page = Paginator(queries, QUERIES_PER_PAGE).get_page(request.GET.get("page"))
    n_open, n_claimed = queue_progress(collection)
    bulk = request.GET.get("bulk", "")
    blind = not may_see_labels(request.user, collection)
    plan = (
        status_change_plan(collection, bulk, among=status or None, tag=tag or None)
        if bulk in QueryStatus.values and not blind
        else None
    )
    return render(
        request,
        "judgments/collection.html",
        {
            "collection": collection,
            "blind": blind,
            "page": page,
            "status": status,
            "tag": tag,
            "tags": query_tags_of(collection),
            "statuses": QueryStatus.choices,
            "grades": _grades(collection),
            "n_open": n_open,
            "n_claimed": n_claimed,
            "plan": plan,
            "listed": MAX_LISTED,
            "more_change": max(0, len(plan.change) - MAX_LISTED) if plan else 0,
            "more_refused": max(0, len(plan.refused) - MAX_LISTED) if plan else 0,
            "role": request.collection_role,  # type: ignore[attr-defined]
            **_overlap_context(request, collection),
        },
    )


def _overlap_context(request: HttpRequest, collection: Collection) -> dict[str, Any]:
    """Several assessors per item: the links and counts only those who may use them see
    (adjudication: adjudicators; agreement: ``may_see_assessments``, never a plain
    reviewer, whose own grades and the figures would tell the others')."""
    if not collection.has_overlap:
        return {}
    adjudicator = may_adjudicate(request.user, collection)
    return {
        "may_adjudicate": adjudicator,
        "may_see_agreement": may_see_assessments(request.user, collection),
        "n_adjudication": open_adjudications(collection).count() if adjudicator else 0,
    }


@require_POST
@member_view(label=True, labels=True)  # the status rule reads the labels
def bulk_status(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Set one review status on every query the page's filters show (``set_query_statuses``:
    the ones the status rule refuses stay as they are, and the answer says why)."""
    form = BulkStatusForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    among, tag = _filters(form.cleaned_data)
    query_ids = queries_with_progress(
        collection, status=among or None, tag=tag or None
    ).values_list("external_id", flat=True)
    plan = set_query_statuses(
        collection=collection,
        query_ids=list(query_ids),
        status=form.cleaned_data["new_status"],
        by=request.user,
    )
    label = QueryStatus(plan.status).label
    messages.success(
        request,
        f"{counted(len(plan.change), 'query')} set to '{label}'; "
        f"{len(plan.unchanged)} had it already; {len(plan.refused)} refused.",
    )
    for _, reason in plan.refused[:MAX_LISTED]:
        messages.warning(request, f"Not changed: {reason}.")
    if len(plan.refused) > MAX_LISTED:
        messages.warning(request, f"… and {len(plan.refused) - MAX_LISTED} more not changed.")
    filters = urlencode({k: v for k, v in (("status", among), ("tag", tag)) if v})
    return redirect(reverse("judgments:collection", args=[collection.slug]) + f"?{filters}")
