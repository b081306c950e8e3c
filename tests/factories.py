"""Plain factory functions: sensible defaults, every field overridable by keyword.

Collections and judgments are made through the services, so a factory can never build
state that the application itself would refuse; queries and items have no service of
their own and are created directly.
"""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model

from judgments.models import ChangeSource, Collection, Item, Judgment, Query
from judgments.services import create_collection, record_judgment

_serial = itertools.count(1)

GRADED_SCALE = [
    {"grade": 0, "name": "not relevant"},
    {"grade": 1, "name": "related"},
    {"grade": 2, "name": "relevant"},
    {"grade": 3, "name": "perfect"},
]
BINARY_SCALE = [
    {"grade": 0, "name": "not relevant"},
    {"grade": 1, "name": "relevant"},
]


def make_user(username: str | None = None, **fields: Any) -> Any:
    username = username or f"reviewer-{next(_serial)}"
    return get_user_model().objects.create_user(username=username, **fields)


def make_collection(
    *,
    slug: str | None = None,
    scale: list[dict[str, Any]] | None = None,
    relevant_grade: int = 2,
    **fields: Any,
) -> Collection:
    """A graded (0..3, relevant from 2) document collection unless told otherwise."""
    slug = slug or f"collection-{next(_serial)}"
    return create_collection(
        slug=slug,
        name=fields.pop("name", slug.replace("-", " ").title()),
        scale=GRADED_SCALE if scale is None else scale,
        relevant_grade=relevant_grade,
        **fields,
    )


def make_query(collection: Collection, *, external_id: str | None = None, **fields: Any) -> Query:
    external_id = external_id or f"q{next(_serial)}"
    fields.setdefault("text", f"query {external_id}")
    return Query.objects.create(collection=collection, external_id=external_id, **fields)


def make_item(collection: Collection, *, external_id: str | None = None, **fields: Any) -> Item:
    external_id = external_id or f"doc-{next(_serial)}"
    fields.setdefault("title", f"Document {external_id}")
    fields.setdefault("text", f"Text of {external_id}.")
    return Item.objects.create(collection=collection, external_id=external_id, **fields)


def make_judgment(
    *,
    query: Query,
    item: Item | None = None,
    grade: int,
    reviewer: Any = None,
    note: str = "",
    source: str = ChangeSource.UI,
) -> Judgment:
    """A new judgment (version 1) through ``record_judgment``; makes the item if not given."""
    return record_judgment(
        query=query,
        item=item if item is not None else make_item(query.collection),
        grade=grade,
        reviewer=reviewer,
        expected_version=None,
        note=note,
        source=source,
    )


def make_proposal(
    *, query: Query, item: Item, grade: int | None, judge: str = "local-baseline", **fields: Any
) -> Any:
    """A stored proposal of ``judge`` (the offline baseline's provenance by default);
    ``grade=None`` makes a failed one. Created directly: in the app only a judging job
    stores proposals, after asking a model."""
    from judges.models import Proposal, ProposalState, Provider

    fields.setdefault("failure_reason", "" if grade is not None else "no grade in the answer")
    return Proposal.objects.create(
        collection=query.collection,
        query=query,
        item=item,
        judge=judge,
        provider=Provider.LOCAL,
        model="wordllama test",
        prompt_version="baseline-v1",
        prompt_hash="0" * 64,
        grade=grade,
        state=ProposalState.OK if grade is not None else ProposalState.FAILED,
        **fields,
    )
