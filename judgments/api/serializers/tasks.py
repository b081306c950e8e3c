"""Review tasks: the task, the claim's answer written out, the judge input."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from judgments.models import ReviewTask
from verity_limits import NOTE_MAX

from .common import CLIENT_KEY_HELP, GradeField, username_of


class TaskSourceSerializer(serializers.Serializer):
    label = serializers.CharField()
    rank = serializers.IntegerField(allow_null=True)


class TaskSerializer(serializers.ModelSerializer):
    query = serializers.CharField(source="query.external_id", read_only=True)
    query_text = serializers.CharField(source="query.text", read_only=True)
    item = serializers.CharField(source="item.external_id", read_only=True)
    item_title = serializers.CharField(source="item.title", read_only=True)
    item_text = serializers.CharField(source="item.text", read_only=True)
    sources = TaskSourceSerializer(many=True, read_only=True)
    claimed_by = serializers.SerializerMethodField()

    class Meta:
        model = ReviewTask
        fields = [
            "id",
            "query",
            "query_text",
            "item",
            "item_title",
            "item_text",
            "status",
            "source",
            "sources",
            "best_rank",
            "priority",
            "claimed_by",
            "lease_expires_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_claimed_by(self, obj: ReviewTask) -> str | None:
        return username_of(obj.claimed_by)


_WHEN = serializers.DateTimeField()


def task_answer(task: ReviewTask) -> dict[str, Any]:
    """``TaskSerializer(task).data``, written out for the reviewer's claim, which answers
    it on every task: the serializer's field machinery was ~7 % of a claim's CPU (issue
    29). ``tests/api/test_statement_counts.py`` checks the two agree."""
    lease = task.lease_expires_at
    return {
        "id": task.pk,
        "query": task.query.external_id,
        "query_text": task.query.text,
        "item": task.item.external_id,
        "item_title": task.item.title,
        "item_text": task.item.text,
        "status": task.status,
        "source": task.source,
        "sources": [{"label": x.label, "rank": x.rank} for x in task.sources.all()],
        "best_rank": task.best_rank,
        "priority": task.priority,
        "claimed_by": username_of(task.claimed_by),
        "lease_expires_at": _WHEN.to_representation(lease) if lease is not None else None,
    }


class TaskJudgeInput(serializers.Serializer):
    grade = GradeField()
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=NOTE_MAX)
    client_key = serializers.CharField(
        required=False, allow_null=True, max_length=100, help_text=CLIENT_KEY_HELP
    )
