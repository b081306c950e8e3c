"""The HTTP shapes of runs, unit mappings and evaluations."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from judgments.api.serializers import username_of
from judgments.models import LabelingUnit
from judgments.services import InvariantError
from scoring.models import DedupPolicy, Evaluation, OrderRule, Run, RunStage, UnitMapping
from scoring.selectors import K_MAX
from scoring.services import check_pool_strategy
from verity_eval.params import UNJUDGED_POLICIES
from verity_limits import INT16_MAX, INT32_MAX, NOTE_MAX, STAGE_MAX

ANY_VALUE: dict[str, Any] = {}  # an OpenAPI schema without a type: any JSON value


class RunStageSerializer(serializers.ModelSerializer):
    class Meta:
        model = RunStage
        fields = ["name", "position", "depth", "n_queries", "n_rows"]
        read_only_fields = fields


class RunSerializer(serializers.ModelSerializer):
    order = serializers.CharField(source="order_rule", read_only=True)
    dedup = serializers.CharField(source="dedup_policy", read_only=True)
    stages = RunStageSerializer(many=True, read_only=True)
    created_by = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = [
            "name",
            "description",
            "source_filename",
            "source_sha256",
            "source_format",
            "order",
            "dedup",
            "duplicates_dropped",
            "stages",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_created_by(self, obj: Run) -> str | None:
        return username_of(obj.created_by)


class RunUploadInput(serializers.Serializer):
    file = serializers.FileField(
        help_text="A TREC run (qid Q0 docid rank score tag) or a JSON Lines multi-stage run."
    )
    name = serializers.SlugField(
        max_length=100, help_text="A short name, unique in the collection."
    )
    description = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=NOTE_MAX
    )
    order = serializers.ChoiceField(
        choices=[OrderRule.SCORE, OrderRule.RANK],
        default=OrderRule.SCORE,
        help_text="TREC runs: score descending with trec_eval's docid tie-break, or the rank "
        "column.",
    )
    dedup = serializers.ChoiceField(
        choices=DedupPolicy.choices,
        default=DedupPolicy.ERROR,
        help_text="Duplicate ids in one query's list: refuse the file, or keep the first.",
    )
    ignore_unknown_queries = serializers.BooleanField(
        default=False,
        help_text="Store the run without the lines whose query the collection lacks; by "
        "default such lines refuse the file (400, with their line numbers).",
    )
    pool_strategy = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=40,
        help_text="The order of this run's pooled pairs: depth, mtf, bandit, or 'depth K + "
        "bandit' (every run's first K first); empty: the collection's (docs/POOLING.md).",
    )

    def validate_pool_strategy(self, value: str) -> str:
        try:
            check_pool_strategy(self.context["collection"], value)
        except InvariantError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value.strip()


class RunImportSerializer(serializers.Serializer):
    unjudged_found = serializers.IntegerField(
        help_text="Distinct (query, item) pairs within the pool depth with no judgment."
    )
    newly_queued = serializers.IntegerField(help_text="Review tasks this run created.")
    placeholders_created = serializers.IntegerField()
    queries_not_in_collection = serializers.ListField(
        child=serializers.CharField(),
        help_text="Run query ids the collection lacks, whose lines were skipped "
        "(ignore_unknown_queries).",
    )
    unknown_query_ids = serializers.IntegerField(
        source="unknown.n_queries", help_text="How many query ids were unknown."
    )
    unknown_query_lines_skipped = serializers.IntegerField(
        source="unknown.query_lines", help_text="Run lines left out for those queries."
    )
    unknown_item_ids = serializers.IntegerField(
        source="unknown.item_ids",
        help_text="Pooled item ids the collection lacked, created as placeholder items.",
    )
    unknown_item_ids_beyond_depth = serializers.IntegerField(
        source="unknown.item_ids_beyond",
        help_text="Item ids the collection lacks that the run ranks only below the pool "
        "depth: kept in the run as ranked, unjudged.",
    )
    unknown_ids = serializers.SerializerMethodField(
        help_text="In words: how many query and item ids were unknown, and what became of them."
    )

    def get_unknown_ids(self, report: Any) -> str:
        return str(report.unknown.describe(report.run.collection, depth=report.pool_depth))


class RunUploadResultSerializer(RunSerializer):
    import_report = serializers.SerializerMethodField()

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "import_report"]
        read_only_fields = fields

    @extend_schema_field(RunImportSerializer)
    def get_import_report(self, obj: Run) -> dict[str, Any]:
        report = self.context["report"]
        return RunImportSerializer(report).data


class MappingSerializer(serializers.ModelSerializer):
    created_by = serializers.SerializerMethodField()

    class Meta:
        model = UnitMapping
        fields = [
            "number",
            "content_hash",
            "from_unit",
            "to_unit",
            "note",
            "n_entries",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_created_by(self, obj: UnitMapping) -> str | None:
        return username_of(obj.created_by)


class MappingUploadInput(serializers.Serializer):
    file = serializers.FileField(help_text="One 'fine<TAB>coarse' pair per line.")
    from_unit = serializers.ChoiceField(choices=LabelingUnit.choices, default=LabelingUnit.CHUNK)
    to_unit = serializers.ChoiceField(choices=LabelingUnit.choices, default=LabelingUnit.DOCUMENT)
    note = serializers.CharField(required=False, allow_blank=True, default="", max_length=NOTE_MAX)


class MappingUploadResultSerializer(MappingSerializer):
    created = serializers.SerializerMethodField(
        help_text="False when the content equals the latest version's, which is returned."
    )

    class Meta(MappingSerializer.Meta):
        fields = [*MappingSerializer.Meta.fields, "created"]
        read_only_fields = fields

    def get_created(self, obj: UnitMapping) -> bool:
        return bool(self.context.get("created"))


# -- evaluations ----------------------------------------------------------------------------


class EvaluationCreateInput(serializers.Serializer):
    run = serializers.SlugField(max_length=100, help_text="The run's name.")
    stage = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=STAGE_MAX,
        help_text="Needed for multi-stage runs.",
    )
    snapshot = serializers.IntegerField(
        min_value=1,
        max_value=INT32_MAX,
        help_text="The snapshot number to score against: always pinned.",
    )
    ks = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=K_MAX),
        min_length=1,
        max_length=50,
        default=[5, 10],
        help_text="Cutoffs k.",
    )
    measures = serializers.ListField(
        child=serializers.CharField(max_length=50),
        required=False,
        allow_null=True,
        min_length=1,
        max_length=100,
        help_text="e.g. ['R', 'nDCG@10', 'AP']; every measure when absent.",
    )
    rel_level = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=INT16_MAX,
        help_text="Lowest relevant grade; the snapshot's relevant grade when absent.",
    )
    unjudged = serializers.ChoiceField(
        choices=list(UNJUDGED_POLICIES),
        default="nonrel",
        help_text="Unjudged items in the top k: as non-relevant, judged-only (condensed "
        "list), or bounds (both).",
    )
    mapping = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=INT32_MAX,
        help_text="Unit mapping version.",
    )


class CountsSerializer(serializers.Serializer):
    scorable = serializers.IntegerField()
    excluded = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Queries left out, by reason (unreviewed, no_answer, not_in_snapshot, ...).",
    )
    empty_ranking = serializers.IntegerField(
        help_text="Scorable queries absent from the run, scored as empty rankings."
    )

    def to_representation(self, instance: Any) -> Any:
        return instance  # the stored counts as they are; other keys pass through


@extend_schema_field(
    {
        "type": "object",
        "description": "Measure name (e.g. R@2) -> aggregation (macro, pooled) -> value: a "
        "number, null when undefined (no scorable query), or {low, high} under the "
        "bounds policy.",
        "additionalProperties": {"type": "object", "additionalProperties": ANY_VALUE},
    }
)
class AggregatesField(serializers.JSONField):
    pass


@extend_schema_field({"type": "object", "additionalProperties": ANY_VALUE})
class ObjectField(serializers.JSONField):
    pass


class EvaluationSummarySerializer(serializers.ModelSerializer):
    run = serializers.CharField(source="run.name", read_only=True)
    stage = serializers.CharField(source="stage.name", read_only=True)
    snapshot = serializers.IntegerField(source="snapshot.number", read_only=True)
    snapshot_hash = serializers.CharField(source="snapshot.content_hash", read_only=True)
    mapping = serializers.IntegerField(source="mapping.number", read_only=True, allow_null=True)
    params = ObjectField(read_only=True)
    counts = CountsSerializer(read_only=True)
    aggregates = AggregatesField(
        source="aggregates_counted",
        read_only=True,
        help_text="Per measure: macro (and pooled for recall), n the queries averaged "
        "over, and n_reason where that is not every scorable query (Evidence@k: only "
        "queries with an evidence condition).",
    )

    class Meta:
        model = Evaluation
        fields = [
            "id",
            "run",
            "stage",
            "snapshot",
            "snapshot_hash",
            "mapping",
            "params",
            "status",
            "counts",
            "aggregates",
            "created_at",
        ]
        read_only_fields = fields


class ReportCollectionSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    corpus_boundary = serializers.CharField()
    unit = serializers.CharField()


class ReportLabelsSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    human = serializers.IntegerField(help_text="Labels by people.")
    model = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Labels by model judge, accepted by the collection's policy where no "
        "person assessed; {} when every label is a person's.",
    )
    summary = serializers.CharField()


class ReportSnapshotSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    content_hash = serializers.CharField()
    relevant_grade = serializers.IntegerField()
    labels = ReportLabelsSerializer(help_text="Who made the snapshot's labels.")


class ReportRunSerializer(serializers.Serializer):
    name = serializers.CharField()
    source_sha256 = serializers.CharField()
    order = serializers.CharField()
    dedup = serializers.CharField()
    duplicates_dropped = serializers.IntegerField()


class ReportMappingSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    content_hash = serializers.CharField()


class EvaluationReportSerializer(serializers.Serializer):
    """``scoring.selectors.evaluation_report``: everything that fixes the numbers'
    meaning, and the numbers; per-query rows are a separate, paginated list."""

    id = serializers.IntegerField()
    status = serializers.ChoiceField(
        choices=["ok", "undefined"], help_text="undefined: no scorable query (never 0)."
    )
    collection = ReportCollectionSerializer()
    snapshot = ReportSnapshotSerializer()
    run = ReportRunSerializer()
    stage = serializers.CharField()
    mapping = ReportMappingSerializer(allow_null=True)
    params = ObjectField()
    engine_version = serializers.CharField()
    fingerprint = serializers.CharField()
    counts = CountsSerializer()
    aggregates = AggregatesField()
    created_at = serializers.CharField()
    per_query_url = serializers.CharField(help_text="The per-query rows, paginated.")


class EvaluationCreatedSerializer(EvaluationReportSerializer):
    created = serializers.BooleanField(
        help_text="False when the same inputs were scored before: the stored evaluation "
        "(identical numbers) is returned."
    )


class EvaluationQueryRowSerializer(serializers.Serializer):
    query_id = serializers.CharField()
    values = ObjectField(
        help_text="Per-query measures (R@k, hits@k, relevant, weight, ...), or "
        '{"excluded": reason}.'
    )
