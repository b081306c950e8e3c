"""The query page: a query's judgments (editable), its open tasks, its review status and
evidence condition, and the POST actions that change them."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods

from ..extensions import run_names
from ..forms import (
    SEARCH_MAX_LENGTH,
    EvidenceForm,
    GradeForm,
    OwnAssessmentForm,
    StatusForm,
    format_evidence,
)
from ..highlight import query_terms
from ..models import ChangeSource, Collection, Query, QueryStatus
from ..selectors import (
    evidence_of,
    item_in,
    judgments_for_query,
    may_see_labels,
    open_tasks_for_query,
    own_assessments,
    query_in,
    search_items,
)
from ..services import (
    InvariantError,
    change_own_assessment,
    set_evidence_condition,
    set_query_status,
)
from .common import (
    _grade_label,
    _grades,
    _invalid,
    _marked,
    _require_labeler,
    _sources,
    member_view,
    require_labels,
)
from .grading import grade_item


def _query_or_404(collection: Collection, external_id: str) -> Query:
    try:
        return query_in(collection, external_id)
    except Query.DoesNotExist:
        raise Http404(f"No query '{external_id}' in this collection.") from None


def _last_set(collection: Collection, judgment: Any) -> str:
    """Who or what set the label last: a person, or how (the resolution policy, an
    adjudicator, an import), never "import" for a label no import wrote."""
    source = getattr(judgment, "last_source", None)
    who = judgment.who
    if source == ChangeSource.RESOLUTION:
        return f"resolved by the {collection.resolution_policy} policy"
    if source == ChangeSource.ADJUDICATION:
        return f"adjudicated by {who}" if who else "adjudicated"
    label = ChangeSource(source).label if source in ChangeSource.values else ""
    if who:
        return who if source in (None, ChangeSource.UI) else f"{who} ({label})"
    return label or "import"


def _render_query(
    request: HttpRequest,
    collection: Collection,
    query: Query,
    *,
    status: int = 200,
    conflict: dict[str, Any] | None = None,
    grade_error: str = "",
    error_item: str = "",
    status_error: str = "",
    evidence_form: EvidenceForm | None = None,
    evidence_error: str = "",
    assessment_error: str = "",
) -> HttpResponse:
    terms = query_terms(query.text)
    # With several assessors per item, a reviewer sees their own assessments and the
    # tasks they are given, never the resolved labels or a pair's state (the one rule).
    blind = not may_see_labels(request.user, collection)
    if blind and error_item:
        error_item = ""  # its row may not be listed for them: say it at the top
    judged = [
        {
            "judgment": j,
            "title_html": _marked(j.item.title, terms),
            "text_html": _marked(j.item.text, terms),
            "label": _grade_label(collection, j.grade),
            "last_set": _last_set(collection, j),
        }
        for j in ([] if blind else judgments_for_query(query))
    ]
    # One row per item, however many assessors' slots it has open; with several
    # assessors, who holds a slot is not shown (it would tell who else assesses it).
    waiting: list[dict[str, Any]] = []
    by_item: dict[int, dict[str, Any]] = {}
    runs = run_names(collection.pk)
    assessed = set(own_assessments(query, request.user).values_list("item_id", flat=True))
    for t in open_tasks_for_query(query):
        if blind and t.item_id in assessed:
            continue  # whether the others have assessed it yet is theirs
        row = by_item.get(t.item_id)
        if row is None:
            row = by_item[t.item_id] = {
                "task": t,
                "title_html": _marked(t.item.title, terms),
                "text_html": _marked(t.item.text, terms),
                "sources": _sources(t, runs),
                "open_slots": 0,
                "claimed_by": None,
            }
            waiting.append(row)
        row["open_slots"] += 1
        visible = not collection.has_overlap or t.claimed_by_id == request.user.pk
        if t.status == "claimed" and t.claimed_by is not None and visible:
            row["claimed_by"] = t.claimed_by
    search = request.GET.get("search", "").strip()[:SEARCH_MAX_LENGTH]
    search_terms = query_terms(search)
    hits = [
        {
            "hit": hit,
            "title_html": _marked(hit.item.title, search_terms),
            "text_html": _marked(hit.item.text, search_terms),
            "label": _grade_label(collection, hit.judgment.grade)
            if hit.judgment and not blind
            else "",
        }
        for hit in (search_items(collection, search, query=query) if search else ())
    ]
    evidence = evidence_of(query)
    if evidence_form is None:
        evidence_form = EvidenceForm(
            initial={"groups": format_evidence(evidence.groups if evidence else None)}
        )
    n_relevant = sum(1 for row in judged if collection.is_relevant_grade(row["judgment"].grade))
    mine = (
        [
            {
                "assessment": a,
                "label": _grade_label(collection, a.grade),
            }
            for a in own_assessments(query, request.user)
        ]
        if collection.has_overlap
        else []
    )
    return render(
        request,
        "judgments/query.html",
        {
            "collection": collection,
            "query": query,
            "blind": blind,
            "judged": judged,
            "waiting": waiting,
            "search": search,
            "hits": hits,
            "queue_url": reverse("judgments:review", args=[collection.slug])
            + "?"
            + urlencode({"query": query.external_id}),
            "search_source": ChangeSource.SEARCH,
            "n_relevant": n_relevant,
            "grades": _grades(collection),
            "statuses": QueryStatus.choices,
            "evidence": evidence,
            "evidence_form": evidence_form,
            "evidence_error": evidence_error,
            "conflict": conflict,
            "grade_error": grade_error,
            "error_item": error_item,
            "status_error": status_error,
            "mine": mine,
            "assessment_error": assessment_error,
            "source_labels": dict(ChangeSource.choices),
        },
        status=status,
    )


def _query_url(collection: Collection, query: Query, anchor: str = "", *, search: str = "") -> str:
    url = reverse("judgments:query", args=[collection.slug, query.external_id])
    if search:
        url += "?" + urlencode({"search": search})
    return f"{url}#{anchor}" if anchor else url


def _back_to(request: HttpRequest, default: str) -> str:
    """Where a saved grade returns: the page it was given on (a run's ranked list posts
    its grades here with ``next``), if that is on this site; else ``default``."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


