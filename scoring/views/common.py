"""What the scoring pages share: the membership check, query-string parameters, the link
back to the collection, the JSON and CSV answers, and the page for a refused request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse

from judgments.models import Collection
from judgments.views.common import member_view

from ..services import record_report_export

#: Resolve ``slug`` to a collection the user is a member of (any role), else 404: the
#: reviewer pages' check (``judgments.views.common.member_view``), not a second one.
member_page = member_view()
#: The same, for pages that show labels or scores derived from them: with several
#: assessors per item, only for those who may see the labels (``may_see_labels``).
label_page = member_view(labels=True)


class BadParameter(ValueError):
    """A query-string parameter that cannot be used; the message says how to fix it."""


def int_param(
    request: HttpRequest | Any,
    name: str,
    *,
    default: int | None = None,
    minimum: int = 1,
    maximum: int = 2**63 - 1,
) -> int | None:
    # A request reads its query string; a dict-like (request.POST, request.GET) is read as it is.
    values = request.GET if isinstance(request, HttpRequest) else request
    raw = (values.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadParameter(f"{name}={raw!r} is not a whole number") from None
    if value < minimum:
        raise BadParameter(f"{name} must be at least {minimum}, got {value}")
    if value > maximum:
        raise BadParameter(f"{name} must be at most {maximum}, got {value}")
    return value


def _collection_url(collection: Collection) -> str | None:
    try:
        return reverse("judgments:collection", kwargs={"slug": collection.slug})
    except NoReverseMatch:
        return None


def _data_response(
    request: HttpRequest,
    data: dict[str, Any],
    csv_text: Callable[[], str],
    name: str,
    *,
    collection: Collection,
):
    """The page's data as a download (``?format=json`` or ``csv``), audited as an
    ``export.report``; None for the page itself (viewing it is not an export)."""
    fmt = request.GET.get("format", "")
    if fmt not in ("json", "csv"):
        return None
    if fmt == "json":
        response = JsonResponse(data, json_dumps_params={"ensure_ascii": False, "indent": 2})
    else:
        response = HttpResponse(csv_text(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
    record_report_export(request=request, collection=collection, name=name, fmt=fmt)
    return response


def _bad_request(request: HttpRequest, collection: Collection, title: str, reasons: list[str]):
    return render(
        request,
        "scoring/refused.html",
        {"collection": collection, "title": title, "reasons": reasons},
        status=400,
    )
