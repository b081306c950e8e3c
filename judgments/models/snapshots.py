"""Snapshots: frozen, numbered versions of a collection's labels, and their rows."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from ..wording import counted
from .collections import Collection, LabelingUnit
from .immutable import FrozenModel, ImmutableQuerySet
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
    model_labels = models.JSONField(
        default=dict,
        blank=True,
        help_text='Labels that came from model judges, by judge: {"local-baseline": 123}; '
        "empty when every label is a person's. n_judgments counts them too.",
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
    def unjudged_total(self) -> int:
        """Pairs this snapshot leaves unjudged: the unjudged markers and the pairs awaiting
        adjudication (form 2's ``unresolved`` lines, stored apart as ``n_unresolved``).
        Every count shown to people and the API's ``n_unjudged`` is this one."""
        return self.n_unjudged + self.n_unresolved

    @property
    def unjudged_summary(self) -> str:
        """ "12 unjudged markers", "… (3 of them awaiting adjudication)"."""
        text = counted(self.unjudged_total, "unjudged marker")
        if self.n_unresolved:
            text += f" ({self.n_unresolved} of them awaiting adjudication)"
        return text

    @property
    def has_overlap(self) -> bool:
        """Frozen from a collection with several assessors per item (canonical form 2)."""
        return bool(self.resolution_policy)

    @property
    def label(self) -> str:
        return f"v{self.number} sha256:{self.content_hash[:12]}"

    @property
    def n_model_labels(self) -> int:
        return sum(self.model_labels.values())

    @property
    def n_human_labels(self) -> int:
        return self.n_judgments - self.n_model_labels

    @property
    def label_counts(self) -> str:
        """``people=100`` or ``people=100, model:local-baseline=23``: the qrels export's
        ``Verity-Label-Sources`` header and note."""
        parts = [f"people={self.n_human_labels}"]
        parts += [f"model:{judge}={n}" for judge, n in sorted(self.model_labels.items())]
        return ", ".join(parts)

    @property
    def label_sources(self) -> str:
        """Who made the labels, e.g. "100 by people, 20 by model judge local-baseline
        (accepted where no person assessed the pair); 120 in all" (every report scored
        against the snapshot says it)."""
        if not self.model_labels:
            return f"all {self.n_judgments} by people"
        judges = ", ".join(
            f"{n} by model judge {name}" for name, n in sorted(self.model_labels.items())
        )
        return (
            f"{self.n_human_labels} by people, {judges} "
            f"(accepted where no person assessed the pair); {self.n_judgments} in all"
        )


def held_by(snapshot: Snapshot | int, prefix: str = "") -> Q:
    """The blocks version ``snapshot`` holds (``prefix`` the path to the block): those of
    its collection whose run of versions ``[first_number, end_number)`` contains it."""
    if not isinstance(snapshot, Snapshot):
        snapshot = Snapshot.objects.only("collection_id", "number").get(pk=snapshot)
    return Q(
        **{
            f"{prefix}collection_id": snapshot.collection_id,
            f"{prefix}first_number__lte": snapshot.number,
        }
    ) & (
        Q(**{f"{prefix}end_number__isnull": True})
        | Q(**{f"{prefix}end_number__gt": snapshot.number})
    )


class FrozenRowQuerySet(ImmutableQuerySet):
    def of(self, snapshot: Snapshot | int) -> FrozenRowQuerySet:
        """The rows of version ``snapshot``: those of the query blocks it holds."""
        return self.filter(held_by(snapshot, "block__"))


class FrozenBlockQuerySet(ImmutableQuerySet):
    def of(self, snapshot: Snapshot | int) -> FrozenBlockQuerySet:
        """The query blocks version ``snapshot`` holds."""
        return self.filter(held_by(snapshot))


class SnapshotQuery(FrozenModel):
    """A query as frozen: its review status and evidence condition, and the block of
    rows (judgments, unjudged markers, assessments) frozen with it.

    A block is shared: it is written once, by the version that first froze this content
    of the query (``frozen_in``, number ``first_number``), and every later version whose
    content for the query is the same holds it too, until the version ``end_number``
    that replaced it (the query's content changed) or dropped it (the query is gone).
    ``end_number`` is null while the latest version holds the block. So the versions
    holding a block are the run ``[first_number, end_number)``, and a version after one
    regrade writes one block and ends one, whatever the size of the collection.
    ``end_number`` is the one column ever written after the insert, once, from null
    (on PostgreSQL a trigger refuses any other change, and every DELETE).

    The ``*_lines`` fields hold the block's part of each section of the canonical form
    (``judgments/snapshots.py``), so a freeze can hash unchanged queries from these
    bytes without reading their rows; ``query_line`` is null for a block written before
    blocks carried them (0015), which the next freeze renders again from the live labels.
    The ``n_*`` counts are the block's lines per section.
    """

    frozen_in = models.ForeignKey(
        Snapshot, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    query = models.ForeignKey(
        Query, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    collection = models.ForeignKey(
        Collection, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )
    first_number = models.PositiveIntegerField()
    end_number = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=QueryStatus.choices)
    evidence = models.JSONField(null=True, blank=True)
    n_judgments = models.PositiveIntegerField(default=0)
    n_model_labels = models.PositiveIntegerField(default=0)
    n_unjudged = models.PositiveIntegerField(default=0)
    n_assessments = models.PositiveIntegerField(default=0)
    n_unresolved = models.PositiveIntegerField(default=0)
    query_line = models.BinaryField(null=True)
    judgment_lines = models.BinaryField(default=b"")
    model_lines = models.BinaryField(default=b"")
    assessment_lines = models.BinaryField(default=b"")
    unjudged_lines = models.BinaryField(default=b"")
    unresolved_lines = models.BinaryField(default=b"")

    objects = FrozenBlockQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["frozen_in", "query"], name="snapshotquery_unique"),
            # The latest version holds one block per query: the one a freeze ends.
            models.UniqueConstraint(
                fields=["query"], condition=Q(end_number__isnull=True), name="snapshotquery_held"
            ),
            models.CheckConstraint(
                condition=Q(end_number__isnull=True) | Q(end_number__gte=F("first_number")),
                name="snapshotquery_run",
            ),
        ]
        indexes = [models.Index(fields=["collection", "first_number"], name="snapshotquery_runs")]

    def __str__(self) -> str:
        return f"{self.frozen_in_id}/{self.query_id}: {self.status}"