def _post_grade(request: HttpRequest, collection: Collection, query: Query) -> HttpResponse:
    form = GradeForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    data = form.cleaned_data
    item = item_in(collection, data["item"])
    if item is None:
        return _render_query(
            request,
            collection,
            query,
            status=400,
            grade_error=f"Not saved: there is no item {data['item']!r} in this collection.",
        )
    graded = grade_item(
        request,
        collection,
        query=query,
        item=item,
        grade=data["grade"],
        note=data["note"],
        expected_version=data["expected_version"],
        source=data["source"] or ChangeSource.UI,
    )
    if graded.conflict is not None:
        conflict = {**graded.conflict, "item": item}
        return _render_query(request, collection, query, status=409, conflict=conflict)
    if graded.error:
        return _render_query(
            request,
            collection,
            query,
            status=graded.status,
            grade_error=graded.error,
            error_item=item.external_id,
        )
    messages.success(request, graded.message)
    if data["search"]:  # back to the search, on the hit just judged
        return redirect(_query_url(collection, query, f"hit-{item.pk}", search=data["search"]))
    return redirect(_back_to(request, _query_url(collection, query, f"item-{item.pk}")))


def _post_status(request: HttpRequest, collection: Collection, query: Query) -> HttpResponse:
    form = StatusForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    try:
        query = set_query_status(query=query, status=form.cleaned_data["status"], by=request.user)
    except InvariantError as e:
        return _render_query(request, collection, query, status=400, status_error=f"{e}.")
    messages.success(request, f"Review status is now '{query.get_status_display()}'.")
    return redirect(_query_url(collection, query, "status"))


def _post_evidence(request: HttpRequest, collection: Collection, query: Query) -> HttpResponse:
    form = EvidenceForm(request.POST)
    if not form.is_valid():
        return _render_query(request, collection, query, status=400, evidence_form=form)
    try:
        condition = set_evidence_condition(
            query=query, groups=form.cleaned_data["groups"], by=request.user
        )
    except InvariantError as e:
        return _render_query(
            request,
            collection,
            query,
            status=400,
            evidence_form=form,
            evidence_error=f"Not saved: {e}.",
        )
    if condition is None:
        messages.success(request, "Evidence condition removed.")
    else:
        messages.success(request, f"Evidence condition saved: {condition}.")
    return redirect(_query_url(collection, query, "evidence"))


def _post_assessment(request: HttpRequest, collection: Collection, query: Query) -> HttpResponse:
    """Change one's own assessment (several assessors per item); a settled label stands
    (``change_own_assessment``)."""
    form = OwnAssessmentForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    data = form.cleaned_data
    assessment = own_assessments(query, request.user).filter(pk=data["assessment"]).first()
    if assessment is None:
        raise Http404("You have no such assessment of this query.")
    before = assessment.grade
    try:
        change_own_assessment(
            assessment=assessment,
            assessor=request.user,
            grade=data["grade"],
            expected_version=data["expected_version"],
            note=data["note"],
        )
    except InvariantError as e:
        return _render_query(
            request, collection, query, status=409, assessment_error=f"Not changed: {e}."
        )
    messages.success(
        request,
        f"Your assessment of item '{assessment.item.external_id}' is now "
        f"{_grade_label(collection, data['grade'])} (was {_grade_label(collection, before)}).",
    )
    return redirect(_query_url(collection, query, "mine"))


_QUERY_ACTIONS = {
    "grade": _post_grade,
    "status": _post_status,
    "evidence": _post_evidence,
    "assessment": _post_assessment,
}


@require_http_methods(["GET", "POST"])
@member_view()
def query_detail(request: HttpRequest, collection: Collection, external_id: str) -> HttpResponse:
    """One query: its judgments (editable), its open tasks, its status and evidence.
    Each form posts here with an ``action``; each action calls one service."""
    query = _query_or_404(collection, external_id)
    if request.method == "GET":
        return _render_query(request, collection, query)
    _require_labeler(request)
    if request.POST.get("action") == "status":
        # the status rule reads the labels (its refusal would tell them); a grade here
        # is the reviewer's own assessment with several assessors per item
        require_labels(request, collection)
    action = _QUERY_ACTIONS.get(request.POST.get("action", ""))
    if action is None:
        return HttpResponse(
            "Unknown action; use grade, status, evidence or assessment.",
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    return action(request, collection, query)
