"""Setting up a new collection in one step: created, its creator its admin, its review
settings applied, and its start data (TREC files or a JSONL bundle) imported, all in one
transaction: a refused file leaves no collection behind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction

from ..formats import Bundle, CollectionRecord, Where
from ..models import Collection, Role
from .collections import create_collection, update_collection_settings
from .imports import ImportReport, import_collection_data
from .members import set_membership

#: Where a refusal about the collection's own fields points, in a file-and-line list.
FORM = Where("the new-collection form")

#: The settings the new-collection form sets (the others come from a bundle's line).
REVIEW_SETTINGS = ("assessors_per_item", "resolution_policy", "adjudicate_distance")


def _carried(data: Bundle, review: dict[str, Any] | None) -> dict[str, Any]:
    """The settings a bundle's collection line gives that the form does not (whether it
    holds its whole corpus, model labels, the pooling strategy), so the collection is
    the bundle's; and, for a bundle of several assessors per item, the review settings
    (the form's, which must match the line's), set before its assessments are imported,
    as ``import_collection`` sets them. A single-assessor bundle's labels are imported
    first and the form's review settings applied after, as for TREC files."""
    if data.collection is None:
        return {}
    given = data.collection.settings()
    carried = {k: v for k, v in given.items() if k not in REVIEW_SETTINGS}
    if given.get("assessors_per_item", 1) > 1:
        carried.update({k: v for k, v in (review or {}).items() if k in REVIEW_SETTINGS})
    return carried


@transaction.atomic
def set_up_collection(
    *,
    creator: Any,
    slug: str,
    name: str,
    scale: list[dict[str, Any]],
    relevant_grade: int,
    unit: str,
    description: str = "",
    guidelines: str = "",
    pool_depth: int = 10,
    review: dict[str, Any] | None = None,
    data: Bundle | None = None,
    create_missing_items: bool = False,
    set_status: bool = False,
    progress: Callable[[str], None] | None = None,
    request: Any = None,
) -> tuple[Collection, ImportReport | None]:
    """Create the collection (``create_collection``'s rules), make ``creator`` its
    admin, import ``data`` into it when given (``import_collection_data``: all or nothing,
    problems named by file and line; ``data.collection`` is replaced by these fields),
    then apply ``review`` (settings of ``update_collection_settings``, e.g. assessors per
    item: applied after the import, so imported judgments become assessments and open
    tasks get their slots, as for any collection that raises it). Audit rows:
    ``collection.create``, ``member.add``, and ``collection.settings`` when ``review``
    changes a default."""
    fields = {
        "slug": slug,
        "name": name,
        "scale": scale,
        "relevant_grade": relevant_grade,
        "unit": unit,
        "description": description,
        "guidelines": guidelines,
        "pool_depth": pool_depth,
    }
    report = None
    if data is None:
        collection = create_collection(**fields, creator=creator, request=request)
    else:
        data.collection = CollectionRecord(where=FORM, **fields, **_carried(data, review))
        report = import_collection_data(
            data=data,
            create=True,
            create_missing_items=create_missing_items,
            set_status=set_status,
            by=creator,
            progress=progress,
        )
        collection = report.collection
        set_membership(
            collection=collection, user=creator, role=Role.ADMIN, actor=creator, request=request
        )
    changes = {k: v for k, v in (review or {}).items() if getattr(collection, k) != v}
    if changes:
        collection = update_collection_settings(
            collection=collection, actor=creator, request=request, **changes
        )
    return collection, report
