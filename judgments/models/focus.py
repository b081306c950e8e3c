"""Focus sets: pairs asked for by name, served before the pooled order, and a scope of the
review queue (``/c/<slug>/review/?scope=<name>``) that serves only them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from .collections import Collection
from .queries import Item, Query


class FocusSet(models.Model):
    """A named set of (query, item) pairs someone asked to have judged first, e.g. the
    unjudged pairs that could change the sign of a comparison (``compare-12-15``).

    Its tasks are queued at ``URGENT_PRIORITY`` (``services/focus.py``); the set itself
    only names the pairs, so that reviewers can be pointed at them. Pairs are added,
    never removed: the set says what was asked for, and when.
    """

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="focus_sets")
    name = models.SlugField(max_length=100)
    description = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["collection", "name"], name="focusset_name_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.collection_id}:{self.name}"

    def holds_task(self) -> models.Exists:
        """A filter on review tasks (or anything with ``query_id`` and ``item_id``): the
        pair is one of this set's."""
        return models.Exists(
            FocusPair.objects.filter(
                focus=self, query_id=models.OuterRef("query_id"), item_id=models.OuterRef("item_id")
            )
        )


class FocusPair(models.Model):
    """One pair of a focus set."""

    focus = models.ForeignKey(FocusSet, on_delete=models.CASCADE, related_name="pairs")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["focus", "query", "item"], name="focuspair_unique"),
        ]
        indexes = [models.Index(fields=["query", "item"], name="focuspair_pair")]

    def __str__(self) -> str:
        return f"{self.focus_id}: {self.query_id}/{self.item_id}"
