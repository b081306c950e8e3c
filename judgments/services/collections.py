"""A collection: its scale, created once, and its descriptive settings."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from audit.services import record
from verity_limits import GRADE_MAX

from ..extensions import label_source
from ..locks import lock_collection
from ..models import Assessment, Collection, LabelingUnit, Role
from ..pool_strategies import DEPTH, Strategy
from ..resolution import POLICIES
from ..selectors.settings import (
    judgments_without_assessment,
    open_first_slots,
    unresolved_first_slots,
)
from .errors import InvariantError
from .members import set_membership
from .pool_arms import stop_adaptive_pooling
from .pooling import PRIORITY_SQL, fill_slots

#: Slugs that name pages, not collections (``/c/new/``).
RESERVED_SLUGS = frozenset({"new"})


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
    creator: Any = None,
    actor: Any = None,
    request: Any = None,
) -> Collection:
    """Create a collection whose scale is valid and whose relevant grade is on it;
    ``creator`` (a user) becomes its admin. Recorded as ``collection.create`` (by
    ``actor``, else ``creator``), with every setting it starts with."""
    canonical = validate_scale(scale, relevant_grade)
    if slug in RESERVED_SLUGS:
        raise InvariantError(f"slug '{slug}' names a page of Verity; choose another")
    if unit not in LabelingUnit.values:
        raise InvariantError(f"unit {unit!r} must be one of {', '.join(LabelingUnit.values)}")
    if type(pool_depth) is not int or pool_depth < 1:
        raise InvariantError(f"pool depth {pool_depth!r} must be a positive integer")
    if Collection.objects.filter(slug=slug).exists():
        raise InvariantError(f"a collection with slug '{slug}' exists already; choose another")
    actor = actor if actor is not None else creator
    with transaction.atomic():
        collection = Collection.objects.create(
            slug=slug,
            name=name,
            scale=canonical,
            relevant_grade=relevant_grade,
            unit=unit,
            description=description,
            guidelines=guidelines,
            pool_depth=pool_depth,
        )
        record(
            "collection.create",
            actor=actor,
            collection=collection,
            target=slug,
            before=None,
            after={
                "slug": slug,
                "unit": unit,
                "scale": canonical,
                "relevant_grade": relevant_grade,
                **settings_of(collection),
            },
            request=request,
        )
        if creator is not None:
            set_membership(
                collection=collection, user=creator, role=Role.ADMIN, actor=actor, request=request
            )
    return collection


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
    "pool_strategy",
    "pool_floor",
)


def settings_of(collection: Collection) -> dict[str, Any]:
    """Every setting's current value, by name (``COLLECTION_SETTINGS``)."""
    return {name: getattr(collection, name) for name in COLLECTION_SETTINGS}


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
            for j in judgments_without_assessment(collection).order_by("pk")
        ],
        batch_size=2000,
    )
    _fill_slots(collection, open_first_slots(collection))


def _fill_slots(collection: Collection, first_slots: Any) -> None:
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
def update_collection_settings(
    *, collection: Collection, actor: Any = None, request: Any = None, **changes: Any
) -> Collection:
    """Change a collection's settings: name, description, guidelines, pool depth,
    whether it holds its whole corpus (then runs naming items it lacks are refused), and
    the pooling strategy (``pool_strategy``: depth, mtf or bandit, and ``pool_floor``:
    every run's first K served first; for runs imported afterwards; back to depth, the
    queue's order becomes the depth rule's again), how several assessors per item are
    resolved (assessors per item, resolution policy,
    adjudicate distance), and whether a model judge's proposals become labels at freeze
    where no person assessed (``model_labels``: '' or a judge's name). Going from one
    assessor per item to several keeps every judgment as its reviewer's assessment and
    gives the open tasks their other slots; raising the number further gives the pairs
    still being assessed their new slots.

    Recorded as one ``collection.settings`` audit row by ``actor``, holding only the
    settings whose value changed, before and after; a change that changes nothing
    records nothing.

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
    if changes.get("model_labels", collection.model_labels) != collection.model_labels:
        _check_model_labels(collection, changes)
    _check_pooling(collection, changes)
    given, collection = collection, lock_collection(collection.pk)
    changed = {k: v for k, v in changes.items() if getattr(collection, k) != v}
    before = {k: getattr(collection, k) for k in changed}
    was = collection.assessors_per_item
    stops_adapting = collection.pool_strategy != DEPTH and changed.get("pool_strategy") == DEPTH
    for name, value in changes.items():
        setattr(given, name, value)  # the caller's copy must not serve stale settings
    if not changed:
        return collection
    for name, value in changed.items():
        setattr(collection, name, value)
    collection.save(update_fields=list(changed))
    now = collection.assessors_per_item
    if was == 1 and now > 1:
        _start_overlap(collection)
    elif 1 < was < now:
        _fill_slots(collection, unresolved_first_slots(collection))
    if stops_adapting:
        stop_adaptive_pooling(
            collection_id=collection.pk, depth_sql=PRIORITY_SQL.format(n="s.n", best="s.best")
        )
    record(
        "collection.settings",
        actor=actor,
        collection=collection,
        target=collection.slug,
        before=before,
        after=changed,
        request=request,
    )
    return collection


def _check_pooling(collection: Collection, changes: dict[str, Any]) -> None:
    name = changes.get("pool_strategy", collection.pool_strategy)
    floor = changes.get("pool_floor", collection.pool_floor)
    if name == DEPTH and "pool_strategy" in changes and "pool_floor" not in changes:
        floor = changes["pool_floor"] = 0  # back to depth: the floor goes with the strategy
    try:
        Strategy(name, floor)
    except ValueError as exc:
        raise InvariantError(str(exc)) from None
