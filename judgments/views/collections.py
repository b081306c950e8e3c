"""The collection pages: the home page's list of collections, and one collection's queries
with their review progress."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..models import Collection, QueryStatus
from ..selectors import (
    collections_with_review_progress,
    queries_with_progress,
    query_tags_of,
    queue_progress,
)
from .common import _grades, member_view

QUERIES_PER_PAGE = 50


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    rows = collections_with_review_progress(request.user)
    return render(request, "judgments/home.html", {"rows": rows})


@require_GET
@member_view()
def collection_detail(request: HttpRequest, collection: Collection) -> HttpResponse:
    status = request.GET.get("status", "")
    status = status if status in QueryStatus.values else ""
    tag = request.GET.get("tag", "").strip()
    queries = queries_with_progress(collection, status=status or None, tag=tag or None)
    page = Paginator(queries, QUERIES_PER_PAGE).get_page(request.GET.get("page"))
    n_open, n_claimed = queue_progress(collection)
    return render(
        request,
        "judgments/collection.html",
        {
            "collection": collection,
            "page": page,
            "status": status,
            "tag": tag,
            "tags": query_tags_of(collection),
            "statuses": QueryStatus.choices,
            "grades": _grades(collection),
            "n_open": n_open,
            "n_claimed": n_claimed,
        },
    )
