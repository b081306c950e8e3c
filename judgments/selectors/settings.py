"""A collection's settings: what a change would do before it is made, and the history of
its settings and members from the audit log.

The querysets here name the rows a change of ``assessors_per_item`` acts on; the service
(``services.collections``) acts on the same ones, so the preview's counts are the
change's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Exists, OuterRef, QuerySet

from audit.models import AuditEvent

from ..extensions import label_source, run_names
from ..models import (
    AdjudicationStatus,
    AdjudicationTask,
    Assessment,
    Collection,
    Item,
    Judgment,
    ReviewTask,
    TaskStatus,
)
from ..wording import counted

#: The audit actions the settings page's history shows.
HISTORY_ACTIONS = (
    "collection.create",
    "collection.settings",
    "member.add",
    "member.role",
    "member.adjudicate",
    "member.remove",
)


def judgments_without_assessment(collection: Collection) -> QuerySet[Judgment]:
    """The judged pairs that become their reviewers' assessments when overlap starts."""
    same_pair = Assessment.objects.filter(
        query_id=OuterRef("query_id"), item_id=OuterRef("item_id")
    )
    return Judgment.objects.filter(query__collection=collection).exclude(Exists(same_pair))


def open_first_slots(collection: Collection) -> QuerySet[ReviewTask]:
    """Slot-1 tasks not done: the pairs that get their other slots when overlap starts."""
    return ReviewTask.objects.filter(collection=collection, slot=1).exclude(status=TaskStatus.DONE)


def unresolved_first_slots(collection: Collection) -> QuerySet[ReviewTask]:
    """Slot-1 tasks of pooled pairs still being assessed (no label yet, none awaiting an
    adjudicator): the pairs that get more slots when assessors per item rise."""
    same = {"query_id": OuterRef("query_id"), "item_id": OuterRef("item_id")}
    return ReviewTask.objects.filter(collection=collection, slot=1).exclude(
        Exists(Judgment.objects.filter(**same)) | Exists(AdjudicationTask.objects.filter(**same))
    )


@dataclass(frozen=True)
class SettingChange:
    name: str
    label: str
    before: Any
    after: Any
    effect: str


LABELS = {
    "name": "Name",
    "description": "Corpus boundary",
    "guidelines": "Guidelines",
    "pool_depth": "Pool depth",
    "holds_whole_corpus": "Holds the whole corpus",
    "assessors_per_item": "Assessors per item",
    "resolution_policy": "Resolution policy",
    "adjudicate_distance": "Adjudicate distance",
    "model_labels": "Model labels",
    "pool_strategy": "Pooling strategy",
    "pool_floor": "Depth floor",
    "role": "Role",
    "can_adjudicate": "May adjudicate",
}


def settings_change_plan(collection: Collection, changes: dict[str, Any]) -> list[SettingChange]:
    """What applying ``changes`` would do, one entry per setting whose value changes,
    with counts read from the collection now. A read: nothing is changed."""
    plan = []
    for name, after in changes.items():
        before = getattr(collection, name)
        if before == after:
            continue
        effect = _EFFECTS[name](collection, before, after)
        plan.append(SettingChange(name, LABELS[name], before, after, effect))
    return plan


def _name(c: Collection, before: Any, after: Any) -> str:
    return f"Every page, report and export names the collection '{after}' instead of '{before}'."


def _description(c: Collection, before: Any, after: Any) -> str:
    return (
        f"The corpus boundary shown on the collection page changes ({len(before)} → "
        f"{len(after)} characters)."
    )


def _guidelines(c: Collection, before: Any, after: Any) -> str:
    return (
        f"Reviewers see the new guidelines ({len(before)} → {len(after)} characters) on the "
        "collection page and beside their next task in the queue."
    )


def _pool_depth(c: Collection, before: Any, after: Any) -> str:
    runs = run_names(c.pk)
    kept = (
        f" The {counted(len(runs), 'run')} imported already keep their review tasks as they are."
        if runs
        else ""
    )
    return (
        f"Runs imported from now on queue their unjudged items down to rank {after} (was "
        f"{before}).{kept}"
    )


def _whole_corpus(c: Collection, before: Any, after: Any) -> str:
    placeholders = Item.objects.filter(collection=c, placeholder=True).count()
    if after:
        return (
            "A run imported from now on that names an item the collection lacks is refused, "
            "instead of making a placeholder item to judge. The collection holds "
            f"{counted(placeholders, 'placeholder item')} now; they stay."
        )
    return (
        "A run imported from now on that names an item the collection lacks (within the "
        "pool depth) makes a placeholder item to judge, instead of being refused."
    )


