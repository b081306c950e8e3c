"""Queries with their review status, the items they are judged against, and evidence
conditions."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connections, models
from django.db.models import BooleanField, Q
from django.db.models.expressions import RawSQL

from verity_limits import ID_MAX, URL_MAX

from ..wording import counted
from .collections import Collection


class QueryStatus(models.TextChoices):
    UNREVIEWED = "unreviewed", "unreviewed"
    RELEVANT = "relevant", "reviewed: has relevant items"
    NO_ANSWER = "no_answer", "reviewed: confirmed no answer"


def status_refusal(*, query_id: str, status: str, relevant_count: int) -> str:
    """Why ``status`` does not fit a query with ``relevant_count`` relevant judgments, or
    ``""`` when it does: the one rule that keeps a review status consistent with its
    judgments (``relevant`` needs one, ``no_answer`` allows none)."""
    if status not in QueryStatus.values:
        return f"status {status!r} must be one of {', '.join(QueryStatus.values)}"
    if status == QueryStatus.RELEVANT and relevant_count == 0:
        return (
            f"query '{query_id}' has no relevant judgment, so it cannot be marked "
            "'has relevant items'; judge a relevant item first, or mark it 'no answer'"
        )
    if status == QueryStatus.NO_ANSWER and relevant_count:
        return (
            f"query '{query_id}' has {relevant_count} relevant judgment(s), so it "
            "cannot be marked 'confirmed no answer'; regrade them first"
        )
    return ""


@dataclass(frozen=True)
class StatusPlan:
    """What setting ``status`` on a set of queries would do, query ids in order: the ones
    it changes, the ones that have it already, and the ones the rule refuses (with why)."""

    status: str
    change: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)


def bulk_no_answer_refusal(*, query_id: str, judged: int, open_tasks: int) -> str:
    """Why the bulk action may not mark a query "confirmed no answer", or ``""``: a
    claim about the whole corpus is not made for many queries at once while one of them
    has items still queued for review, or nothing judged at all. One query at a time, on
    its page (after searching the collection), it still can be."""
    if open_tasks:
        return (
            f"query '{query_id}' still has {counted(open_tasks, 'item')} queued for review; "
            "judge them first, or confirm it on its own query page"
        )
    if judged == 0:
        return (
            f"query '{query_id}' has nothing judged yet; confirm it has no answer on its "
            "own query page, after searching the collection"
        )
    return ""


def plan_status_change(rows: Iterable[tuple[str, str, int, int, int]], status: str) -> StatusPlan:
    """The plan for ``(query id, current status, relevant judgments, judgments, open
    review tasks)`` rows, by ``status_refusal`` and, for "confirmed no answer",
    ``bulk_no_answer_refusal``: the preview and the bulk change share it."""
    plan = StatusPlan(status=status)
    for query_id, current, relevant_count, judged, open_tasks in rows:
        refusal = status_refusal(query_id=query_id, status=status, relevant_count=relevant_count)
        if not refusal and status == QueryStatus.NO_ANSWER and current != status:
            refusal = bulk_no_answer_refusal(
                query_id=query_id, judged=judged, open_tasks=open_tasks
            )
        if refusal:
            plan.refused.append((query_id, refusal))
        elif current == status:
            plan.unchanged.append(query_id)
        else:
            plan.change.append(query_id)
    return plan


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
    external_id = models.CharField(max_length=ID_MAX)
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
    external_id = models.CharField(max_length=ID_MAX)
    title = models.TextField(blank=True)
    text = models.TextField(blank=True)
    url = models.URLField(max_length=URL_MAX, blank=True)
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
