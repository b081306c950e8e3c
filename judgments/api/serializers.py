"""The HTTP shapes of collections, members, queries, items, judgments, tasks, snapshots.

Output serializers render; input serializers (``…Input``) parse and validate a request
and never save anything: views pass their data to one service function.
Ids in URLs and bodies are the stable external ids (query, item), the snapshot number,
the run name; only judgments and tasks, which have no external id, use their row id.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from judgments.models import (
    AdjudicationStatus,
    AdjudicationTask,
    Collection,
    Item,
    Judgment,
    Membership,
    Query,
    QueryStatus,
    ReviewTask,
    Role,
    Snapshot,
)
from judgments.pool_strategies import STRATEGIES
from judgments.resolution import POLICIES
from judgments.selectors import may_adjudicate, may_see_labels
from verity_limits import ID_MAX, INT32_MAX, NAME_MAX, NOTE_MAX

CLIENT_KEY_HELP = (
    "A key you choose (e.g. a UUID) that makes a retried create return the judgment it "
    "made instead of an error or a duplicate. Same as the Idempotency-Key header."
)


class ScaleEntrySerializer(serializers.Serializer):
    grade = serializers.IntegerField()
    name = serializers.CharField()


def username_of(user: Any) -> str | None:
    return user.get_username() if user is not None else None


# -- collections and members ----------------------------------------------------------------


class KnownFieldsOnly(serializers.Serializer):
    """An input that refuses fields it does not know (400 naming each one and the fields it
    takes), instead of ignoring them: a client that sends ``"can_adjudicate"`` or a typo
    must not believe it changed something."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = self.initial_data if isinstance(self.initial_data, dict) else {}
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {
                    name: f"unknown field; this request takes {', '.join(self.fields)}"
                    for name in unknown
                }
            )
        return super().validate(attrs)


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


# -- queries and items ----------------------------------------------------------------------


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


# -- judgments ------------------------------------------------------------------------------


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


class GradeField(serializers.IntegerField):
    """A grade on the collection's scale (from the serializer's context)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or (isinstance(data, float) and not data.is_integer()):
            self.fail("invalid")
        value = super().to_internal_value(data)
        collection: Collection = self.context["collection"]
        if value not in collection.grades:
            names = ", ".join(f"{g['grade']} {g['name']}" for g in collection.scale)
            raise serializers.ValidationError(
                f"{value} is not on the scale of collection '{collection.slug}' ({names})"
            )
        return value


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


# -- review tasks ---------------------------------------------------------------------------


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


# -- snapshots ------------------------------------------------------------------------------


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
