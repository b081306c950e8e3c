"""Collections and their members."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from judgments.models import (
    AdjudicationStatus,
    AdjudicationTask,
    Collection,
    Membership,
    Role,
)
from judgments.pool_strategies import STRATEGIES
from judgments.resolution import POLICIES
from judgments.selectors import may_adjudicate, may_see_labels
from verity_limits import INT32_MAX, NAME_MAX

from .common import KnownFieldsOnly, ScaleEntrySerializer


class CollectionSerializer(serializers.ModelSerializer):
    scale = ScaleEntrySerializer(many=True, read_only=True)
    role = serializers.SerializerMethodField(help_text="Your role in this collection.")
    n_queries = serializers.IntegerField(read_only=True)
    n_unreviewed = serializers.IntegerField(read_only=True)
    n_relevant = serializers.IntegerField(read_only=True)
    n_no_answer = serializers.IntegerField(read_only=True)
    n_unresolved = serializers.SerializerMethodField(
        help_text="Pairs assessed by every assessor that await an adjudicator now; null for "
        "a reviewer of a blind collection who does not adjudicate (several assessors)."
    )

    class Meta:
        model = Collection
        fields = [
            "slug",
            "name",
            "description",
            "unit",
            "scale",
            "relevant_grade",
            "guidelines",
            "pool_depth",
            "holds_whole_corpus",
            "assessors_per_item",
            "resolution_policy",
            "adjudicate_distance",
            "n_unresolved",
            "model_labels",
            "pool_strategy",
            "pool_floor",
            "created_at",
            "role",
            "n_queries",
            "n_unreviewed",
            "n_relevant",
            "n_no_answer",
        ]
        read_only_fields = fields

    def get_n_unresolved(self, obj: Collection) -> int | None:
        user = self.context["request"].user
        if not (may_see_labels(user, obj) or may_adjudicate(user, obj)):
            return None  # which pairs disagree is the adjudicators' (blind)
        return AdjudicationTask.objects.filter(
            collection=obj, status=AdjudicationStatus.OPEN
        ).count()

    @extend_schema_field(serializers.ChoiceField(choices=Role.choices))
    def get_role(self, obj: Collection) -> str | None:
        user = self.context["request"].user
        if user.is_superuser:
            return Role.ADMIN
        return getattr(obj, "my_role", None)


class CollectionSettingsInput(serializers.Serializer):
    """The settings an admin may change; scale, relevant grade and unit are fixed."""

    name = serializers.CharField(required=False, max_length=NAME_MAX)
    description = serializers.CharField(required=False, allow_blank=True)
    guidelines = serializers.CharField(required=False, allow_blank=True)
    pool_depth = serializers.IntegerField(required=False, min_value=1, max_value=INT32_MAX)
    holds_whole_corpus = serializers.BooleanField(
        required=False,
        help_text="Every item of the corpus is imported: a run naming an item the collection "
        "lacks is then refused instead of making a placeholder to judge.",
    )
    assessors_per_item = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=20,
        help_text="How many reviewers assess each pooled pair, blind (docs/ASSESSORS.md).",
    )
    resolution_policy = serializers.ChoiceField(
        required=False,
        choices=list(POLICIES),
        help_text="How several assessments become the resolved label.",
    )
    adjudicate_distance = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=100,
        help_text="The largest grade spread min-of-agreeing and adjudicate resolve.",
    )
    model_labels = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="'' (the default): no model-made label enters a snapshot. A judge's name: "
        "at freeze, its current proposal labels each pair no person judged or assessed, "
        "counted by judge in the snapshot and every report.",
    )
    pool_strategy = serializers.ChoiceField(
        required=False,
        choices=list(STRATEGIES),
        help_text="The order of pooled pairs within a query for runs imported from now on: "
        "depth, mtf (move-to-front) or bandit (MaxMean); docs/POOLING.md. Back to depth, "
        "the queue's order is the depth rule's again.",
    )
    pool_floor = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=10_000,
        help_text="With mtf or bandit: every run's first K pooled items are served first.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # Ignoring e.g. "relevant_grade" silently would let a client believe it changed.
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {
                    name: "cannot be changed here; the settings are "
                    f"{', '.join(self.fields)} (scale, relevant grade and unit are fixed "
                    "when a collection is created)"
                    for name in unknown
                }
            )
        return attrs


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    granted_by_group = serializers.CharField(
        read_only=True,
        help_text="The identity provider's group whose mapping (VERITY_OIDC_GROUP_ROLES) "
        "made this membership: it follows the group at each sign-in. Empty: made by an admin.",
    )

    class Meta:
        model = Membership
        fields = ["username", "role", "can_adjudicate", "granted_by_group", "created_at"]
        read_only_fields = fields


class MemberRoleInput(KnownFieldsOnly):
    role = serializers.ChoiceField(choices=Role.choices, required=False)
    can_adjudicate = serializers.BooleanField(
        required=False,
        help_text="May decide the pairs whose assessors disagree (admins always may).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if not attrs:
            raise serializers.ValidationError("send a role, can_adjudicate, or both")
        return attrs


class MemberCreateInput(MemberRoleInput):
    role = serializers.ChoiceField(choices=Role.choices)
    username = serializers.CharField(max_length=150)

    def validate_username(self, value: str) -> Any:
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: value}).first()
        if user is None:
            raise serializers.ValidationError(
                f"no user '{value}'; the account must exist before it can join"
            )
        if not user.is_active:
            raise serializers.ValidationError(f"user '{value}' is deactivated")
        return user
