"""Collections and what they hold: a collection by slug, its queries with their progress
counts and tags, and a query or an item by external id."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from ..models import (
    Collection,
    Item,
    Judgment,
    Query,
    QueryStatus,
    ReviewTask,
    StatusPlan,
    plan_status_change,
)
from .review import OPEN_TASK_STATUSES


def collections_with_progress() -> QuerySet[Collection]:
    """Collections annotated with their number of queries, by review status."""
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


def collection_by_slug(slug: str) -> Collection:
    """The collection, or ``Collection.DoesNotExist`` naming the ones that exist."""
    found = Collection.objects.filter(slug=slug).first()
    if found is None:
        known = ", ".join(Collection.objects.values_list("slug", flat=True)) or "none yet"
        raise Collection.DoesNotExist(f"no collection '{slug}'; the collections are: {known}")
    return found


def query_tags_of(collection: Collection) -> list[str]:
    """Every tag used by the collection's queries, sorted."""
    tags: set[str] = set()
    for row in Query.objects.filter(collection=collection).values_list("tags", flat=True):
        tags.update(t for t in row or () if isinstance(t, str))
    return sorted(tags)


def _count_of(queryset: QuerySet) -> Any:

    counted = (
        queryset.filter(query=OuterRef("pk"))
        .order_by()
        .values("query")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def queries_with_progress(
    collection: Collection, *, status: str | None = None, tag: str | None = None
) -> QuerySet[Query]:
    """The collection's queries, optionally one review status and one tag, each annotated
    with ``n_judged``, ``n_relevant`` (grade ≥ the relevant grade) and ``n_open`` (open
    review tasks), ordered by external id."""

    queries = Query.objects.filter(collection=collection)
    if status:
        queries = queries.filter(status=status)
    if tag:
        queries = queries.with_tag(tag)
    judgments = Judgment.objects.all()
    return queries.annotate(
        n_judged=_count_of(judgments),
        n_relevant=_count_of(judgments.filter(grade__gte=collection.relevant_grade)),
        n_open=_count_of(ReviewTask.objects.filter(status__in=OPEN_TASK_STATUSES)),
    ).order_by("external_id")


def status_change_plan(
    collection: Collection, status: str, *, among: str | None = None, tag: str | None = None
) -> StatusPlan:
    """What the bulk action would do: set ``status`` on the queries shown with the status
    filter ``among`` and the tag filter ``tag`` (``plan_status_change``, the rule the
    service applies)."""
    rows = (
        queries_with_progress(collection, status=among, tag=tag)
        .values_list("external_id", "status", "n_relevant", "n_judged", "n_open")
        .order_by("external_id")
    )
    return plan_status_change(rows, status)


def query_in(collection: Collection, external_id: str) -> Query:
    """The collection's query by external id, with who last set its status and its
    evidence condition; ``Query.DoesNotExist`` if there is none."""
    return Query.objects.select_related("collection", "status_changed_by").get(
        collection=collection, external_id=external_id
    )


def item_in(collection: Collection, external_id: str) -> Any:
    """The collection's item by external id, or ``None``."""

    return Item.objects.filter(collection=collection, external_id=external_id).first()
