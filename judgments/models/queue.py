"""The review queue: one task per unjudged (query, item) pair, its sources and skips."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from .collections import Collection
from .queries import Item, Query


class TaskStatus(models.TextChoices):
    PENDING = "pending", "pending"
    CLAIMED = "claimed", "claimed"
    DONE = "done", "done"


class ReviewTask(models.Model):
    """The unjudged marker: a (query, item) pair waiting for a judgment.

    One row per pair and slot, however many sources surfaced it: one slot per assessor
    the collection asks for (``assessors_per_item``). It is ``done`` once the pair has a
    judgment (or, with several assessors, once its slot has an assessment); ``claimed``
    while a reviewer holds its lease. Sources are kept on slot 1.
    """

    collection = models.ForeignKey(
        Collection, on_delete=models.CASCADE, related_name="review_tasks"
    )
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="review_tasks")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="review_tasks")
    slot = models.PositiveSmallIntegerField(
        default=1,
        db_default=1,  # rows written by raw SQL or COPY (bench/, other tools) are slot 1
        help_text="Which of the collection's assessors_per_item assessments this task "
        "stands for; with one assessor per item always 1.",
    )
    status = models.CharField(max_length=16, choices=TaskStatus.choices, default=TaskStatus.PENDING)
    source = models.CharField(
        max_length=300, help_text='Where it came from first, e.g. "qrels -1" or "run bm25".'
    )
    best_rank = models.PositiveIntegerField(null=True, blank=True)
    priority = models.IntegerField(default=0, help_text="Higher is served first.")
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the latest claim began (kept once done)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-priority", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["query", "item", "slot"], name="reviewtask_one_per_slot"
            ),
            models.CheckConstraint(
                condition=Q(status__in=TaskStatus.values), name="reviewtask_status_valid"
            ),
            models.CheckConstraint(
                condition=~Q(status=TaskStatus.CLAIMED)
                | (Q(claimed_by__isnull=False) & Q(lease_expires_at__isnull=False)),
                name="reviewtask_claim_has_lease",
            ),
        ]
        indexes = [
            models.Index(
                fields=["collection", "status", "-priority", "id"], name="reviewtask_queue"
            ),
            # What claim_next_task scans: open tasks in serving order, without the done ones.
            models.Index(
                fields=["collection", "-priority", "id"],
                name="reviewtask_open_queue",
                condition=Q(status__in=["pending", "claimed"]),
            ),
        ]

    def __str__(self) -> str:
        return f"task {self.query_id}/{self.item_id} {self.status}"


class TaskSource(models.Model):
    """One place that surfaced a review task's pair: a run stage (by label) and its rank.

    The label is plain text (``"run bm25 / reranked"``) because ``judgments`` never
    imports ``scoring``'s models; one row per (task, label), keeping the best rank.
    """

    task = models.ForeignKey(ReviewTask, on_delete=models.CASCADE, related_name="sources")
    label = models.CharField(max_length=300)
    rank = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["rank", "label"]
        constraints = [
            models.UniqueConstraint(fields=["task", "label"], name="tasksource_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.label} rank {self.rank}"


class TaskSkip(models.Model):
    """A reviewer passed on a task: it goes back to the queue for the others."""

    task = models.ForeignKey(ReviewTask, on_delete=models.CASCADE, related_name="skips")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "reviewer"], name="taskskip_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer_id} skipped {self.task_id}"
