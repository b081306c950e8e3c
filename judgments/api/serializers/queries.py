"""Queries and items."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from judgments.models import (
    Item,
    Query,
    QueryStatus,
)

from .common import KnownFieldsOnly


class QuerySerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id", read_only=True)
    tags = serializers.ListField(child=serializers.CharField(), read_only=True)
    evidence = serializers.SerializerMethodField(
        help_text="The evidence condition as AND-groups of item ids, or null."
    )
    n_judgments = serializers.IntegerField(
        read_only=True,
        allow_null=True,
        help_text="Judged pairs; null for a reviewer of a blind collection (several assessors).",
    )

    class Meta:
        model = Query
        fields = ["id", "text", "tags", "status", "evidence", "status_changed_at", "n_judgments"]
        read_only_fields = fields

    @extend_schema_field(
        serializers.ListField(
            child=serializers.ListField(child=serializers.CharField()), allow_null=True
        )
    )
    def get_evidence(self, obj: Query) -> list[list[str]] | None:
        condition = getattr(obj, "evidence", None)
        return condition.groups if condition is not None else None


class QueryStatusInput(KnownFieldsOnly):
    status = serializers.ChoiceField(choices=QueryStatus.choices)


class ItemSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id", read_only=True)
    url = serializers.CharField(read_only=True, help_text="The source's address; may be empty.")
    metadata = serializers.DictField(read_only=True)

    class Meta:
        model = Item
        fields = ["id", "title", "text", "url", "metadata", "placeholder"]
        read_only_fields = fields
