"""Runs, their stages and ranked lists, unit mappings, and evaluations.

A run and an evaluation never change once stored: the ORM refuses updates and deletes
here, and on PostgreSQL triggers (migration 0002) refuse them from raw SQL as well.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from judgments.models import Collection, FrozenModel, Snapshot
from judgments.wording import counted
from verity_limits import ID_MAX, STAGE_MAX


class OrderRule(models.TextChoices):
    SCORE = "score", "score descending, ties by docid descending (trec_eval)"
    RANK = "rank", "rank column ascending"
    LIST = "list", "list order as given (JSON Lines)"


class DedupPolicy(models.TextChoices):
    ERROR = "error", "duplicates are an error"
    FIRST = "first", "keep the first occurrence"


class Run(FrozenModel):
    """An uploaded retrieval output: one or more stages, each a ranked list per query."""

    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="runs")
    name = models.SlugField(max_length=100)
    description = models.TextField(blank=True)
    source_filename = models.CharField(max_length=500)
    source_sha256 = models.CharField(max_length=64)
    source_format = models.CharField(max_length=8)
    order_rule = models.CharField(max_length=8, choices=OrderRule.choices)
    dedup_policy = models.CharField(max_length=8, choices=DedupPolicy.choices)
    duplicates_dropped = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="run_name_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.collection_id}:{self.name}"


class RunStage(FrozenModel):
    """One named stage of a run (e.g. ``candidates``, ``reranked``, ``context``)."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="stages")
    name = models.CharField(max_length=STAGE_MAX)
    position = models.PositiveSmallIntegerField()
    depth = models.PositiveIntegerField(help_text="The longest ranked list in this stage.")
    n_queries = models.PositiveIntegerField()
    n_rows = models.PositiveBigIntegerField()

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "name"], name="runstage_name_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.run} / {self.name}"


class RankedList(FrozenModel):
    """The ordered, distinct item ids that one stage returned for one query.

    ``query_id`` is the run's query id as a string: a run may name queries that the
    collection does not hold, and scoring excludes those by reason.
    """

    stage = models.ForeignKey(RunStage, on_delete=models.PROTECT, related_name="lists")
    query_id = models.CharField(max_length=ID_MAX)
    items = models.JSONField()
    abstained = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["stage", "query_id"], name="rankedlist_unique"),
        ]


class UnitMapping(FrozenModel):
    """Version ``number`` of a map from fine ids to stable coarse ids (chunk → document)."""

    collection = models.ForeignKey(
        Collection, on_delete=models.PROTECT, related_name="unit_mappings"
    )
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    from_unit = models.CharField(max_length=16)
    to_unit = models.CharField(max_length=16)
    note = models.TextField(blank=True)
    n_entries = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "number"], name="unitmapping_number_unique"
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="unitmapping_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.collection_id} mapping v{self.number}"


class UnitMappingEntry(FrozenModel):
    mapping = models.ForeignKey(UnitMapping, on_delete=models.PROTECT, related_name="entries")
    fine_id = models.CharField(max_length=ID_MAX)
    coarse_id = models.CharField(max_length=ID_MAX)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["mapping", "fine_id"], name="unitmappingentry_unique"),
        ]


class Evaluation(FrozenModel):
    """One scoring of one run stage against one snapshot with stated parameters.

    ``fingerprint`` is a sha256 over every input (snapshot hash, run source hash, stage,
    mapping hash, canonical params, engine version): equal fingerprints, equal numbers.
    """

    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="evaluations")
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="evaluations")
    stage = models.ForeignKey(RunStage, on_delete=models.PROTECT, related_name="evaluations")
    snapshot = models.ForeignKey(Snapshot, on_delete=models.PROTECT, related_name="+")
    mapping = models.ForeignKey(
        UnitMapping, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    params = models.JSONField()
    engine_version = models.CharField(max_length=32)
    fingerprint = models.CharField(max_length=64)
    status = models.CharField(max_length=16)
    counts = models.JSONField()
    aggregates = models.JSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["fingerprint"], name="evaluation_fingerprint_unique"),
        ]

    def __str__(self) -> str:
        return f"evaluation {self.pk}: {self.stage} vs {self.snapshot}"

    @property
    def aggregates_counted(self) -> dict[str, dict[str, Any]]:
        """``aggregates`` with each measure's denominator: ``n``, the queries it averages
        over, and ``n_reason`` where that is not every scorable query."""
        return with_denominators(self.aggregates, self.counts)


def with_denominators(
    aggregates: dict[str, dict[str, Any]], counts: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Each aggregate with ``n``, the number of queries it averages over (macro), and, when
    that set is not the header's (every scorable query), ``n_reason`` saying which it is.

    Evidence@k averages over the scorable queries that have an evidence condition only
    (``counts["with_evidence"]``); every other measure over every scorable query.
    """
    scorable = int(counts.get("scorable", 0))
    with_evidence = int(counts.get("with_evidence", 0))
    out: dict[str, dict[str, Any]] = {}
    for measure, agg in aggregates.items():
        entry = {**agg, "n": scorable}
        if measure.split("@", 1)[0] == "Evidence" and with_evidence != scorable:
            entry["n"] = with_evidence
            others = scorable - with_evidence
            entry["n_reason"] = (
                f"only the {counted(with_evidence, 'scorable query')} with an evidence "
                f"condition; the other {others} {'has' if others == 1 else 'have'} none, so "
                "evidence is undefined for them"
            )
        out[measure] = entry
    return out


class EvaluationQuery(FrozenModel):
    """One query's row of an evaluation: its measures, or the reason it was excluded."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.PROTECT, related_name="rows")
    query_id = models.CharField(max_length=ID_MAX)
    values = models.JSONField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["evaluation", "query_id"], name="evaluationquery_unique"
            ),
        ]
