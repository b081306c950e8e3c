"""What the reviewer's pages share: membership and role checks, grade labels, highlighted
text, task sources, conflict panels, and the answer to a malformed form."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.db.models import OuterRef, Subquery
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.safestring import SafeString

from ..extensions import run_names
from ..highlight import highlight
from ..models import Collection, Judgment, Membership, ReviewTask, Role, role_allows
from ..selectors import may_see_labels, role_of
from ..services import JudgmentConflict

# -- access ---------------------------------------------------------------------------------


class RoleRequired(PermissionDenied):
    """A refusal for want of a role: the 403 page names the role to ask a collection
    admin for (``reviewer``, ``evaluator``, ``admin`` or ``adjudicator``) beside the
    reason, and the role the user holds now."""

    def __init__(self, reason: str, *, role: str) -> None:
        super().__init__(reason)
        self.role = role


def wants_json(request: HttpRequest) -> bool:
    """The queue's script asks for JSON first; a browser's own navigation never does."""
    accept = request.headers.get("Accept", "")
    return accept.split(",")[0].strip().startswith("application/json")


def member_view(*, label: bool = False, labels: bool = False) -> Callable[..., Any]:
    """Resolve ``slug`` to a collection the user is a member of, else 404 (a non-member
    learns nothing, not even that it exists). ``label`` also needs the reviewer role;
    every role includes it today, but the rule is stated where it is enforced.
    ``labels``: the page shows the collection's labels or figures derived from them, so
    it needs ``may_see_labels`` (with several assessors per item: evaluators and admins)."""

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
            collection, role = _collection_and_role(request.user, slug)
            if role is None:
                raise Http404("No such collection, or you are not one of its members.")
            request.collection_role = role  # type: ignore[attr-defined]
            request.collection = collection  # type: ignore[attr-defined]  # for the 403 page
            if label:
                _require_labeler(request)
            if labels:
                require_labels(request, collection)
            return view(request, collection, *args, **kwargs)

        return wrapper

    return decorate


def _collection_and_role(user: Any, slug: str) -> tuple[Collection | None, str | None]:
    """The collection named ``slug`` and the user's role in it (``None``: not a member),
    in one query: the role is read beside the collection, not after it."""
    found = Collection.objects.filter(slug=slug)
    if user.is_superuser:
        collection = found.first()
        return collection, role_of(user, collection) if collection is not None else None
    membership = Membership.objects.filter(collection=OuterRef("pk"), user=user)
    collection = found.annotate(held_role=Subquery(membership.values("role")[:1])).first()
    return collection, collection.held_role if collection is not None else None


BLIND_REFUSAL = (
    "This collection has several assessors per item and keeps them blind: a reviewer sees "
    "their own assessments (the review queue, the query page), never the resolved labels "
    "or anything derived from them. This needs the evaluator role."
)


def require_labels(request: HttpRequest, collection: Collection) -> None:
    """Refuse a page that shows labels to a reviewer of a blind collection (the one rule,
    ``may_see_labels``)."""
    if not may_see_labels(request.user, collection):
        raise RoleRequired(BLIND_REFUSAL, role=Role.EVALUATOR)


def _require_labeler(request: HttpRequest) -> None:
    role = request.collection_role  # type: ignore[attr-defined]
    if not role_allows(role, Role.REVIEWER):
        raise RoleRequired(
            "Labeling needs the reviewer role in this collection.", role=Role.REVIEWER
        )


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


_RUN_LABEL = re.compile(r"run (\S+)( / .+)?")


def _sources(task: ReviewTask, runs: set[str] | None = None) -> list[str]:
    """Where the task's pair was surfaced, best rank first: "run bm25, rank 3". A label
    naming a run the collection does not store (one named by imported labels) says so,
    instead of pointing at a run the runs page does not list. ``runs``: the collection's
    run names, when the caller has them (read once per page)."""
    rows = [(s.label, s.rank) for s in task.sources.all()] or [(task.source, task.best_rank)]
    if runs is None:
        runs = (
            run_names(task.collection) if any(_RUN_LABEL.fullmatch(r[0]) for r in rows) else set()
        )
    out = []
    for label, rank in rows:
        match = _RUN_LABEL.fullmatch(label)
        if match and runs is not None and match.group(1) not in runs:
            label = f"{label} (named by imported labels; no such run is stored here)"
        out.append(f"{label}, rank {rank}" if rank is not None else label)
    return out


def _already_saved(error: JudgmentConflict, request: HttpRequest, *, grade: int, note: str) -> bool:
    """The "conflict" is this reviewer's own identical change, sent twice (a double
    click, a retried request): nothing to choose between, so it is not shown as one."""
    current = error.current
    return current.reviewer_id == request.user.pk and (current.grade, current.note) == (
        grade,
        note,
    )


def _conflict(
    collection: Collection, error: JudgmentConflict, *, grade: int, note: str, me: Any = None
) -> dict[str, Any]:
    """Both sides of a stale edit; ``yours`` when the saved side is ``me``'s own (a
    second tab, or a page brought back with Back), so that it is never called "theirs"."""
    theirs: Judgment = error.current
    yours = me is not None and theirs.reviewer_id == me.pk
    return {
        "yours": yours,
        "mine_grade": grade,
        "mine_label": _grade_label(collection, grade),
        "mine_note": note,
        "theirs": theirs,
        "theirs_label": _grade_label(collection, theirs.grade),
        "theirs_by": "you" if yours else (theirs.who or "an import"),
        "based_on": error.expected_version,
    }


def _invalid(request: HttpRequest, form: Any) -> HttpResponse:
    problems = "; ".join(f"{field}: {' '.join(errs)}" for field, errs in form.errors.items())
    text = f"Nothing was saved: the request was malformed ({problems}). Reload the page."
    if wants_json(request):
        return JsonResponse({"ok": False, "error": text}, status=400)
    return HttpResponse(text, status=400, content_type="text/plain; charset=utf-8")
