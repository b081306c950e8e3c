"""The audit log's pages: a collection's log for its admins (``/c/<slug>/audit/``), the
whole log for superusers (``/audit/``); both filterable, paginated, and exported as JSON
Lines with ``?format=jsonl`` under the same filters.

Reading the log, the export included, writes nothing, not even an audit row: the app's
rule is that a GET writes nothing, and a log that grew each time it was read would record
its readers rather than what was done. (Data leaving the app, qrels and reports, is
audited even on GET: that is what an export row is for.) Who may read it is the check:
an admin of the collection, or a superuser.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from audit.selectors import KNOWN_ACTIONS, audit_events, jsonl_lines

from ..models import Collection, Role
from ..selectors import may
from .common import RoleRequired, member_view

ROWS_PER_PAGE = 50


class AuditFilterForm(forms.Form):
    action = forms.CharField(
        required=False,
        max_length=64,
        widget=forms.TextInput(attrs={"list": "known-actions"}),
        help_text="e.g. token.revoke, or token for every token action",
    )
    actor = forms.CharField(
        required=False,
        max_length=150,
        help_text="a username, or system: rows of no one (commands, failed logins)",
    )
    since = forms.DateField(
        required=False,
        label="From",
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="included",
    )
    until = forms.DateField(
        required=False,
        label="To",
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="included",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and until < since:
            self.add_error("until", f"is before {since:%Y-%m-%d}: swap them")
        return data


class AllFilterForm(AuditFilterForm):
    collection = forms.SlugField(required=False, max_length=100, help_text="a collection's slug")


def _answer(
    request: HttpRequest, form: AuditFilterForm, *, collection: Collection | None
) -> HttpResponse:
    if not form.is_valid():
        context = {"form": form, "collection": collection, "page": None}
        return render(request, "audit/log.html", _with_actions(context), status=400)
    data = form.cleaned_data
    rows = audit_events(
        collection_id=collection.pk if collection is not None else None,
        collection_slug=data.get("collection") or "",
        action=data["action"].strip(),
        actor=data["actor"].strip(),
        since=data["since"],
        until=data["until"],
    )
    if request.GET.get("format") == "jsonl":
        name = f"audit-{collection.slug if collection else 'all'}-{timezone.now():%Y%m%d-%H%M}"
        response = StreamingHttpResponse(
            jsonl_lines(rows.order_by("at", "id")), content_type="application/jsonl"
        )
        response["Content-Disposition"] = f'attachment; filename="{name}.jsonl"'
        return response
    page = Paginator(rows, ROWS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    query.pop("format", None)
    context = {
        "form": form,
        "collection": collection,
        "page": page,
        "filters": query.urlencode(),
    }
    return render(request, "audit/log.html", _with_actions(context))


def _with_actions(context: dict[str, Any]) -> dict[str, Any]:
    return {**context, "known_actions": KNOWN_ACTIONS}


@require_GET
@member_view()
def collection_audit_log(request: HttpRequest, collection: Collection) -> HttpResponse:
    """One collection's rows, for its admins (and superusers)."""
    if not may(request.user, collection, Role.ADMIN):
        raise RoleRequired("The collection's audit log is for its admins.", role=Role.ADMIN)
    return _answer(request, AuditFilterForm(request.GET), collection=collection)


@require_GET
@login_required
def audit_log(request: HttpRequest) -> HttpResponse:
    """Every row, every collection's and none's (logins): for superusers."""
    if not request.user.is_superuser:
        raise PermissionDenied(
            "The whole audit log is for superusers; a collection's admins read its own "
            "log from the collection's page."
        )
    return _answer(request, AllFilterForm(request.GET), collection=None)