def _ref(model: type[models.Model]) -> models.ForeignKey:
    return models.ForeignKey(
        model, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )


class SnapshotJudgment(FrozenModel):
    """A judgment's grade as frozen in a query block. ``source`` is empty for a person's
    label (the resolved one with several assessors) and the judge's name for a model's
    proposal that the collection's policy accepted at freeze."""

    block = _ref(SnapshotQuery)
    query = _ref(Query)
    item = _ref(Item)
    grade = models.SmallIntegerField()
    # A database default: the freeze copies people's labels with INSERT … SELECT.
    source = models.CharField(max_length=100, blank=True, default="", db_default="")

    objects = FrozenRowQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["block", "item"], name="snapshotjudgment_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.block_id}/{self.query_id}/{self.item_id}={self.grade}"


class SnapshotUnjudged(FrozenModel):
    """An open review task (unjudged marker) as frozen in a query block."""

    block = _ref(SnapshotQuery)
    query = _ref(Query)
    item = _ref(Item)

    objects = FrozenRowQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["block", "item"], name="snapshotunjudged_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.block_id}/{self.query_id}/{self.item_id} unjudged"


class SnapshotAssessment(FrozenModel):
    """One assessor's grade for a pair as frozen in a query block of a collection with
    several assessors per item (so per-assessor scores and agreement are reproducible)."""

    block = _ref(SnapshotQuery)
    query = _ref(Query)
    item = _ref(Item)
    assessor = models.CharField(max_length=150)
    grade = models.SmallIntegerField()

    objects = FrozenRowQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["block", "item", "assessor"], name="snapshotassessment_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.block_id}/{self.query_id}/{self.item_id} {self.assessor}={self.grade}"


class UnfrozenChange(models.Model):
    """A query whose labels changed since its collection was last frozen.

    Written by database triggers (migration 0015) on every table the canonical form is
    made from, whatever wrote the change: a service, an import, raw SQL. The next freeze
    renders these queries again and deletes the rows it read; every other query keeps
    its block. Not a foreign key: a trigger writes it, and a query may go.
    """

    query_id = models.BigIntegerField(db_index=True)

    def __str__(self) -> str:
        return f"query {self.query_id} changed"
