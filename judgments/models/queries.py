"""Queries with their review status, the items they are judged against, and evidence
conditions."""

from __future__ import annotations

from django.conf import settings
from django.db import connections, models
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from .collections import Collection


class QueryStatus(models.TextChoices):
    UNREVIEWED = "unreviewed", "unreviewed"
    RELEVANT = "relevant", "reviewed: has relevant items"
    NO_ANSWER = "no_answer", "reviewed: confirmed no answer"


class QueryQuerySet(models.QuerySet["Query"]):
    def with_tag(self, tag: str) -> QueryQuerySet:
        """Queries whose tag list holds ``tag``."""
        if connections[self.db].vendor == "postgresql":
            return self.filter(tags__contains=[tag])
        # SQLite has no JSON containment lookup; json_each is its JSON1 equivalent.
        table = self.model._meta.db_table
        return self.alias(
            has_tag=RawSQL(
                f"EXISTS (SELECT 1 FROM json_each({table}.tags) WHERE json_each.value = %s)",
                [tag],
                output_field=BooleanField(),
            )
        ).filter(has_tag=True)


class Query(models.Model):
    """A stable external id, its text and tags, and its review status.

    The status is stored apart from the judgments: an empty judgment list means
    "unreviewed" or "confirmed no answer" only as the status says.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="queries")
    external_id = models.CharField(max_length=200)
    text = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    status = models.CharField(
        max_length=16, choices=QueryStatus.choices, default=QueryStatus.UNREVIEWED
    )
    status_changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status_changed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = QueryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "queries"
        ordering = ["collection", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "external_id"], name="query_external_id_unique"
            ),
            models.CheckConstraint(
                condition=Q(status__in=QueryStatus.values), name="query_status_valid"
            ),
        ]
        indexes = [models.Index(fields=["collection", "status"], name="query_collection_status")]

    def __str__(self) -> str:
        return f"{self.collection_id}:{self.external_id}"

    @property
    def is_scorable(self) -> bool:
        return self.status == QueryStatus.RELEVANT


class Item(models.Model):
    """A stable external id within the collection, with the text a reviewer reads.

    ``placeholder`` items were created from a run before their text was imported;
    an item import fills them in. Ids are opaque and never renumbered.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=200)
    title = models.TextField(blank=True)
    text = models.TextField(blank=True)
    url = models.URLField(max_length=2000, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    placeholder = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "external_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "external_id"], name="item_external_id_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.collection_id}:{self.external_id}"


class EvidenceCondition(models.Model):
    """A query's evidence rule in disjunctive normal form, stored apart from judgments.

    ``groups`` is a list of AND-groups of item external ids: the condition holds when
    every item of at least one group is retrieved. It is scored as its own measure.
    """

    query = models.OneToOneField(Query, on_delete=models.CASCADE, related_name="evidence")
    groups = models.JSONField()
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return " OR ".join("(" + " AND ".join(g) + ")" for g in self.groups)
