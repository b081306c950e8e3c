"""Grading one item from a page: the one path the queue and the query page share.

It records the grade, and turns what can go wrong into what the reviewer reads: the
same grade sent twice (a double click, a page restored with Back) is "already saved";
a stale page is a conflict that names who saved the newer version, "you" included, and
overwrites nothing; a refused grade says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest

from ..models import Collection, Item, Judgment, Query
from ..selectors import change_that_made
from ..services import InvariantError, JudgmentConflict, record_assessment, record_judgment
from .common import _already_saved, _conflict, _grade_label


@dataclass(frozen=True)
class Graded:
    """What grading did. ``change_id`` is the history row written (``None`` when nothing
    was); ``status`` is the HTTP status the answer should carry."""

    judgment: Judgment | None = None
    change_id: int | None = None
    message: str = ""
    error: str = ""
    conflict: dict[str, Any] | None = None
    status: int = 200

    @property
    def saved(self) -> bool:
        return self.change_id is not None


def grade_item(
    request: HttpRequest,
    collection: Collection,
    *,
    query: Query,
    item: Item,
    grade: int,
    note: str,
    expected_version: int | None,
    source: str,
    on_saved: Callable[[Judgment], None] | None = None,
) -> Graded:
    """Record ``grade`` for (query, item) on behalf of the signed-in reviewer; with
    several assessors per item, as their blind assessment (the pair resolves by policy).
    ``on_saved`` runs inside the judgment's transaction (``record_judgment``)."""
    if collection.has_overlap:
        return _assess_item(
            request,
            collection,
            query=query,
            item=item,
            grade=grade,
            note=note,
            expected_version=expected_version,
            source=source,
        )
    try:
        judgment = record_judgment(
            query=query,
            item=item,
            grade=grade,
            note=note,
            reviewer=request.user,
            expected_version=expected_version,
            source=source,
            on_saved=on_saved,
        )
    except JudgmentConflict as e:
        label = _grade_label(collection, grade)
        if _already_saved(e, request, grade=grade, note=note):
            return Graded(
                judgment=e.current,
                message=f"Already saved: {label} for item '{item.external_id}' of query "
                f"'{query.external_id}'.",
            )
        conflict = _conflict(collection, e, grade=grade, note=note, me=request.user)
        who = (
            "you saved another grade for this item already (another tab, or before going Back)"
            if conflict["yours"]
            else "someone else judged this item first"
        )
        return Graded(
            conflict=conflict, error=f"Not saved: {who}. Choose which grade stays.", status=409
        )
    except InvariantError as e:
        return Graded(error=f"Not saved: {e}.", status=400)
    # The services say which history row they wrote; read it only if one did not.
    change_id = getattr(judgment, "change_id", None)
    if change_id is None:
        change_id = change_that_made(judgment, request.user).pk
    return Graded(
        judgment=judgment,
        change_id=change_id,
        message=f"Saved {_grade_label(collection, judgment.grade)} for item "
        f"'{item.external_id}' (version {judgment.version}) of query '{query.external_id}'.",
    )


def _assess_item(
    request: HttpRequest,
    collection: Collection,
    *,
    query: Query,
    item: Item,
    grade: int,
    note: str,
    expected_version: int | None,
    source: str,
) -> Graded:
    where = f"item '{item.external_id}' of query '{query.external_id}'"
    if expected_version is not None:
        return Graded(
            error=f"Not saved: {collection.name} has {collection.assessors_per_item} assessors "
            f"per item, so the resolved label of {where} changes only by its assessors' "
            "policy or an adjudicator",
            status=400,
        )
    try:
        record_assessment(
            query=query, item=item, grade=grade, assessor=request.user, note=note, source=source
        )
    except InvariantError as e:
        return Graded(error=f"Not saved: {e}.", status=400)
    return Graded(
        message=f"Saved your assessment {_grade_label(collection, grade)} for {where}; "
        "its label is resolved once every assessor has graded it."
    )
