"""One run's state in one query under an adaptive pooling strategy (issue 28)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from ..pool_strategies import STRATEGIES
from .collections import Collection
from .queries import Query
from .queue import ReviewTask


class PoolArm(models.Model):
    """A run stage pooled into one query by ``mtf`` or ``bandit`` (``judgments.
    pool_strategies``): its pooled tasks in rank order, its judged counts, and its head.

    The head is the first of ``tasks`` still open; the queue serves it with its run's
    score (``ReviewTask.priority``), so that a judgment changes the priority of the heads
    of the runs that pooled the pair only, never the whole pool. ``label`` is the task
    source's (``TaskSource.label``, e.g. ``run bm25 / reranked``).
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="+")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="pool_arms")
    label = models.CharField(max_length=300)
    strategy = models.CharField(max_length=16, choices=[(s, s) for s in STRATEGIES])
    tasks = models.JSONField(help_text="Slot-1 review task ids, in the run's rank order.")
    floor_count = models.PositiveIntegerField(
        default=0, help_text="How many of tasks lie within the depth floor (served first)."
    )
    position = models.PositiveIntegerField(default=0, help_text="The head's index in tasks.")
    head = models.ForeignKey(
        ReviewTask, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    judged = models.PositiveIntegerField(default=0)
    relevant = models.PositiveIntegerField(default=0)
    front = models.PositiveIntegerField(default=0, help_text="MTF: when it last moved to front.")
    score = models.BigIntegerField(default=0, help_text="pool_strategies.arm_score, stored.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "label"], name="poolarm_one_per_run"),
            models.CheckConstraint(condition=Q(strategy__in=STRATEGIES), name="poolarm_strategy"),
        ]
        indexes = [models.Index(fields=["head"], name="poolarm_head")]

    def __str__(self) -> str:
        return f"{self.label} in {self.query_id}"
