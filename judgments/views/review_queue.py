"""The review queue: claim the next task, judge it, skip it, undo the session's latest
judgment, and settle a query's status when its last item is judged.

No GET writes: the queue's page shows the task the reviewer holds, or a button that
claims the next one by POST (``review_claim``), which its script presses on load.

Review goes a query at a time (``claim_next_task``): within the scope (the whole
collection, ``?query=ID``, ``?tag=TAG`` or a focus set's ``?scope=NAME``) the queue
serves the open items of the query just worked on before it moves to the next one. When
a query has no open item left, the queue stops on it and offers to settle its review
status with one key.

The queue's POST endpoints answer JSON to the page's script (``Accept: application/json``),
with the next panel as server-rendered HTML, and redirect or render a whole page otherwise,
so the queue also works without JavaScript. Nothing is ever saved over someone else's
change: a stale edit renders both values and waits for the reviewer to choose.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from ..extensions import grade_recorded
from ..forms import QueueJudgeForm, QueueStatusForm, QueueTaskForm
from ..highlight import query_terms
from ..models import (
    Assessment,
    ChangeSource,
    Collection,
    Query,
    QueryStatus,
    ReviewTask,
)
from ..selectors import (
    QUEUE_COUNT_CAP,
    QueryProgress,
    judgment_changes,
    may_adjudicate,
    open_adjudications,
    open_count_shown,
    open_tasks_of,
    query_in,
    query_progress,
    queue_progress,
    task_for_review,
    why_not_yours,
)
from ..services import (
    InvariantError,
    JudgmentConflict,
    assess_task,
    change_own_assessment,
    set_query_status,
    skip_task,
    undo_judgment_change,
)
from .common import (
    _conflict,
    _grade_label,
    _grades,
    _invalid,
    _marked,
    _sources,
    member_view,
    wants_json,
)
from .grading import grade_item
from .review_scope import ReviewScope, ReviewSession


class Queue:
    """One request to the queue: the reviewer's session and scope in one collection."""

    def __init__(self, request: HttpRequest, collection: Collection) -> None:
        self.request, self.collection = request, collection
        self.session = ReviewSession(request, collection)
        self.scope = ReviewScope.of(request, collection)

    def claim(self, *, current: int | None = None) -> ReviewTask | None:
        return self.scope.claim(self.request, self.collection, current=current)

    def held(self) -> ReviewTask | None:
        return self.scope.held(self.request, self.collection)

    def answer(self, **kwargs: Any) -> HttpResponse:
        return _queue_response(self.request, self.collection, self.session, self.scope, **kwargs)


def _queue_response(
    request: HttpRequest,
    collection: Collection,
    session: ReviewSession,
    scope: ReviewScope,
    *,
    task: ReviewTask | None,
    finished: QueryProgress | None = None,
    message: str = "",
    error: str = "",
    conflict: dict[str, Any] | None = None,
    note: str = "",
    status: int = 200,
    keep_panel: bool = False,
    offer_claim: bool = False,
    page: bool = False,
    extra: dict[str, Any] | None = None,
    changing: Any = None,
) -> HttpResponse:
    """The queue's answer: JSON (with the panel's HTML) to the script, else a redirect
    after a successful POST, else the whole page. ``offer_claim``: nothing is held, so
    the panel is the button that claims the next task (a GET never claims one).
    ``page``: the whole page even after a POST."""
    if not wants_json(request) and request.method == "POST" and status == 200 and not page:
        if message:
            messages.success(request, message)
        if error:
            messages.error(request, error)
        return redirect(reverse("judgments:review", args=[collection.slug]) + scope.suffix)
    if task is not None:
        task = task_for_review(collection, task.pk)
    # Open tasks counted up to the cap: above it the page says "more than 1,000" (and the
    # JSON's progress.open is that text), so that a queue of 100,000 costs no more per
    # key press than one of 1,000. n_open stays a number for the template's conditions.
    n_open, n_claimed = queue_progress(collection, open_cap=QUEUE_COUNT_CAP)
    n_open_shown = open_count_shown(n_open, cap=QUEUE_COUNT_CAP)
    context: dict[str, Any] = {
        "collection": collection,
        "task": task,
        "finished": finished,
        "scope": scope,
        "grades": _grades(collection),
        "can_undo": bool(session.changes),
        "conflict": conflict,
        "error": error,
        "message": message,
        "note": note,
        "n_open": n_open,
        "n_open_shown": n_open_shown,
        "n_claimed": n_claimed,
        "judged_session": session.judged,
        "no_answer": QueryStatus.NO_ANSWER,
        "offer_claim": offer_claim and task is None and finished is None and n_open > 0,
        "changing": changing,
        "changing_label": _grade_label(collection, changing.grade) if changing else "",
    }
    if task is None and finished is None and not context["offer_claim"]:
        # The end of the queue: why the open tasks left are not this reviewer's, and
        # what awaits an adjudicator (for those who may decide it).
        context["left"] = why_not_yours(request.user, collection)
        if may_adjudicate(request.user, collection):
            context["n_adjudication"] = open_adjudications(collection).count()
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
        "progress": {
            "open": n_open if n_open <= QUEUE_COUNT_CAP else n_open_shown,
            "claimed": n_claimed,
            "judged_session": session.judged,
        },
        "task": None
        if task is None
        else {"id": task.pk, "query": task.query.external_id, "item": task.item.external_id},
        "can_undo": bool(session.changes),
        "finished": None
        if finished is None
        else {
            "query": finished.query.external_id,
            "status": finished.query.status,
            # with several assessors, the resolved labels stay unsaid (blind)
            "suggested": None if collection.has_overlap else finished.suggested_status,
        },
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
    """Show the task this reviewer holds in the scope, if any; else the button that claims
    the next one (``review_claim``), which the page's script presses at once. A read:
    no lease is taken, extended or released here."""
    queue = Queue(request, collection)
    return queue.answer(task=queue.held(), offer_claim=True)


