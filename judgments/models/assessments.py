"""Several assessors per item: each assessor's own grade for a pair, its history, and
the pairs whose assessors disagree beyond what the collection's policy resolves."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .collections import Collection
from .immutable import AppendOnlyModel
from .judgments import ChangeSource
from .queries import Item, Query


class Assessment(models.Model):
    """One assessor's grade (and note) for a (query, item) pair.

    The assessor is a user, or a name (``assessor_name``) for labels imported from
    elsewhere (``--assessor NAME``); exactly one of the two is set, and an assessor has
    at most one assessment per pair. The pair's resolved label stays its ``Judgment``.
    ``version`` works as a judgment's: compare-and-set in the service.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="assessments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assessments")
    assessor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    assessor_name = models.CharField(
        max_length=150, blank=True, help_text="An imported assessor's name (no user)."
    )
    grade = models.SmallIntegerField()
    note = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)
    claimed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the assessor claimed the task it answered."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["query", "item", "created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["query", "item", "assessor"],
                condition=Q(assessor__isnull=False),
                name="assessment_one_per_user",
            ),
            models.UniqueConstraint(
                fields=["query", "item", "assessor_name"],
                condition=Q(assessor__isnull=True),
                name="assessment_one_per_name",
            ),
            models.CheckConstraint(
                condition=(Q(assessor__isnull=False) & Q(assessor_name=""))
                | (Q(assessor__isnull=True) & ~Q(assessor_name="")),
                name="assessment_user_or_name",
            ),
            models.CheckConstraint(condition=Q(grade__gte=0), name="assessment_grade_non_negative"),
        ]
        indexes = [models.Index(fields=["collection", "query"], name="assessment_collection")]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.item_id} by {self.who}={self.grade} v{self.version}"

    @property
    def who(self) -> str:
        """The assessor's name as agreement and exports show it."""
        return self.assessor.get_username() if self.assessor_id else self.assessor_name


class AssessmentChange(AppendOnlyModel):
    """One change of one assessment: who, when, old → new (``old_grade`` null on create)."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    assessor_name = models.CharField(max_length=150)
    old_grade = models.SmallIntegerField(null=True, blank=True)
    new_grade = models.SmallIntegerField()
    new_note = models.TextField(blank=True)
    version = models.PositiveIntegerField()
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=16, choices=ChangeSource.choices)

    class Meta:
        ordering = ["changed_at", "pk"]
        indexes = [models.Index(fields=["query", "item"], name="assessmentchange_pair")]

    def __str__(self) -> str:
        pair = f"{self.query_id}/{self.item_id}"
        return f"{pair} {self.assessor_name}: {self.old_grade} → {self.new_grade}"


class AdjudicationStatus(models.TextChoices):
    OPEN = "open", "open"
    DECIDED = "decided", "decided"


class AdjudicationTask(models.Model):
    """A pair whose assessments the collection's policy does not resolve: a person with
    the adjudicator capability decides its grade. One per pair; the decision (grade,
    who, when) stays here and, as the resolved label, in the judgment's history."""

    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, related_name="adjudication_tasks"
    )
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(
        max_length=16, choices=AdjudicationStatus.choices, default=AdjudicationStatus.OPEN
    )
    reason = models.CharField(max_length=300)
    grade = models.SmallIntegerField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_by_name = models.CharField(
        max_length=150,
        blank=True,
        default="",
        help_text="Who decided, by name, when an import named someone who is not a member "
        "of the collection (no user; '' otherwise).",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(fields=["query", "item"], name="adjudication_one_per_pair"),
            models.CheckConstraint(
                condition=Q(status="open") | (Q(grade__isnull=False) & Q(decided_at__isnull=False)),
                name="adjudication_decision_complete",
            ),
        ]
        indexes = [models.Index(fields=["collection", "status"], name="adjudication_queue")]

    def __str__(self) -> str:
        return f"adjudicate {self.query_id}/{self.item_id} {self.status}"

    @property
    def decider(self) -> str:
        """Who decided, in words: the user's name, or the name an import gave."""
        return self.decided_by.get_username() if self.decided_by_id else self.decided_by_name
