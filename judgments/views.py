"""The reviewer's pages: collections, one collection's queries, the review queue, a query.

Views parse the request, call one service or selector, and render. The queue's POST
endpoints answer JSON to the page's script (``Accept: application/json``), with the next
panel as server-rendered HTML, and redirect or render a whole page otherwise, so the
queue also works without JavaScript. Nothing is ever saved over someone else's change:
a stale edit renders both values and waits for the reviewer to choose.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .forms import (
    EvidenceForm,
    GradeForm,
    QueueJudgeForm,
    QueueTaskForm,
    StatusForm,
    format_evidence,
)
from .highlight import highlight, query_terms
from .models import (
    ROLE_RANK,
    ChangeSource,
    Collection,
    Judgment,
    Query,
    QueryStatus,
    ReviewTask,
    Role,
)
from .selectors import (
    change_that_made,
    collections_with_review_progress,
    evidence_of,
    item_in,
    judgment_changes,
    judgments_for_query,
    open_tasks_for_query,
    queries_with_progress,
    query_in,
    query_tags_of,
    queue_progress,
    role_of,
    task_for_review,
)
from .services import (
    InvariantError,
    JudgmentConflict,
    claim_next_task,
    record_judgment,
    set_evidence_condition,
    set_query_status,
    skip_task,
    undo_judgment_change,
)

QUERIES_PER_PAGE = 50
UNDO_DEPTH = 200  # changes remembered per collection and session


# -- access ---------------------------------------------------------------------------------


def wants_json(request: HttpRequest) -> bool:
    """The queue's script asks for JSON first; a browser's own navigation never does."""
    accept = request.headers.get("Accept", "")
    return accept.split(",")[0].strip().startswith("application/json")


def member_view(*, label: bool = False) -> Callable[..., Any]:
    """Resolve ``slug`` to a collection the user is a member of, else 404 (a non-member
    learns nothing, not even that it exists). ``label`` also needs the reviewer role;
    every role includes it today, but the rule is stated where it is enforced."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                if wants_json(request):
                    return JsonResponse(
                        {
                            "ok": False,
                            "error": "You are logged out, so nothing was saved. "
                            "Log in again, then repeat your last key.",
                            "login": settings.LOGIN_URL,
                        },
                        status=401,
                    )
                return redirect_to_login(request.get_full_path())
            collection = Collection.objects.filter(slug=slug).first()
            role = role_of(request.user, collection) if collection is not None else None
            if role is None:
                raise Http404("No such collection, or you are not one of its members.")
            request.collection_role = role  # type: ignore[attr-defined]
            if label:
                _require_labeler(request)
            return view(request, collection, *args, **kwargs)

        return wrapper

    return decorate


def _require_labeler(request: HttpRequest) -> None:
    role = request.collection_role  # type: ignore[attr-defined]
    if ROLE_RANK[Role(role)] < ROLE_RANK[Role.REVIEWER]:
        raise PermissionDenied("Labeling needs the reviewer role in this collection.")


# -- shared bits ----------------------------------------------------------------------------


def _grades(collection: Collection) -> list[dict[str, Any]]:
    return [
        {
            "grade": int(g["grade"]),
            "name": g["name"],
            "relevant": collection.is_relevant_grade(int(g["grade"])),
        }
        for g in collection.scale
    ]


def _grade_label(collection: Collection, grade: int | None) -> str:
    return "none" if grade is None else f"{grade} {collection.grade_name(grade)}"


def _marked(text: str, terms: frozenset[str]) -> SafeString:
    return highlight(text or "", terms)


def _sources(task: ReviewTask) -> list[str]:
    """Where the task's pair was surfaced, best rank first: "run bm25, rank 3"."""
    rows = [(s.label, s.rank) for s in task.sources.all()] or [(task.source, task.best_rank)]
    return [f"{label}, rank {rank}" if rank is not None else label for label, rank in rows]


def _already_saved(error: JudgmentConflict, request: HttpRequest, *, grade: int, note: str) -> bool:
    """The "conflict" is this reviewer's own identical change, sent twice (a double
    click, a retried request): nothing to choose between, so it is not shown as one."""
    current = error.current
    return current.reviewer_id == request.user.pk and (current.grade, current.note) == (
        grade,
        note,
    )


