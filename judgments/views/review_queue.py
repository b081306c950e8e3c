"""The review queue: claim the next task, judge it, skip it, undo the session's latest
judgment.

The queue's POST endpoints answer JSON to the page's script (``Accept: application/json``),
with the next panel as server-rendered HTML, and redirect or render a whole page otherwise,
so the queue also works without JavaScript. Nothing is ever saved over someone else's
change: a stale edit renders both values and waits for the reviewer to choose.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from ..forms import QueueJudgeForm, QueueTaskForm
from ..highlight import query_terms
from ..models import ChangeSource, Collection, QueryStatus, ReviewTask
from ..selectors import change_that_made, judgment_changes, queue_progress, task_for_review
from ..services import (
    InvariantError,
    JudgmentConflict,
    claim_next_task,
    record_judgment,
    skip_task,
    undo_judgment_change,
)
from .common import (
    _already_saved,
    _conflict,
    _grade_label,
    _grades,
    _invalid,
    _marked,
    _sources,
    member_view,
    wants_json,
)

UNDO_DEPTH = 200  # changes remembered per collection and session


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
