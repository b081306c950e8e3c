"""The review queue's state in one request: the session's undo stack and count
(``ReviewSession``) and the scope the queue serves (``ReviewScope``: the whole
collection, one query, one tag, or a focus set's pairs)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import Http404, HttpRequest

from ..models import Collection, FocusSet, Query, ReviewTask
from ..selectors import focus_set_in, held_task_for, query_in
from ..services import claim_next_task

UNDO_DEPTH = 200  # changes remembered per collection and session


class ReviewSession:
    """This browser session's work in one collection's queue, kept in the session: the
    undo stack, newest last (the ids of the history rows its judgments wrote, and
    ``"a<pk>"`` for an assessment it recorded, with several assessors per item), and how
    many items it judged or assessed."""

    def __init__(self, request: HttpRequest, collection: Collection) -> None:
        self.request = request
        self.key = f"verity.review.{collection.pk}"
        state = request.session.get(self.key) or {}
        self.changes: list[int | str] = [
            c if isinstance(c, str) and c.startswith("a") else int(c)
            for c in state.get("changes", [])
        ]
        self.judged = int(state.get("judged", 0))

    def push(self, change_id: int | str, *, counted: bool = True) -> None:
        self.changes = [*self.changes, change_id][-UNDO_DEPTH:]
        if counted:
            self.judged += 1
        self._save()

    def pop(self, *, undone_creation: bool) -> None:
        self.changes = self.changes[:-1]
        if undone_creation:
            self.judged = max(0, self.judged - 1)
        self._save()

    def _save(self) -> None:
        self.request.session[self.key] = {"changes": self.changes, "judged": self.judged}


@dataclass(frozen=True)
class ReviewScope:
    """Which tasks the queue serves: one query (``?query=ID``), the queries with one tag
    (``?tag=TAG``), the pairs of a focus set (``?scope=NAME``: e.g. the pairs that could
    change a comparison), or every query (the default). Carried in the URLs' query
    string, so that each tab keeps its own scope."""

    query: Query | None = None
    tag: str = ""
    focus: FocusSet | None = None

    @classmethod
    def of(cls, request: HttpRequest, collection: Collection) -> ReviewScope:
        query_id = request.GET.get("query", "")
        tag = request.GET.get("tag", "").strip()
        name = request.GET.get("scope", "").strip()
        if name:
            try:
                return cls(focus=focus_set_in(collection, name))
            except FocusSet.DoesNotExist:
                raise Http404(f"No focus set '{name}' in this collection.") from None
        if not query_id:
            return cls(tag=tag)
        try:
            return cls(query=query_in(collection, query_id))
        except Query.DoesNotExist:
            raise Http404(f"No query '{query_id}' in this collection.") from None

    @property
    def suffix(self) -> str:
        """``?query=…`` / ``?tag=…`` / ``?scope=…`` for the queue's URLs, or ``""``."""
        if self.focus is not None:
            return "?" + urlencode({"scope": self.focus.name})
        if self.query is not None:
            return "?" + urlencode({"query": self.query.external_id})
        return "?" + urlencode({"tag": self.tag}) if self.tag else ""

    @property
    def narrowed(self) -> bool:
        return self.query is not None or bool(self.tag) or self.focus is not None

    def held(self, request: HttpRequest, collection: Collection) -> ReviewTask | None:
        """The task this reviewer holds in this scope, read only."""
        return held_task_for(
            request.user, collection, query=self.query, tag=self.tag or None, focus=self.focus
        )

    def claim(
        self, request: HttpRequest, collection: Collection, *, current: int | None = None
    ) -> ReviewTask | None:
        """The next task in this scope, staying on query ``current`` while it has any."""
        return claim_next_task(
            reviewer=request.user,
            collection=collection,
            query=self.query,
            tag=self.tag or None,
            focus=self.focus,
            current_query_id=current,
        )


__all__ = ["UNDO_DEPTH", "ReviewScope", "ReviewSession"]
