"""A collection: its scale, created once, and its descriptive settings."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from verity_limits import GRADE_MAX

from ..extensions import label_source
from ..locks import lock_collection
from ..models import Assessment, Collection, Judgment, LabelingUnit, ReviewTask, TaskStatus
from ..resolution import POLICIES
from .errors import InvariantError
from .pooling import fill_slots


def validate_scale(scale: Any, relevant_grade: int) -> list[dict[str, Any]]:
    """Return the scale in canonical form, or raise: ordered distinct grades ≥ 0 with names."""
    if not isinstance(scale, list) or not scale:
        raise InvariantError("scale must be a non-empty list of {grade, name} entries")
    canonical: list[dict[str, Any]] = []
    for entry in scale:
        if not isinstance(entry, dict) or "grade" not in entry or "name" not in entry:
            raise InvariantError(f"scale entry {entry!r} needs a 'grade' and a 'name'")
        grade = entry["grade"]
        if type(grade) is not int or not 0 <= grade <= GRADE_MAX:
            raise InvariantError(f"scale grade {grade!r} must be an integer from 0 to {GRADE_MAX}")
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


COLLECTION_SETTINGS = (
    "name",
    "description",
    "guidelines",
    "pool_depth",
    "holds_whole_corpus",
    "assessors_per_item",
    "resolution_policy",
    "adjudicate_distance",
    "model_labels",
)


def _check_model_labels(collection: Collection, changes: dict[str, Any]) -> None:
    """The policy is '' (no model label ever) or the name of one of the collection's
    judges, as the registered label source (the judges app) knows them."""
    name = changes.get("model_labels", "")
    if not isinstance(name, str):
        raise InvariantError(f"model_labels {name!r} must be a judge's name or ''")
    if not name:
        return
    source = label_source()
    names = source.names(collection) if source is not None else []
    if name not in names:
        raise InvariantError(
            f"model_labels names no judge of '{collection.slug}': {name!r}; its judges are "
            f"{', '.join(names) or 'none (the judges app is not installed)'}, or '' for "
            "no model label"
        )


def _check_overlap_settings(changes: dict[str, Any]) -> None:
    n = changes.get("assessors_per_item", 1)
    if type(n) is not int or n < 1:
        raise InvariantError(f"assessors per item {n!r} must be an integer ≥ 1")
    distance = changes.get("adjudicate_distance", 0)
    if type(distance) is not int or distance < 0:
        raise InvariantError(f"adjudicate distance {distance!r} must be an integer ≥ 0")
    policy = changes.get("resolution_policy", POLICIES[0])
    if policy not in POLICIES:
        raise InvariantError(f"resolution policy {policy!r} must be one of {', '.join(POLICIES)}")


def _start_overlap(collection: Collection) -> None:
    """A collection going from one assessor per item to several: every judged pair
    without an assessment keeps its judgment as its reviewer's assessment (as the
    migration did), and every open task gets its other slots."""
    same_pair = Assessment.objects.filter(
        query_id=OuterRef("query_id"), item_id=OuterRef("item_id")
    )
    Assessment.objects.bulk_create(
        [
            Assessment(
                collection=collection,
                query_id=j.query_id,
                item_id=j.item_id,
                assessor_id=j.reviewer_id,
                assessor_name="" if j.reviewer_id else "import",
                grade=j.grade,
                note=j.note,
            )
            for j in Judgment.objects.filter(query__collection=collection)
            .exclude(Exists(same_pair))
            .order_by("pk")
        ],
        batch_size=2000,
    )
    first_slots = ReviewTask.objects.filter(collection=collection, slot=1).exclude(
        status=TaskStatus.DONE
    )
    ids = list(first_slots.order_by("pk").select_for_update().values_list("pk", flat=True))
    if ids:
        with connection.cursor() as cursor:
            fill_slots(
                cursor,
                collection.pk,
                collection.assessors_per_item,
                ",".join(str(int(pk)) for pk in ids),
                timezone.now(),
            )


@transaction.atomic
def update_collection_settings(*, collection: Collection, **changes: Any) -> Collection:
    """Change a collection's settings: name, description, guidelines, pool depth,
    whether it holds its whole corpus (then runs naming items it lacks are refused), and
    how several assessors per item are resolved (assessors per item, resolution policy,
    adjudicate distance), and whether a model judge's proposals become labels at freeze
    where no person assessed (``model_labels``: '' or a judge's name). Going from one
    assessor per item to several keeps every judgment as its reviewer's assessment and
    gives the open tasks their other slots.

    The scale, relevant grade and unit are not settings: they fix what every stored
    judgment and snapshot means, so they are set once, when the collection is created.
    """
    unknown = sorted(set(changes) - set(COLLECTION_SETTINGS))
    if unknown:
        raise InvariantError(
            f"{', '.join(unknown)} cannot be changed; the settings are "
            f"{', '.join(COLLECTION_SETTINGS)} (scale, relevant grade and unit are fixed)"
        )
    if "name" in changes and not str(changes["name"]).strip():
        raise InvariantError("name must not be empty")
    if type(changes.get("holds_whole_corpus", False)) is not bool:
        raise InvariantError("holds_whole_corpus must be true or false")
    depth = changes.get("pool_depth", collection.pool_depth)
    if type(depth) is not int or depth < 1:
        raise InvariantError(f"pool depth {depth!r} must be a positive integer")
    _check_overlap_settings(changes)
    _check_model_labels(collection, changes)
    given, collection = collection, lock_collection(collection.pk)
    starts_overlap = not collection.has_overlap and changes.get("assessors_per_item", 1) > 1
    if changes:
        for name, value in changes.items():
            setattr(collection, name, value)
            setattr(given, name, value)  # the caller's copy must not serve stale settings
        collection.save(update_fields=list(changes))
    if starts_overlap:
        _start_overlap(collection)
    return collection