def _conflict(
    collection: Collection, error: JudgmentConflict, *, grade: int, note: str
) -> dict[str, Any]:
    theirs: Judgment = error.current
    return {
        "mine_grade": grade,
        "mine_label": _grade_label(collection, grade),
        "mine_note": note,
        "theirs": theirs,
        "theirs_label": _grade_label(collection, theirs.grade),
        "theirs_by": theirs.reviewer.get_username() if theirs.reviewer else "an import",
        "based_on": error.expected_version,
    }


# -- home and collection --------------------------------------------------------------------


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


# -- the review queue -----------------------------------------------------------------------


class ReviewSession:
    """This browser session's work in one collection's queue, kept in the session: the
    ids of the history rows its judgments wrote (the undo stack, newest last) and how
    many judgments it recorded."""

    def __init__(self, request: HttpRequest, collection: Collection) -> None:
        self.request = request
        self.key = f"verity.review.{collection.pk}"
        state = request.session.get(self.key) or {}
        self.changes: list[int] = [int(c) for c in state.get("changes", [])]
        self.judged = int(state.get("judged", 0))

    def push(self, change_id: int) -> None:
        self.changes = [*self.changes, change_id][-UNDO_DEPTH:]
        self.judged += 1
        self._save()

    def pop(self, *, undone_creation: bool) -> None:
        self.changes = self.changes[:-1]
        if undone_creation:
            self.judged = max(0, self.judged - 1)
        self._save()

    def _save(self) -> None:
        self.request.session[self.key] = {"changes": self.changes, "judged": self.judged}


def _queue_response(
    request: HttpRequest,
    collection: Collection,
    session: ReviewSession,
    *,
    task: ReviewTask | None,
    message: str = "",
    error: str = "",
    conflict: dict[str, Any] | None = None,
    note: str = "",
    status: int = 200,
    keep_panel: bool = False,
    extra: dict[str, Any] | None = None,
) -> HttpResponse:
    """The queue's answer: JSON (with the panel's HTML) to the script, else a redirect
    after a successful POST, else the whole page."""
    if not wants_json(request) and request.method == "POST" and status == 200:
        if message:
            messages.success(request, message)
        if error:
            messages.error(request, error)
        return redirect("judgments:review", slug=collection.slug)
    if task is not None:
        task = task_for_review(collection, task.pk)
    n_open, n_claimed = queue_progress(collection)
    context: dict[str, Any] = {
        "collection": collection,
        "task": task,
        "grades": _grades(collection),
        "can_undo": bool(session.changes),
        "conflict": conflict,
        "error": error,
        "message": message,
        "note": note,
        "n_open": n_open,
        "n_claimed": n_claimed,
        "judged_session": session.judged,
        "no_answer": QueryStatus.NO_ANSWER,
    }
    if task is not None:
        terms = query_terms(task.query.text)
        context["title_html"] = _marked(task.item.title, terms)
        context["text_html"] = _marked(task.item.text, terms)
        context["sources"] = _sources(task)
    if not wants_json(request):
        return render(request, "judgments/review.html", context, status=status)
    data: dict[str, Any] = {
        "ok": not error and conflict is None,
        "message": message,
        "error": error,
        "conflict": conflict is not None,
        "progress": {"open": n_open, "claimed": n_claimed, "judged_session": session.judged},
        "task": None
        if task is None
        else {"id": task.pk, "query": task.query.external_id, "item": task.item.external_id},
        "can_undo": bool(session.changes),
        **(extra or {}),
    }
    if not keep_panel:
        data["html"] = render_to_string("judgments/_queue_panel.html", context, request=request)
    return JsonResponse(data, status=status)


def _queue_task(collection: Collection, task_id: int) -> ReviewTask:
    try:
        return task_for_review(collection, task_id, sources=False)
    except ReviewTask.DoesNotExist:
        raise Http404("No such review task in this collection.") from None


def _invalid(request: HttpRequest, form: Any) -> HttpResponse:
    problems = "; ".join(f"{field}: {' '.join(errs)}" for field, errs in form.errors.items())
    text = f"Nothing was saved: the request was malformed ({problems}). Reload the page."
    if wants_json(request):
        return JsonResponse({"ok": False, "error": text}, status=400)
    return HttpResponse(text, status=400, content_type="text/plain; charset=utf-8")


