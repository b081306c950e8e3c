"""The one current judgment of a (query, item) pair, and the append-only history of
judgment and query status changes."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .immutable import AppendOnlyModel
from .queries import Item, Query, QueryStatus


class Judgment(models.Model):
    """The one current judgment of a (query, item) pair.

    ``version`` starts at 1 and grows by one on every change; an edit names the version
    it was based on and is refused when that is stale (compare-and-set in the service).
    """

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="judgments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judgments")
    grade = models.SmallIntegerField()
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewer_name = models.CharField(
        max_length=150,
        blank=True,
        default="",
        help_text="The person an import named who is not a member of the collection: an "
        "external assessor's name, never a user account ('' otherwise).",
    )
    note = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=1)
    client_key = models.CharField(  # noqa: DJ001 -- NULL, not "", so that keys stay unique
        max_length=100,
        null=True,
        blank=True,
        help_text="A client-chosen key that makes a retried create return this judgment.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["query", "item"]
        constraints = [
            models.UniqueConstraint(fields=["query", "item"], name="judgment_one_per_pair"),
            models.UniqueConstraint(
                fields=["client_key"],
                condition=Q(client_key__isnull=False),
                name="judgment_client_key_unique",
            ),
            models.CheckConstraint(condition=Q(grade__gte=0), name="judgment_grade_non_negative"),
            models.CheckConstraint(condition=Q(version__gte=1), name="judgment_version_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.item_id}={self.grade} v{self.version}"

    @property
    def who(self) -> str:
        """Who set the grade, in words: the reviewer's username, or the external
        assessor's name an import gave ('' when neither)."""
        return self.reviewer.get_username() if self.reviewer_id else self.reviewer_name


class ChangeSource(models.TextChoices):
    UI = "ui", "browser"
    API = "api", "API"
    IMPORT = "import", "import"
    ADMIN = "admin", "admin"
    SEARCH = "search", "search"  # judged from a search hit, not from a queued task
    RESOLUTION = "resolution", "resolution policy"  # resolved from several assessments
    ADJUDICATION = "adjudication", "adjudication"  # decided by an adjudicator


class JudgmentChange(AppendOnlyModel):
    """One change of one judgment: who, when, old → new. ``old_grade`` is null on create."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="judgment_changes")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judgment_changes")
    old_grade = models.SmallIntegerField(null=True, blank=True)
    new_grade = models.SmallIntegerField(
        null=True, blank=True, help_text="Null when the change removed the judgment (an undo)."
    )
    old_note = models.TextField(blank=True)
    new_note = models.TextField(blank=True)
    version = models.PositiveIntegerField()
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=16, choices=ChangeSource.choices)

    class Meta:
        ordering = ["changed_at", "pk"]
        indexes = [models.Index(fields=["query", "item"], name="judgmentchange_pair")]

    def __str__(self) -> str:
        return f"{self.query_id}/{self.item_id}: {self.old_grade} → {self.new_grade}"


class QueryStatusChange(AppendOnlyModel):
    """One change of a query's review status."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="status_changes")
    old_status = models.CharField(max_length=16, choices=QueryStatus.choices)
    new_status = models.CharField(max_length=16, choices=QueryStatus.choices)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    changed_at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=16, choices=ChangeSource.choices)

    class Meta:
        ordering = ["changed_at", "pk"]

    def __str__(self) -> str:
        return f"{self.query_id}: {self.old_status} → {self.new_status}"
