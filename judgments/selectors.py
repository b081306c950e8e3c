"""Reads: querysets with their joins applied, named as questions."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from .models import Collection, Judgment, Query, QueryStatus, ReviewTask, TaskStatus


def collections_with_progress() -> QuerySet[Collection]:
    """Collections annotated with queries by review status, judgments and queued tasks."""
    return Collection.objects.annotate(
        n_queries=Count("queries", distinct=True),
        n_unreviewed=Count(
            "queries", filter=Q(queries__status=QueryStatus.UNREVIEWED), distinct=True
        ),
        n_relevant=Count("queries", filter=Q(queries__status=QueryStatus.RELEVANT), distinct=True),
        n_no_answer=Count(
            "queries", filter=Q(queries__status=QueryStatus.NO_ANSWER), distinct=True
        ),
    )


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