@require_POST
@member_view(label=True)
def review_claim(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Claim the next task in the scope (or get back the one held), then show it: JSON to
    the script; else 303 to the queue's page, which shows the task now held, or the page
    itself when nothing is left to claim (a redirect would offer the button again)."""
    queue = Queue(request, collection)
    task = queue.claim()
    if task is not None and not wants_json(request):
        url = reverse("judgments:review", args=[collection.slug]) + queue.scope.suffix
        return HttpResponseRedirect(url, status=303)
    return queue.answer(task=task, page=True)


def _next_after(queue: Queue, query: Query) -> tuple[ReviewTask | None, QueryProgress | None, str]:
    """After a grade of ``query``'s item: stop on the query when nothing of it is open any
    more (to settle its status), else claim its next item, or the next query's."""
    n = open_tasks_of(query)
    if n == 0:
        return None, query_progress(query), ""
    task = queue.claim(current=query.pk)
    note = ""
    if (task is None or task.query_id != query.pk) and queue.collection.has_overlap:
        note = (
            f" Query '{query.external_id}' has {n} open assessment{'s' if n != 1 else ''} "
            "left for other reviewers (you assessed, skipped or hold those items)."
        )
    elif (task is None or task.query_id != query.pk) and queue.scope.focus is not None:
        # Its other open items are mostly pooled ones outside the focus set.
        note = (
            f" Query '{query.external_id}' has {n} open item{'s' if n != 1 else ''} that "
            f"{queue.scope.focus.name} does not serve you (outside it, skipped by you, or "
            "held by another reviewer)."
        )
    elif task is None or task.query_id != query.pk:
        note = (
            f" Query '{query.external_id}' has {n} open item{'s' if n != 1 else ''} that "
            "you skipped or another reviewer holds."
        )
    return task, None, note


@require_POST
@member_view(label=True)
def review_judge(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Record the grade of the task on screen, then serve the query's next item, or stop
    on the query to settle its status when none of its items is open any more."""
    form = QueueJudgeForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    data = form.cleaned_data
    task = _queue_task(collection, data["task"])
    queue = Queue(request, collection)
    if collection.has_overlap and data.get("assessment"):
        return _change_assessment(queue, task, data)
    if collection.has_overlap:
        return _assess(queue, task, grade=data["grade"], note=data["note"])
    graded = grade_item(
        request,
        collection,
        query=task.query,
        item=task.item,
        grade=data["grade"],
        note=data["note"],
        expected_version=data["expected_version"],
        source=ChangeSource.UI,
        # in the judgment's own transaction: the grade and what listeners record of it
        # (a decision about a shown proposal), or neither; no savepoint of its own
        on_saved=lambda judgment: grade_recorded(judgment, request.user, request.POST),
    )
    if graded.conflict is not None or graded.error:
        return queue.answer(
            task=task,
            conflict=graded.conflict,
            error=graded.error,
            note=data["note"],
            status=graded.status,
            keep_panel=graded.conflict is None,
        )
    extra: dict[str, Any] = {}
    if graded.saved:
        queue.session.push(graded.change_id)  # type: ignore[arg-type]
        judgment = graded.judgment
        assert judgment is not None
        extra["recorded"] = {
            "query": task.query.external_id,
            "item": task.item.external_id,
            "grade": judgment.grade,
            "version": judgment.version,
            "change": graded.change_id,
        }
    next_task, finished, note = _next_after(queue, task.query)
    return queue.answer(
        task=next_task,
        finished=finished,
        message=graded.message + note,
        extra=extra,
    )


def _assess(queue: Queue, task: ReviewTask, *, grade: int, note: str) -> HttpResponse:
    """Several assessors per item: record this reviewer's blind assessment of the task's
    pair (the pair resolves once all its assessors have spoken), then go on as after a
    judgment. Nothing about the other assessors' grades is shown."""
    collection = queue.collection
    try:
        assessment = assess_task(task=task, reviewer=queue.request.user, grade=grade, note=note)
    except InvariantError as e:
        return queue.answer(task=task, error=f"Not saved: {e}.", status=400, keep_panel=True)
    queue.session.push(f"a{assessment.pk}")
    next_task, finished, more = _next_after(queue, task.query)
    return queue.answer(
        task=next_task,
        finished=finished,
        message=f"Saved your assessment {_grade_label(collection, grade)} for item "
        f"'{task.item.external_id}' of query '{task.query.external_id}'." + more,
        extra={
            "assessed": {
                "query": task.query.external_id,
                "item": task.item.external_id,
                "grade": grade,
            }
        },
    )


def _own_assessment(queue: Queue, pk: int) -> Assessment | None:
    return (
        Assessment.objects.filter(pk=pk, collection=queue.collection, assessor=queue.request.user)
        .select_related("query", "item")
        .first()
    )


def _change_assessment(queue: Queue, task: ReviewTask, data: dict[str, Any]) -> HttpResponse:
    """The reviewer's change of their own assessment, brought back on screen by ``u``."""
    collection = queue.collection
    assessment = _own_assessment(queue, data["assessment"])
    if assessment is None or (assessment.query_id, assessment.item_id) != (
        task.query_id,
        task.item_id,
    ):
        raise Http404("You have no such assessment in this collection.")
    before = assessment.grade
    try:
        change_own_assessment(
            assessment=assessment,
            assessor=queue.request.user,
            grade=data["grade"],
            expected_version=data["expected_version"] or assessment.version,
            note=data["note"],
        )
    except InvariantError as e:
        return queue.answer(task=queue.claim(), error=f"Not changed: {e}.", status=409)
    queue.session.push(f"a{assessment.pk}", counted=False)
    where = f"item '{task.item.external_id}' of query '{task.query.external_id}'"
    message = (
        f"Kept your assessment {_grade_label(collection, before)} for {where}."
        if before == data["grade"]
        else f"Changed your assessment of {where}: {_grade_label(collection, before)} → "
        f"{_grade_label(collection, data['grade'])}."
    )
    return queue.answer(
        task=queue.claim(current=task.query_id),
        message=message,
        extra={
            "assessed": {
                "query": task.query.external_id,
                "item": task.item.external_id,
                "grade": data["grade"],
            }
        },
    )


def _undo_assessment(queue: Queue, entry: str) -> HttpResponse:
    """``u`` after an assessment: bring the pair back on screen to change the grade (the
    assessment stays until another grade is chosen). A settled label stands whatever
    grade is chosen then (``change_own_assessment``); saying so would tell the assessor
    the pair was adjudicated."""
    queue.session.pop(undone_creation=False)
    assessment = _own_assessment(queue, int(entry[1:]))
    if assessment is None:
        return queue.answer(
            task=queue.claim(),
            error="Nothing to undo: that assessment is gone.",
            status=400 if wants_json(queue.request) else 200,
        )
    slot = (
        ReviewTask.objects.filter(query=assessment.query, item=assessment.item)
        .order_by("slot")
        .first()
    )
    if slot is None:  # an assessment made outside the queue has no task to show it by
        return queue.answer(
            task=queue.claim(),
            error="Not undone here: change that assessment on its query page.",
            status=400 if wants_json(queue.request) else 200,
        )
    label = _grade_label(queue.collection, assessment.grade)
    return queue.answer(
        task=slot,
        changing=assessment,
        message=f"You assessed item '{assessment.item.external_id}' as {label}: press "
        "another grade to change it, the same one to keep it.",
        extra={
            "changing": {
                "query": assessment.query.external_id,
                "item": assessment.item.external_id,
                "grade": assessment.grade,
            }
        },
    )


@require_POST
@member_view(label=True, labels=True)  # the status rule reads the labels
def review_settle(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Set the review status of the query just finished (``set_query_status``, with its
    history row), then start the next query."""
    form = QueueStatusForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    queue = Queue(request, collection)
    try:
        query = query_in(collection, form.cleaned_data["query"])
    except Query.DoesNotExist:
        raise Http404("No such query in this collection.") from None
    try:
        query = set_query_status(query=query, status=form.cleaned_data["status"], by=request.user)
    except InvariantError as e:
        return queue.answer(
            task=None,
            finished=query_progress(query),
            error=f"Status not changed: {e}.",
            status=400 if wants_json(request) else 200,
        )
    task = queue.claim()
    return queue.answer(
        task=task,
        message=f"Query '{query.external_id}' is now '{query.get_status_display()}'.",
        extra={"settled": {"query": query.external_id, "status": query.status}},
    )


@require_POST
@member_view(label=True)
def review_skip(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Give the task on screen back to the others and show the next one."""
    form = QueueTaskForm(request.POST)
    if not form.is_valid():
        return _invalid(request, form)
    task = _queue_task(collection, form.cleaned_data["task"])
    queue = Queue(request, collection)
    try:
        skip_task(task=task, reviewer=request.user)
    except InvariantError as e:
        next_task = queue.claim(current=task.query_id)
        return queue.answer(
            task=next_task,
            error=f"Not skipped: {e}.",
            status=409,
        )
    next_task = queue.claim(current=task.query_id)
    return queue.answer(
        task=next_task,
        message=f"Skipped item '{task.item.external_id}' (query '{task.query.external_id}'); "
        "it goes to the other reviewers.",
        extra={"skipped": {"query": task.query.external_id, "item": task.item.external_id}},
    )


@require_POST
@member_view(label=True)
def review_undo(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Undo this session's latest judgment in the queue, if nobody changed it since."""
    queue = Queue(request, collection)
    last = queue.session.changes[-1] if queue.session.changes else None
    if isinstance(last, str):
        return _undo_assessment(queue, last)
    change = judgment_changes([last]).get(last) if last is not None else None
    if change is None:
        if queue.session.changes:  # a history row that vanished with its collection
            queue.session.pop(undone_creation=False)
        next_task = queue.claim()
        return queue.answer(
            task=next_task,
            error="Nothing to undo: you have not judged anything in this queue in this session.",
            status=400 if wants_json(request) else 200,
        )
    where = f"item '{change.item.external_id}' (query '{change.query.external_id}')"
    try:
        undone = undo_judgment_change(change=change, reviewer=request.user)
    except JudgmentConflict as e:
        queue.session.pop(undone_creation=False)
        theirs = _conflict(
            collection, e, grade=change.new_grade, note=change.new_note, me=request.user
        )
        error = (
            f"Not undone: {theirs['theirs_by']} changed {where} since; it is now "
            f"{theirs['theirs_label']} (version {e.current.version}). Nothing was changed; "
            "edit it on the query page if it should change."
        )
    except InvariantError as e:
        queue.session.pop(undone_creation=False)
        error = f"Not undone: {e}."
    else:
        queue.session.pop(undone_creation=undone.judgment is None)
        before = _grade_label(collection, change.new_grade)
        if undone.judgment is None:
            message = f"Undone: {before} for {where}. It is unjudged again and back on screen."
        else:
            restored = _grade_label(collection, undone.judgment.grade)
            message = f"Undone: {before} for {where}; restored {restored}."
        task = undone.task or queue.claim(current=change.query_id)
        return queue.answer(
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
    next_task = queue.claim(current=change.query_id)
    return queue.answer(
        task=next_task,
        error=error,
        status=409 if wants_json(request) else 200,
    )