@require_GET
@member_view(label=True)
def review(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Claim the next task for this reviewer (or get back the one they hold) and show it."""
    session = ReviewSession(request, collection)
    task = claim_next_task(reviewer=request.user, collection=collection)
    return _queue_response(request, collection, session, task=task)


@require_POST
@member_view(label=True)
def review_judge(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Record the grade of the task on screen, then claim the next one."""
    form = QueueJudgeForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    data = form.cleaned_data
    task = _queue_task(collection, data["task"])
    session = ReviewSession(request, collection)
    try:
        judgment = record_judgment(
            query=task.query,
            item=task.item,
            grade=data["grade"],
            note=data["note"],
            reviewer=request.user,
            expected_version=data["expected_version"],
            source=ChangeSource.UI,
        )
    except JudgmentConflict as e:
        if _already_saved(e, request, grade=data["grade"], note=data["note"]):
            next_task = claim_next_task(reviewer=request.user, collection=collection)
            label = _grade_label(collection, data["grade"])
            return _queue_response(
                request,
                collection,
                session,
                task=next_task,
                message=f"Already saved: {label} for item '{task.item.external_id}'.",
            )
        conflict = _conflict(collection, e, grade=data["grade"], note=data["note"])
        return _queue_response(
            request,
            collection,
            session,
            task=task,
            conflict=conflict,
            error="Not saved: someone else judged this item first. Choose which grade stays.",
            status=409,
        )
    except InvariantError as e:
        return _queue_response(
            request,
            collection,
            session,
            task=task,
            error=f"Not saved: {e}.",
            note=data["note"],
            status=400,
            keep_panel=True,
        )
    change = change_that_made(judgment, request.user)
    session.push(change.pk)
    label = _grade_label(collection, judgment.grade)
    next_task = claim_next_task(reviewer=request.user, collection=collection)
    return _queue_response(
        request,
        collection,
        session,
        task=next_task,
        message=f"Saved {label} for item '{task.item.external_id}' "
        f"(query '{task.query.external_id}').",
        extra={
            "recorded": {
                "query": task.query.external_id,
                "item": task.item.external_id,
                "grade": judgment.grade,
                "version": judgment.version,
                "change": change.pk,
            }
        },
    )


@require_POST
@member_view(label=True)
def review_skip(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Give the task on screen back to the others and show the next one."""
    form = QueueTaskForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    task = _queue_task(collection, form.cleaned_data["task"])
    session = ReviewSession(request, collection)
    try:
        skip_task(task=task, reviewer=request.user)
    except InvariantError as e:
        next_task = claim_next_task(reviewer=request.user, collection=collection)
        return _queue_response(
            request, collection, session, task=next_task, error=f"Not skipped: {e}.", status=409
        )
    next_task = claim_next_task(reviewer=request.user, collection=collection)
    return _queue_response(
        request,
        collection,
        session,
        task=next_task,
        message=f"Skipped item '{task.item.external_id}' (query '{task.query.external_id}'); "
        "it goes to the other reviewers.",
        extra={"skipped": {"query": task.query.external_id, "item": task.item.external_id}},
    )


@require_POST
@member_view(label=True)
def review_undo(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Undo this session's latest judgment in the queue, if nobody changed it since."""
    session = ReviewSession(request, collection)
    last = session.changes[-1] if session.changes else None
    change = judgment_changes([last]).get(last) if last is not None else None
    if change is None:
        if session.changes:  # a history row that vanished with its collection
            session.pop(undone_creation=False)
        next_task = claim_next_task(reviewer=request.user, collection=collection)
        return _queue_response(
            request,
            collection,
            session,
            task=next_task,
            error="Nothing to undo: you have not judged anything in this queue in this session.",
            status=400 if wants_json(request) else 200,
        )
    where = f"item '{change.item.external_id}' (query '{change.query.external_id}')"
    try:
        undone = undo_judgment_change(change=change, reviewer=request.user)
    except JudgmentConflict as e:
        session.pop(undone_creation=False)
        theirs = _conflict(collection, e, grade=change.new_grade, note=change.new_note)
        error = (
            f"Not undone: {theirs['theirs_by']} changed {where} since; it is now "
            f"{theirs['theirs_label']} (version {e.current.version}). Nothing was changed; "
            "edit it on the query page if it should change."
        )
    except InvariantError as e:
        session.pop(undone_creation=False)
        error = f"Not undone: {e}."
    else:
        session.pop(undone_creation=undone.judgment is None)
        before = _grade_label(collection, change.new_grade)
        if undone.judgment is None:
            message = f"Undone: {before} for {where}. It is unjudged again and back on screen."
        else:
            restored = _grade_label(collection, undone.judgment.grade)
            message = f"Undone: {before} for {where}; restored {restored}."
        task = undone.task or claim_next_task(reviewer=request.user, collection=collection)
        return _queue_response(
            request,
            collection,
            session,
            task=task,
            message=message,
            extra={
                "undone": {
                    "query": change.query.external_id,
                    "item": change.item.external_id,
                    "grade": change.new_grade,
                    "restored": undone.judgment.grade if undone.judgment else None,
                }
            },
        )
    next_task = claim_next_task(reviewer=request.user, collection=collection)
    return _queue_response(
        request,
        collection,
        session,
        task=next_task,
        error=error,
        status=409 if wants_json(request) else 200,
    )


# -- one query ------------------------------------------------------------------------------


def _query_or_404(collection: Collection, external_id: str) -> Query:
    try:
        return query_in(collection, external_id)
    except Query.DoesNotExist:
        raise Http404(f"No query '{external_id}' in this collection.") from None


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
) -> HttpResponse:
    terms = query_terms(query.text)
    judged = [
        {
            "judgment": j,
            "title_html": _marked(j.item.title, terms),
            "text_html": _marked(j.item.text, terms),
            "label": _grade_label(collection, j.grade),
        }
        for j in judgments_for_query(query)
    ]
    waiting = [
        {
            "task": t,
            "title_html": _marked(t.item.title, terms),
            "text_html": _marked(t.item.text, terms),
            "sources": _sources(t),
        }
        for t in open_tasks_for_query(query)
    ]
    evidence = evidence_of(query)
    if evidence_form is None:
        evidence_form = EvidenceForm(
            initial={"groups": format_evidence(evidence.groups if evidence else None)}
        )
    n_relevant = sum(1 for row in judged if collection.is_relevant_grade(row["judgment"].grade))
    return render(
        request,
        "judgments/query.html",
        {
            "collection": collection,
            "query": query,
            "judged": judged,
            "waiting": waiting,
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
        },
        status=status,
    )


def _query_url(collection: Collection, query: Query, anchor: str = "") -> str:
    url = reverse("judgments:query", args=[collection.slug, query.external_id])
    return f"{url}#{anchor}" if anchor else url


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
    try:
        judgment = record_judgment(
            query=query,
            item=item,
            grade=data["grade"],
            note=data["note"],
            reviewer=request.user,
            expected_version=data["expected_version"],
            source=ChangeSource.UI,
        )
    except JudgmentConflict as e:
        if _already_saved(e, request, grade=data["grade"], note=data["note"]):
            label = _grade_label(collection, data["grade"])
            messages.success(request, f"Already saved: {label} for item '{item.external_id}'.")
            return redirect(_query_url(collection, query, f"item-{item.pk}"))
        conflict = _conflict(collection, e, grade=data["grade"], note=data["note"])
        conflict["item"] = item
        return _render_query(request, collection, query, status=409, conflict=conflict)
    except InvariantError as e:
        return _render_query(
            request,
            collection,
            query,
            status=400,
            grade_error=f"Not saved: {e}.",
            error_item=item.external_id,
        )
    messages.success(
        request,
        f"Saved {_grade_label(collection, judgment.grade)} for item '{item.external_id}' "
        f"(version {judgment.version}).",
    )
    return redirect(_query_url(collection, query, f"item-{item.pk}"))


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


_QUERY_ACTIONS = {"grade": _post_grade, "status": _post_status, "evidence": _post_evidence}


@require_http_methods(["GET", "POST"])
@member_view()
def query_detail(request: HttpRequest, collection: Collection, external_id: str) -> HttpResponse:
    """One query: its judgments (editable), its open tasks, its status and evidence.
    Each form posts here with an ``action``; each action calls one service."""
    query = _query_or_404(collection, external_id)
    if request.method == "GET":
        return _render_query(request, collection, query)
    _require_labeler(request)
    action = _QUERY_ACTIONS.get(request.POST.get("action", ""))
    if action is None:
        return HttpResponse(
            "Unknown action; use grade, status or evidence.",
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    return action(request, collection, query)
