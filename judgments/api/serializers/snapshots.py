"""Snapshots: a version, the freeze input and answer, the diff between two."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from judgments.models import Snapshot
from verity_limits import NOTE_MAX

from .common import ScaleEntrySerializer, username_of


class SnapshotSerializer(serializers.ModelSerializer):
    scale = ScaleEntrySerializer(many=True, read_only=True)
    created_by = serializers.SerializerMethodField()
    model_labels = serializers.DictField(
        child=serializers.IntegerField(),
        read_only=True,
        help_text="Labels by model judge ({} when every label is a person's); "
        "n_judgments counts them too.",
    )
    n_human_labels = serializers.IntegerField(
        read_only=True, help_text="n_judgments minus the model labels."
    )
    n_unjudged = serializers.IntegerField(
        source="unjudged_total",
        read_only=True,
        help_text="Pairs the snapshot leaves unjudged: unjudged markers, and pairs awaiting "
        "adjudication (n_unresolved of them).",
    )

    class Meta:
        model = Snapshot
        fields = [
            "number",
            "content_hash",
            "label",
            "unit",
            "scale",
            "relevant_grade",
            "note",
            "n_queries",
            "n_judgments",
            "n_human_labels",
            "model_labels",
            "n_unjudged",
            "n_unresolved",
            "assessors_per_item",
            "resolution_policy",
            "adjudicate_distance",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields

    #: What a snapshot's labels decide (its hash, its counts of labels and of pairs
    #: awaiting adjudication): left out for whom ``may_see_labels`` refuses.
    LABEL_FIELDS = (
        "content_hash",
        "n_judgments",
        "n_human_labels",
        "model_labels",
        "n_unjudged",
        "n_unresolved",
    )

    def to_representation(self, instance: Snapshot) -> dict[str, Any]:
        data = super().to_representation(instance)
        if self.context.get("blind"):
            for name in self.LABEL_FIELDS:
                data.pop(name, None)
            data["label"] = f"v{instance.number}"
        return data

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_created_by(self, obj: Snapshot) -> str | None:
        return username_of(obj.created_by)


class FreezeInput(serializers.Serializer):
    note = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=NOTE_MAX,
        help_text="Why this version is frozen.",
    )


class FreezeResultSerializer(SnapshotSerializer):
    created = serializers.SerializerMethodField(
        help_text="False when nothing changed since the latest version, which is returned."
    )

    class Meta(SnapshotSerializer.Meta):
        fields = [*SnapshotSerializer.Meta.fields, "created"]
        read_only_fields = fields

    def get_created(self, obj: Snapshot) -> bool:
        return bool(self.context.get("created"))


class GradedPairSerializer(serializers.Serializer):
    query = serializers.CharField()
    item = serializers.CharField()
    grade = serializers.IntegerField()


class RegradedPairSerializer(serializers.Serializer):
    query = serializers.CharField()
    item = serializers.CharField()
    old_grade = serializers.IntegerField()
    new_grade = serializers.IntegerField()


class StatusChangeSerializer(serializers.Serializer):
    query = serializers.CharField()
    old_status = serializers.CharField(allow_null=True, help_text="null: not in the older one")
    new_status = serializers.CharField(allow_null=True, help_text="null: not in the newer one")


class EvidenceChangeSerializer(serializers.Serializer):
    query = serializers.CharField()
    old = serializers.JSONField(allow_null=True)
    new = serializers.JSONField(allow_null=True)


class SnapshotDiffSerializer(serializers.Serializer):
    """What changed from snapshot ``from`` to snapshot ``to``."""

    from_ = serializers.IntegerField(source="a.number")
    to = serializers.IntegerField(source="b.number")
    added = serializers.SerializerMethodField()
    removed = serializers.SerializerMethodField()
    regraded = serializers.SerializerMethodField()
    status_changes = serializers.SerializerMethodField()
    evidence_changes = serializers.SerializerMethodField()
    unjudged_added = serializers.IntegerField()
    unjudged_removed = serializers.IntegerField()
    scale_changed = serializers.BooleanField()
    is_empty = serializers.BooleanField()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["from"] = fields.pop("from_")  # "from" is a Python keyword
        return fields

    @extend_schema_field(GradedPairSerializer(many=True))
    def get_added(self, obj: Any) -> list[dict[str, Any]]:
        return [{"query": q, "item": i, "grade": g} for q, i, g in obj.added]

    @extend_schema_field(GradedPairSerializer(many=True))
    def get_removed(self, obj: Any) -> list[dict[str, Any]]:
        return [{"query": q, "item": i, "grade": g} for q, i, g in obj.removed]

    @extend_schema_field(RegradedPairSerializer(many=True))
    def get_regraded(self, obj: Any) -> list[dict[str, Any]]:
        return [
            {"query": q, "item": i, "old_grade": a, "new_grade": b} for q, i, a, b in obj.regraded
        ]

    @extend_schema_field(StatusChangeSerializer(many=True))
    def get_status_changes(self, obj: Any) -> list[dict[str, Any]]:
        return [{"query": q, "old_status": a, "new_status": b} for q, a, b in obj.status_changes]

    @extend_schema_field(EvidenceChangeSerializer(many=True))
    def get_evidence_changes(self, obj: Any) -> list[dict[str, Any]]:
        return [{"query": q, "old": a, "new": b} for q, a, b in obj.evidence_changes]
