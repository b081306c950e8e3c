"""Reviewer statistics for collection admins: per assessor, how much, how fast, how often
they skip, and how far their labels agree with the resolved ones."""

from __future__ import annotations

import statistics
from collections import defaultdict
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from django.contrib.auth import get_user_model

from ..models import Assessment, ChangeSource, Collection, JudgmentChange, ReviewTask, TaskSkip
from .assessments import agreement_report

SESSION_GAP = timedelta(minutes=30)
"""Two labels further apart than this belong to two sittings: the gap is not work time."""


def labels_per_hour(times: list[datetime]) -> float | None:
    """Labels per hour of work: the gaps between consecutive labels that are at most
    ``SESSION_GAP`` are work, each ending in one label; the rate is those labels over
    that time. ``None`` when no two labels fall within one sitting."""
    gaps = [(b - a).total_seconds() for a, b in pairwise(sorted(times)) if b - a <= SESSION_GAP]
    worked = sum(gaps)
    if worked <= 0:
        return None
    return len(gaps) / (worked / 3600)


def reviewer_stats(collection: Collection) -> list[dict[str, Any]]:
    """One row per assessor (user) who labelled in the collection: labels (assessments,
    or judgments they created in the queue, the UI or the API), labels per hour
    (``labels_per_hour``), the median seconds from claiming a task to submitting its
    label, skips, and agreement with the resolved labels (``agreement_report``'s
    ``vs_resolved``, ``None`` below its minimum overlap)."""
    username = get_user_model().USERNAME_FIELD
    times: dict[str, list[datetime]] = defaultdict(list)
    seconds: dict[str, list[float]] = defaultdict(list)
    for who, claimed, made in Assessment.objects.filter(
        collection=collection, assessor__isnull=False
    ).values_list(f"assessor__{username}", "claimed_at", "created_at"):
        times[who].append(made)
        if claimed is not None and claimed <= made:
            seconds[who].append((made - claimed).total_seconds())
    if not collection.has_overlap:
        claims = {
            (q, i): at
            for q, i, at in ReviewTask.objects.filter(
                collection=collection, slot=1, claimed_at__isnull=False
            ).values_list("query_id", "item_id", "claimed_at")
        }
        for who, q, i, made in JudgmentChange.objects.filter(
            query__collection=collection,
            old_grade__isnull=True,
            new_grade__isnull=False,
            changed_by__isnull=False,
            source__in=[ChangeSource.UI, ChangeSource.API],
        ).values_list(f"changed_by__{username}", "query_id", "item_id", "changed_at"):
            times[who].append(made)
            claimed = claims.get((q, i))
            if claimed is not None and claimed <= made:
                seconds[who].append((made - claimed).total_seconds())
    skips: dict[str, int] = defaultdict(int)
    for who in TaskSkip.objects.filter(task__collection=collection).values_list(
        f"reviewer__{username}", flat=True
    ):
        skips[who] += 1
    vs_resolved = {r["assessor"]: r for r in agreement_report(collection)["vs_resolved"]}
    rows = []
    for who in sorted(times.keys() | skips.keys()):
        agreement = vs_resolved.get(who, {})
        rows.append(
            {
                "assessor": who,
                "labels": len(times[who]),
                "per_hour": labels_per_hour(times[who]),
                "median_seconds": statistics.median(seconds[who]) if seconds[who] else None,
                "timed": len(seconds[who]),
                "skips": skips[who],
                "agreement": agreement.get("agreement"),
                "kappa": agreement.get("kappa"),
                "agreement_n": agreement.get("n", 0),
                "agreement_undefined": agreement.get("undefined", ""),
            }
        )
    return rows