def _assessors(c: Collection, before: int, after: int) -> str:
    if before == 1 and after > 1:
        kept = judgments_without_assessment(c).count()
        first = open_first_slots(c).count()
        opened = counted(first * (after - 1), "more review task")
        return (
            f"Raising assessors per item to {after} opens {opened} "
            f"({after - 1} for each of the {counted(first, 'open pair')}) and keeps "
            f"{counted(kept, 'judgment')} as {'its' if kept == 1 else 'their'} reviewers' "
            "assessments. From then on reviewers label blind: only evaluators and admins "
            "see resolved labels, and pairs are resolved by the resolution policy."
        )
    if 1 < before < after:
        pairs = unresolved_first_slots(c).count()
        return (
            f"Raising assessors per item from {before} to {after} opens "
            f"{counted(pairs * (after - before), 'more review task')} ({after - before} for "
            f"each of the {counted(pairs, 'pair')} still being assessed); pairs resolved or "
            "awaiting an adjudicator stay as they are."
        )
    beyond = ReviewTask.objects.filter(collection=c, slot__gt=after).exclude(status=TaskStatus.DONE)
    n = beyond.count()
    text = (
        f"Pairs pooled from now on get {counted(after, 'task')} each (was {before}). The "
        f"{counted(n, 'open task')} beyond slot {after} stay in the queue; a pair still "
        "being assessed is resolved when its next assessment arrives."
    )
    if after == 1:
        kept = counted(Assessment.objects.filter(collection=c).count(), "assessment")
        text += (
            " With one assessor per item the collection is no longer blind: every member "
            f"sees its labels again. Its {kept} stay stored."
        )
    return text


def _resolution_scope(c: Collection) -> str:
    if c.assessors_per_item == 1:
        return (
            " It takes effect only with two or more assessors per item (one assessor per item now)."
        )
    resolved = (
        Judgment.objects.filter(query__collection=c)
        .filter(
            Exists(
                Assessment.objects.filter(
                    query_id=OuterRef("query_id"), item_id=OuterRef("item_id")
                )
            )
        )
        .count()
    )
    waiting = AdjudicationTask.objects.filter(collection=c, status=AdjudicationStatus.OPEN).count()
    return (
        f" The {counted(resolved, 'pair')} labelled already and the "
        f"{counted(waiting, 'pair')} awaiting an adjudicator stay as they are."
    )


def _policy(c: Collection, before: Any, after: Any) -> str:
    return (
        f"Pairs that get their last assessment from now on are resolved by '{after}' "
        f"(was '{before}')." + _resolution_scope(c)
    )


def _distance(c: Collection, before: Any, after: Any) -> str:
    return (
        f"From now on min-of-agreeing and adjudicate resolve grades at most {after} apart "
        f"without an adjudicator (was {before}); wider spreads go to adjudication."
        + _resolution_scope(c)
    )


def _model_labels(c: Collection, before: Any, after: Any) -> str:
    if not after:
        return f"No model-made label enters the next snapshot (judge '{before}' did)."
    source = label_source()
    try:
        n = sum(1 for _ in source.labels(c, after)) if source is not None else 0
    except LookupError:
        n = 0
    return (
        f"At the next freeze, judge '{after}' labels the {counted(n, 'pair')} that no "
        "person judged or assessed and that it has a proposal for now; snapshots and "
        "reports count them as the judge's."
    )


def _pool_strategy(c: Collection, before: Any, after: Any) -> str:
    runs = run_names(c.pk)
    if after == "depth":
        return (
            "Runs imported from now on pool by depth. The runs' adaptive state is dropped "
            "and every open task served ahead by it gets the depth rule's priority again "
            "(most-surfaced pairs first)."
        )
    kept = (
        f" The {counted(len(runs), 'run')} imported already keep{'s' if len(runs) == 1 else ''} "
        "the order they were pooled with."
        if runs
        else ""
    )
    return (
        f"Runs imported from now on serve each query's pooled pairs by '{after}' (was "
        f"'{before}'): the next pair is the next unjudged item of the best run so far, "
        f"and every judgment moves the order.{kept}"
    )


def _pool_floor(c: Collection, before: Any, after: Any) -> str:
    if not after:
        return f"Runs imported from now on have no depth floor (was their first {before})."
    return (
        f"Runs imported from now on have their first {counted(after, 'pooled item')} served "
        f"before any adaptive choice (was {before})."
    )


_EFFECTS = {
    "name": _name,
    "description": _description,
    "guidelines": _guidelines,
    "pool_depth": _pool_depth,
    "holds_whole_corpus": _whole_corpus,
    "assessors_per_item": _assessors,
    "resolution_policy": _policy,
    "adjudicate_distance": _distance,
    "model_labels": _model_labels,
    "pool_strategy": _pool_strategy,
    "pool_floor": _pool_floor,
}


def settings_history(collection: Collection) -> QuerySet[AuditEvent]:
    """Every setting and membership change of the collection, newest first."""
    return AuditEvent.objects.filter(collection_id=collection.pk, action__in=HISTORY_ACTIONS)
