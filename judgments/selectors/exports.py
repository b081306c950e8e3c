"""What an export reads: a collection's judgments, queries and unjudged pairs, and the
whole of it as one bundle of format records."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from ..formats import (
    Bundle,
    CollectionRecord,
    ItemRecord,
    JudgmentRecord,
    QueryRecord,
    UnjudgedRecord,
    Where,
)
from ..models import Collection, Item, Judgment, Query, ReviewTask, TaskStatus


def judgments_of(collection: Collection) -> QuerySet[Judgment]:
    return Judgment.objects.filter(query__collection=collection).select_related(
        "query", "item", "reviewer"
    )


def queries_of(collection: Collection) -> QuerySet[Query]:
    return Query.objects.filter(collection=collection).select_related("evidence")


def unjudged_items_for(collection: Collection) -> QuerySet[ReviewTask]:
    """Open review tasks: pairs that a source surfaced and nobody has judged yet."""
    return (
        ReviewTask.objects.filter(collection=collection)
        .exclude(status=TaskStatus.DONE)
        .select_related("query", "item")
    )


def bundle_of(collection: Collection):  # -> formats.Bundle
    """Everything an export holds, as format records: the collection, its items, its
    queries with status and evidence, its judgments, and its open review tasks (unjudged
    pairs) except any whose pair is judged. Records come in no particular order; the
    writers in ``judgments.formats`` sort them."""
    where = Where(f"collection '{collection.slug}'")
    username = get_user_model().USERNAME_FIELD
    bundle = Bundle(
        collection=CollectionRecord(
            where,
            slug=collection.slug,
            name=collection.name,
            scale=collection.scale,
            relevant_grade=collection.relevant_grade,
            unit=collection.unit,
            description=collection.description,
            guidelines=collection.guidelines,
            pool_depth=collection.pool_depth,
        )
    )
    bundle.items = [
        ItemRecord(where, id=i, title=t, text=x, url=u, metadata=m, placeholder=p)
        for i, t, x, u, m, p in Item.objects.filter(collection=collection)
        .values_list("external_id", "title", "text", "url", "metadata", "placeholder")
        .iterator(chunk_size=5000)
    ]
    bundle.queries = [
        QueryRecord(where, id=i, text=t, tags=tags, status=s, evidence=g)
        for i, t, tags, s, g in queries_of(collection)
        .values_list("external_id", "text", "tags", "status", "evidence__groups")
        .iterator(chunk_size=5000)
    ]
    bundle.judgments = [
        JudgmentRecord(where, query=q, item=i, grade=g, note=n, reviewer=r or name or None)
        for q, i, g, n, r, name in judgments_of(collection)
        .values_list(
            "query__external_id",
            "item__external_id",
            "grade",
            "note",
            f"reviewer__{username}",
            "reviewer_name",
        )
        .iterator(chunk_size=5000)
    ]
    judged = {(j.query, j.item) for j in bundle.judgments}
    bundle.unjudged = [
        UnjudgedRecord(where, query=q, item=i, source=s, rank=r)
        for q, i, s, r in unjudged_items_for(collection)
        .values_list("query__external_id", "item__external_id", "source", "best_rank")
        .iterator(chunk_size=5000)
        if (q, i) not in judged
    ]
    return bundle
