"""Snapshots: frozen, numbered versions of a collection's labels, and their rows."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .collections import Collection, LabelingUnit
from .immutable import FrozenModel
from .queries import Item, Query, QueryStatus


class Snapshot(FrozenModel):
    """Version ``number`` of a collection's judgments, query statuses and unjudged markers.

    ``content_hash`` is the sha256 of the canonical form documented in
    ``judgments/snapshots.py``; equal content always gives an equal hash.
    """

    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="snapshots")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    scale = models.JSONField()
    relevant_grade = models.PositiveSmallIntegerField()
    unit = models.CharField(max_length=16, choices=LabelingUnit.choices)
    note = models.TextField(blank=True)
    n_queries = models.PositiveIntegerField()
    n_judgments = models.PositiveIntegerField()
    n_unjudged = models.PositiveIntegerField()
    assessors_per_item = models.PositiveSmallIntegerField(default=1)
    resolution_policy = models.CharField(
        max_length=16, blank=True, help_text="Empty for a single-assessor snapshot (form 1)."
    )
    adjudicate_distance = models.PositiveSmallIntegerField(default=1)
    n_assessments = models.PositiveIntegerField(default=0)
    n_unresolved = models.PositiveIntegerField(
        default=0, help_text="Pairs assessed by every assessor but awaiting adjudication."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "-number"]
        get_latest_by = "number"
        constraints = [
            models.UniqueConstraint(fields=["collection", "number"], name="snapshot_number_unique"),
            models.CheckConstraint(condition=Q(number__gte=1), name="snapshot_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.collection_id} v{self.number} ({self.content_hash[:12]})"

    @property
    def has_overlap(self) -> bool:
        """Frozen from a collection with several assessors per item (canonical form 2)."""
        return bool(self.resolution_policy)

    @property
    def label(self) -> str:
        return f"v{self.number} sha256:{self.content_hash[:12]}"


class SnapshotQuery(FrozenModel):
    """A query's review status and evidence condition as frozen in a snapshot."""

    snapshot = models.ForeignKey(
        Snapshot,
        on_delete=models.PROTECT,
        related_name="queries",
        db_constraint=False,
        db_index=False,
    )
    query = models.ForeignKey(
        Query, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    status = models.CharField(max_length=16, choices=QueryStatus.choices)
    evidence = models.JSONField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "query"], name="snapshotquery_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.snapshot_id}/{self.query_id}: {self.status}"


class SnapshotJudgment(FrozenModel):
    """A judgment's grade as frozen in a snapshot."""

    snapshot = models.ForeignKey(
        Snapshot,
        on_delete=models.PROTECT,
        related_name="judgments",
        db_constraint=False,
        db_index=False,
    )
    query = models.ForeignKey(
        Query, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    item = models.ForeignKey(
        Item, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    grade = models.SmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["snapshot", "query", "item"], name="snapshotjudgment_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.snapshot_id}/{self.query_id}/{self.item_id}={self.grade}"


class SnapshotUnjudged(FrozenModel):
    """An open review task (unjudged marker) as frozen in a snapshot."""

    snapshot = models.ForeignKey(
        Snapshot,
        on_delete=models.PROTECT,
        related_name="unjudged",
        db_constraint=False,
        db_index=False,
    )
    query = models.ForeignKey(
        Query, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    item = models.ForeignKey(
        Item, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["snapshot", "query", "item"], name="snapshotunjudged_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.snapshot_id}/{self.query_id}/{self.item_id} unjudged"


class SnapshotAssessment(FrozenModel):
    """One assessor's grade for a pair as frozen in a snapshot of a collection with
    several assessors per item (so per-assessor scores and agreement are reproducible)."""

    snapshot = models.ForeignKey(
        Snapshot,
        on_delete=models.PROTECT,
        related_name="assessments",
        db_constraint=False,
        db_index=False,
    )
    query = models.ForeignKey(
        Query, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    item = models.ForeignKey(
        Item, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    assessor = models.CharField(max_length=150)
    grade = models.SmallIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["snapshot", "query", "item", "assessor"],
                name="snapshotassessment_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.snapshot_id}/{self.query_id}/{self.item_id} {self.assessor}={self.grade}"
