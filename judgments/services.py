"""State changes for judgments: every change is one function that owns its transaction.

Each function states the invariant it keeps. History rows are written inside the same
transaction as the change they record, so a change and its history land together or
not at all.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from .locks import lock_query
from .models import (
    ChangeSource,
    Collection,
    EvidenceCondition,
    Item,
    Judgment,
    JudgmentChange,
    LabelingUnit,
    Query,
    QueryStatus,
    QueryStatusChange,
    ReviewTask,
    TaskStatus,
)

User = AbstractBaseUser


class VerityError(Exception):
    """A refused change. The message says what was wrong and how to fix it."""


class InvariantError(VerityError):
    """The change would break a stated invariant; nothing was changed."""


@dataclass
class JudgmentConflict(VerityError):
    """The judgment changed since the version the edit was based on; nothing was changed."""

    query_id: str
    item_id: str
    expected_version: int | None
    current: Judgment

    def __str__(self) -> str:
        who = self.current.reviewer.get_username() if self.current.reviewer else "an import"
        based = (
            "a new judgment"
            if self.expected_version is None
            else f"version {self.expected_version}"
        )
        return (
            f"judgment of item '{self.item_id}' for query '{self.query_id}' was changed: "
            f"your edit was based on {based}, but it is now version {self.current.version}, "
            f"grade {self.current.grade}, set by {who}. Reload it and apply your change again."
        )


# -- collections --------------------------------------------------------------------------


def validate_scale(scale: Any, relevant_grade: int) -> list[dict[str, Any]]:
    """Return the scale in canonical form, or raise: ordered distinct grades ≥ 0 with names."""
    if not isinstance(scale, list) or not scale:
        raise InvariantError("scale must be a non-empty list of {grade, name} entries")
    canonical: list[dict[str, Any]] = []
    for entry in scale:
        if not isinstance(entry, dict) or "grade" not in entry or "name" not in entry:
            raise InvariantError(f"scale entry {entry!r} needs a 'grade' and a 'name'")
        grade = entry["grade"]
        if type(grade) is not int or grade < 0:
            raise InvariantError(f"scale grade {grade!r} must be an integer ≥ 0")
        name = str(entry["name"]).strip()
        if not name:
            raise InvariantError(f"scale grade {grade} needs a name")
        canonical.append({"grade": grade, "name": name})
    grades = [e["grade"] for e in canonical]
    if grades != sorted(set(grades)):
        raise InvariantError(f"scale grades must be distinct and ascending, got {grades}")
    if relevant_grade not in grades:
        raise InvariantError(
            f"relevant grade {relevant_grade} is not on the scale {grades}; pick one of them"
        )
    if relevant_grade == grades[0]:
        raise InvariantError(
            f"relevant grade {relevant_grade} is the lowest grade, so nothing could be "
            "judged non-relevant; pick a higher one"
        )
    return canonical


def create_collection(
    *,
    slug: str,
    name: str,
    scale: list[dict[str, Any]],
    relevant_grade: int,
    unit: str = LabelingUnit.DOCUMENT,
    description: str = "",
    guidelines: str = "",
    pool_depth: int = 10,
) -> Collection:
    """Create a collection whose scale is valid and whose relevant grade is on it."""
    canonical = validate_scale(scale, relevant_grade)
    if unit not in LabelingUnit.values:
        raise InvariantError(f"unit {unit!r} must be one of {', '.join(LabelingUnit.values)}")
    if type(pool_depth) is not int or pool_depth < 1:
        raise InvariantError(f"pool depth {pool_depth!r} must be a positive integer")
    if Collection.objects.filter(slug=slug).exists():
        raise InvariantError(f"a collection with slug '{slug}' exists already; choose another")
    return Collection.objects.create(
        slug=slug,
        name=name,
        scale=canonical,
        relevant_grade=relevant_grade,
        unit=unit,
        description=description,
        guidelines=guidelines,
        pool_depth=pool_depth,
    )


# -- judgments ----------------------------------------------------------------------------


def _check_grade(collection: Collection, grade: int, *, where: str = "") -> None:
    if type(grade) is not int or grade not in collection.grades:
        names = ", ".join(f"{g['grade']} {g['name']}" for g in collection.scale)
        raise InvariantError(f"{where}grade {grade!r} is not on the scale ({names})")


def _has_other_relevant(query: Query, *, excluding_item_id: int) -> bool:
    return (
        Judgment.objects.filter(query=query, grade__gte=query.collection.relevant_grade)
        .exclude(item_id=excluding_item_id)
        .exists()
    )


@transaction.atomic
def record_judgment(
    *,
    query: Query,
    item: Item,
    grade: int,
    reviewer: User | None,
    expected_version: int | None,
    note: str = "",
    source: str = ChangeSource.UI,
) -> Judgment:
    """Create or change the one judgment of (query, item), with its history row.

    ``expected_version`` is ``None`` to create, or the version the edit was based on;
    a stale one raises :class:`JudgmentConflict` and changes nothing (compare-and-set).
    The grade must be on the collection's scale; a relevant grade on a ``no_answer``
    query is refused, and so is removing the last relevant judgment of a ``relevant``
    query. Recording the judgment completes the pair's review task.
    """
    query = lock_query(query.pk)
    collection = query.collection
    if item.collection_id != collection.pk:
        raise InvariantError(f"item '{item.external_id}' belongs to another collection")
    _check_grade(collection, grade)
    relevant = collection.is_relevant_grade(grade)
    if relevant and query.status == QueryStatus.NO_ANSWER:
        raise InvariantError(
            f"query '{query.external_id}' is marked 'confirmed no answer', so it cannot get "
            f"a relevant judgment (grade {grade}); set its status to unreviewed first"
        )
    now = timezone.now()
    current = Judgment.objects.filter(query=query, item=item).select_related("reviewer").first()
    if expected_version is None:
        if current is not None:
            raise JudgmentConflict(query.external_id, item.external_id, None, current)
        try:
            with transaction.atomic():
                judgment = Judgment.objects.create(
                    query=query, item=item, grade=grade, reviewer=reviewer, note=note, version=1
                )
        except IntegrityError:
            current = Judgment.objects.select_related("reviewer").get(query=query, item=item)
            raise JudgmentConflict(query.external_id, item.external_id, None, current) from None
        old_grade, old_note = None, ""
    else:
        if current is None or current.version != expected_version:
            if current is None:
                raise InvariantError(
                    f"item '{item.external_id}' has no judgment for query "
                    f"'{query.external_id}' to edit; create it instead"
                )
            raise JudgmentConflict(query.external_id, item.external_id, expected_version, current)
        if (
            not relevant
            and collection.is_relevant_grade(current.grade)
            and query.status == QueryStatus.RELEVANT
            and not _has_other_relevant(query, excluding_item_id=item.pk)
        ):
            raise InvariantError(
                f"item '{item.external_id}' is the only relevant item of query "
                f"'{query.external_id}', which is marked 'has relevant items'; "
                "set the query's status to unreviewed or no answer first"
            )
        changed = Judgment.objects.filter(pk=current.pk, version=expected_version).update(
            grade=grade, note=note, reviewer=reviewer, version=F("version") + 1, updated_at=now
        )
        if changed != 1:
            current = Judgment.objects.select_related("reviewer").get(pk=current.pk)
            raise JudgmentConflict(query.external_id, item.external_id, expected_version, current)
        old_grade, old_note = current.grade, current.note
        judgment = Judgment.objects.get(pk=current.pk)
    JudgmentChange.objects.create(
        query=query,
        item=item,
        old_grade=old_grade,
        new_grade=grade,
        old_note=old_note,
        new_note=note,
        version=judgment.version,
        changed_by=reviewer,
        source=source,
    )
    ReviewTask.objects.filter(query=query, item=item).exclude(status=TaskStatus.DONE).update(
        status=TaskStatus.DONE, claimed_by=None, lease_expires_at=None, updated_at=now
    )
    return judgment


# -- query status and evidence ------------------------------------------------------------


@transaction.atomic
def set_query_status(
    *,
    query: Query,
    status: str,
    by: User | None,
    source: str = ChangeSource.UI,
) -> Query:
    """Set a query's review status, keeping it consistent with its judgments.

    ``relevant`` needs at least one judgment at or above the relevant grade;
    ``no_answer`` allows none. A refused change leaves the status as it was.
    """
    if status not in QueryStatus.values:
        raise InvariantError(f"status {status!r} must be one of {', '.join(QueryStatus.values)}")
    query = lock_query(query.pk)
    relevant_count = Judgment.objects.filter(
        query=query, grade__gte=query.collection.relevant_grade
    ).count()
    if status == QueryStatus.RELEVANT and relevant_count == 0:
        raise InvariantError(
            f"query '{query.external_id}' has no relevant judgment, so it cannot be marked "
            "'has relevant items'; judge a relevant item first, or mark it 'no answer'"
        )
    if status == QueryStatus.NO_ANSWER and relevant_count:
        raise InvariantError(
            f"query '{query.external_id}' has {relevant_count} relevant judgment(s), so it "
            "cannot be marked 'confirmed no answer'; regrade them first"
        )
    if query.status == status:
        return query
    QueryStatusChange.objects.create(
        query=query, old_status=query.status, new_status=status, changed_by=by, source=source
    )
    query.status = status
    query.status_changed_by = by
    query.status_changed_at = timezone.now()
    query.save(update_fields=["status", "status_changed_by", "status_changed_at"])
    return query


def normalize_evidence(groups: Any) -> list[list[str]]:
    """Canonical DNF: each AND-group sorted and deduplicated, groups sorted and distinct."""
    if not isinstance(groups, list) or not groups:
        raise InvariantError("an evidence condition is a non-empty list of AND-groups of item ids")
    out: set[tuple[str, ...]] = set()
    for group in groups:
        if not isinstance(group, list) or not group:
            raise InvariantError(f"evidence group {group!r} must be a non-empty list of item ids")
        if not all(isinstance(i, str) and i for i in group):
            raise InvariantError(f"evidence group {group!r} must hold item ids as strings")
        out.add(tuple(sorted(set(group))))
    return [list(g) for g in sorted(out)]


@transaction.atomic
def set_evidence_condition(
    *, query: Query, groups: list[list[str]] | None, by: User | None
) -> EvidenceCondition | None:
    """Set (or with ``None`` remove) a query's evidence condition over known item ids."""
    query = lock_query(query.pk)
    if groups is None:
        EvidenceCondition.objects.filter(query=query).delete()
        return None
    canonical = normalize_evidence(groups)
    wanted = {i for g in canonical for i in g}
    known = set(
        Item.objects.filter(collection=query.collection, external_id__in=wanted).values_list(
            "external_id", flat=True
        )
    )
    missing = sorted(wanted - known)
    if missing:
        raise InvariantError(
            f"evidence condition of query '{query.external_id}' names unknown item(s) "
            f"{', '.join(missing)}; import them first"
        )
    condition, _ = EvidenceCondition.objects.update_or_create(
        query=query, defaults={"groups": canonical, "updated_by": by}
    )
    return condition


