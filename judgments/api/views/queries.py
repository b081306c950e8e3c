"""API views of a collection's queries (with their review status) and items."""

from __future__ import annotations

from django.db.models import Count, QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from judgments.models import ChangeSource, Item, Query, TokenScope
from judgments.selectors import queries_of
from judgments.services import set_query_status

from .. import serializers as s
from ..filters import ItemFilter, QueryFilter
from ..permissions import CollectionScoped
from .common import NamedLookup, error


@extend_schema_view(
    list=extend_schema(summary="The collection's queries, filtered by status and tag."),
    retrieve=extend_schema(summary="One query, with its status and evidence condition."),
    partial_update=extend_schema(
        summary="Set the query's review status.",
        description="`relevant` needs a relevant judgment; `no_answer` allows none. A "
        "refused change answers 409 and leaves the status as it was.",
        request=s.QueryStatusInput,
        responses={
            200: s.QuerySerializer,
            409: error("The judgments refuse this status (the message says why)."),
        },
    ),
)
@extend_schema(tags=["queries"])
class QueryViewSet(CollectionScoped, NamedLookup, viewsets.ReadOnlyModelViewSet):
    labels = frozenset({"partial_update"})  # the status rule reads the labels
    serializer_class = s.QuerySerializer
    filterset_class = QueryFilter
    lookup_field = "external_id"
    lookup_url_kwarg = "qid"
    lookup_what = "query"
    token_scopes = {"partial_update": TokenScope.JUDGE}  # the query's review status

    def get_queryset(self) -> QuerySet[Query]:
        if self.schema_only():
            return Query.objects.none()
        queries = queries_of(self.collection).order_by("external_id")
        if not self.sees_labels:  # blind: how many pairs are resolved is not theirs
            return queries
        return queries.annotate(n_judgments=Count("judgments"))

    def partial_update(self, request: Request, slug: str, qid: str) -> Response:
        query = self.get_object()
        data = s.QueryStatusInput(data=request.data)
        data.is_valid(raise_exception=True)
        set_query_status(
            query=query,
            status=data.validated_data["status"],
            by=request.user,
            source=ChangeSource.API,
        )
        return Response(self.get_serializer(self.get_object()).data)


@extend_schema_view(
    list=extend_schema(summary="The collection's items (id, title, text, url)."),
    retrieve=extend_schema(summary="One item."),
)
@extend_schema(tags=["items"])
class ItemViewSet(CollectionScoped, NamedLookup, viewsets.ReadOnlyModelViewSet):
    serializer_class = s.ItemSerializer
    filterset_class = ItemFilter
    lookup_field = "external_id"
    lookup_url_kwarg = "item_id"
    lookup_what = "item"

    def get_queryset(self) -> QuerySet[Item]:
        if self.schema_only():
            return Item.objects.none()
        return Item.objects.filter(collection=self.collection).order_by("external_id")
