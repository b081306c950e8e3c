"""Query-string filters of the API lists (django-filter)."""

from __future__ import annotations

import django_filters

from judgments.models import Item, Judgment, Query, QueryStatus, ReviewTask, TaskStatus
from judgments.models.queries import QueryQuerySet


class QueryFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=QueryStatus.choices, help_text="Review status.")
    tag = django_filters.CharFilter(method="filter_tag", help_text="Queries carrying this tag.")

    class Meta:
        model = Query
        fields = ["status", "tag"]

    def filter_tag(self, queryset: QueryQuerySet, name: str, value: str) -> QueryQuerySet:
        return queryset.with_tag(value)


class ItemFilter(django_filters.FilterSet):
    placeholder = django_filters.BooleanFilter(
        help_text="true: only ids a run surfaced before the item's text was imported."
    )

    class Meta:
        model = Item
        fields = ["placeholder"]


class JudgmentFilter(django_filters.FilterSet):
    query = django_filters.CharFilter(field_name="query__external_id", help_text="Query id.")
    item = django_filters.CharFilter(field_name="item__external_id", help_text="Item id.")
    reviewer = django_filters.CharFilter(
        field_name="reviewer__username", help_text="Who set the current grade."
    )
    grade = django_filters.NumberFilter()

    class Meta:
        model = Judgment
        fields = ["query", "item", "reviewer", "grade"]


class TaskFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=TaskStatus.choices)
    query = django_filters.CharFilter(field_name="query__external_id", help_text="Query id.")

    class Meta:
        model = ReviewTask
        fields = ["status", "query"]