# -- review tasks ---------------------------------------------------------------------------


def queue_unjudged(
    *,
    collection: Collection,
    pairs: Iterable[tuple[int, int, int | None]],
    source: str,
) -> tuple[int, int]:
    """Queue (query pk, item pk, rank) pairs that have no judgment as review tasks.

    A pair that has a judgment is skipped; a pair already queued keeps one task (its best
    rank is improved). Returns (unjudged pairs seen, tasks newly created). Runs inside the
    caller's transaction.
    """
    wanted: dict[tuple[int, int], int | None] = {}
    for query_id, item_id, rank in pairs:
        key = (query_id, item_id)
        old = wanted.get(key)
        if key not in wanted or (rank is not None and (old is None or rank < old)):
            wanted[key] = rank
    if not wanted:
        return 0, 0
    query_ids = {q for q, _ in wanted}
    judged = set(Judgment.objects.filter(query_id__in=query_ids).values_list("query_id", "item_id"))
    unjudged = {k: r for k, r in wanted.items() if k not in judged}
    existing = {
        (t.query_id, t.item_id): t for t in ReviewTask.objects.filter(query_id__in=query_ids)
    }
    new_tasks, improved = [], []
    for (query_id, item_id), rank in unjudged.items():
        task = existing.get((query_id, item_id))
        if task is None:
            new_tasks.append(
                ReviewTask(
                    collection=collection,
                    query_id=query_id,
                    item_id=item_id,
                    source=source,
                    best_rank=rank,
                    priority=-(rank or 0),
                )
            )
        elif rank is not None and (task.best_rank is None or rank < task.best_rank):
            task.best_rank = rank
            task.priority = -rank
            improved.append(task)
    ReviewTask.objects.bulk_create(new_tasks, batch_size=2000)
    ReviewTask.objects.bulk_update(improved, ["best_rank", "priority"], batch_size=2000)
    return len(unjudged), len(new_tasks)
