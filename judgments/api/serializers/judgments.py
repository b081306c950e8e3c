"""Judgments: the output, the create and update inputs, the conflict answer."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from judgments.models import (
    Collection,
    Item,
    Judgment,
    Query,
)
from verity_limits import ID_MAX, NOTE_MAX

from .common import CLIENT_KEY_HELP, GradeField, KnownFieldsOnly, username_of


class JudgmentSerializer(serializers.ModelSerializer):
    query = serializers.CharField(source="query.external_id", read_only=True)
    item = serializers.CharField(source="item.external_id", read_only=True)
    grade_name = serializers.SerializerMethodField()
    relevant = serializers.SerializerMethodField(
        help_text="Whether the grade reaches the collection's relevant grade."
    )
    reviewer = serializers.SerializerMethodField()

    class Meta:
        model = Judgment
        fields = [
            "id",
            "query",
            "item",
            "grade",
            "grade_name",
            "relevant",
            "note",
            "reviewer",
            "version",
            "client_key",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_grade_name(self, obj: Judgment) -> str:
        return obj.query.collection.grade_name(obj.grade)

    def get_relevant(self, obj: Judgment) -> bool:
        return obj.query.collection.is_relevant_grade(obj.grade)

    @extend_schema_field(
        serializers.CharField(
            allow_null=True,
            help_text="Who set the grade: a username, or the external assessor's name an "
            "import gave for someone who is not a member of the collection.",
        )
    )
    def get_reviewer(self, obj: Judgment) -> str | None:
        return username_of(obj.reviewer) or obj.reviewer_name or None


class JudgmentCreateInput(serializers.Serializer):
    query = serializers.CharField(max_length=ID_MAX, help_text="The query's id.")
    item = serializers.CharField(max_length=ID_MAX, help_text="The item's id.")
    grade = GradeField()
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=NOTE_MAX)
    client_key = serializers.CharField(
        required=False, allow_null=True, max_length=100, help_text=CLIENT_KEY_HELP
    )

    def validate_query(self, value: str) -> Query:
        collection: Collection = self.context["collection"]
        found = Query.objects.filter(collection=collection, external_id=value).first()
        if found is None:
            raise serializers.ValidationError(
                f"collection '{collection.slug}' has no query '{value}'"
            )
        return found

    def validate_item(self, value: str) -> Item:
        collection: Collection = self.context["collection"]
        found = Item.objects.filter(collection=collection, external_id=value).first()
        if found is None:
            raise serializers.ValidationError(
                f"collection '{collection.slug}' has no item '{value}'"
            )
        return found


class JudgmentUpdateInput(KnownFieldsOnly):
    grade = GradeField(required=False)
    note = serializers.CharField(required=False, allow_blank=True, max_length=NOTE_MAX)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if not attrs:
            raise serializers.ValidationError("send a grade, a note, or both")
        return attrs


class JudgmentConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = serializers.ListField(child=serializers.DictField())
    current = JudgmentSerializer(
        required=False,
        help_text="The judgment as it is stored now; absent when the refusal is not about "
        "this pair's stored judgment (e.g. a client key already used for another judgment, "
        "or a grade the query's status forbids).",
    )
