"""All-or-nothing imports of bundles, topics, items and qrels.

``formats`` reads the files and reports what a file gets wrong on its own;
``import_collection_data`` checks the rest against the collection
(``import_checks.py``), and writes (``import_writes.py``) only when nothing at all is
wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction

from ..extensions import bundle_runs
from ..formats import Bundle, CollectionRecord, Problem, Where
from ..locks import lock_collection
from ..models import Assessment, Collection, Item, Judgment, JudgmentChange, Query, ReviewTask
from ._common import User
from .collections import create_collection, update_collection_settings, validate_scale
from .errors import ImportRefused, InvariantError, VerityError
from .import_checks import ImportReport
from .import_writes import _ImportPlan
from .statistics import analyze_after_commit


def _import_target(
    record: CollectionRecord | None, slug: str | None, *, create: bool, by: User | None = None
) -> tuple[Collection, bool]:
    """The collection to import into, locked, created from ``record`` when new."""
    where = record.where if record is not None else Where("command line")
    slug = slug or (record.slug if record is not None else None)
    if not slug:
        raise InvariantError("name the collection to import into, or import a bundle")
    try:
        validate_slug(slug)
    except ValidationError:
        raise ImportRefused(
            [Problem(where, f"slug {slug!r} may hold only letters, digits, '-' and '_'")]
        ) from None
    existing = Collection.objects.filter(slug=slug).first()
    if existing is None:
        if record is None:
            raise InvariantError(
                f"collection '{slug}' does not exist; create it with --create --scale ... "
                "--relevant-grade ..., or import a bundle that describes it"
            )
        try:
            collection = create_collection(
                slug=slug,
                name=record.name,
                scale=record.scale,
                relevant_grade=record.relevant_grade,
                unit=record.unit,
                description=record.description,
                guidelines=record.guidelines,
                pool_depth=record.pool_depth,
                actor=by,
            )
            if record.settings():  # a format 2 line: every setting of the bundle's source
                update_collection_settings(collection=collection, **record.settings())
        except InvariantError as e:
            hint = ""
            if "model_labels" in str(e):
                hint = (
                    '; a bundle carries no judges: import it with "model_labels": "" on this '
                    "line, add the judge, then set model_labels in the collection's settings"
                )
            raise ImportRefused([Problem(where, f"{e}{hint}")]) from None
        return collection, True
    if create:
        raise ImportRefused(
            [Problem(where, f"collection '{slug}' exists already; drop --create to import into it")]
        )
    # Exclusive: label writers hold the collection shared, so none runs while we import.
    collection = lock_collection(existing.pk)
    if record is not None:
        differences = _collection_differences(collection, record)
        if differences:
            raise ImportRefused(
                [
                    Problem(
                        where,
                        f"collection '{slug}' exists with {'; '.join(differences)}. An import "
                        "never changes a collection: import under a new slug "
                        "(--collection NEW-SLUG), or make this line match",
                    )
                ]
            )
    return collection, False


def _collection_differences(collection: Collection, record: CollectionRecord) -> list[str]:
    try:
        scale = validate_scale(record.scale, record.relevant_grade)
    except InvariantError as e:
        return [f"a valid scale, while this one is not ({e})"]
    stored = {
        "name": collection.name,
        "description": collection.description,
        "unit": collection.unit,
        "scale": collection.scale,
        "relevant_grade": collection.relevant_grade,
        "guidelines": collection.guidelines,
        "pool_depth": collection.pool_depth,
        **{name: getattr(collection, name) for name in record.settings()},
    }
    given = {
        "name": record.name,
        "description": record.description,
        "unit": record.unit,
        "scale": scale,
        "relevant_grade": record.relevant_grade,
        "guidelines": record.guidelines,
        "pool_depth": record.pool_depth,
        **record.settings(),  # format 2: compared only when the line gives them
    }

    def short(value: Any) -> str:
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "…"

    return [
        f"{key} {short(stored[key])} (this file: {short(given[key])})"
        for key in stored
        if stored[key] != given[key]
    ]


@transaction.atomic
def import_collection_data(
    *,
    data: Bundle,
    collection_slug: str | None = None,
    create: bool = False,
    create_missing_items: bool = False,
    set_status: bool = False,
    by: User | None = None,
    progress: Callable[[str], None] | None = None,
) -> ImportReport:
    """Import items, queries, judgments, assessments, adjudications, statuses and unjudged
    pairs: all or nothing.

    The target is ``collection_slug`` (or the bundle's slug): created from
    ``data.collection`` (with every setting a format 2 line gives) when new, else it must
    exist and, when ``data.collection`` is given, match it field by field (the settings
    only where the line gives them); ``create=True`` insists that it is new. Every check
    runs before any write, and any problem raises :class:`ImportRefused` listing them with
    file and line, leaving the database as it was. Stored data is never overwritten: an
    identical item, query or judgment is skipped and counted, a different one is refused;
    placeholder items are filled in. Queries must be known (stored or imported); unknown
    items are refused unless ``create_missing_items`` makes them placeholders. Statuses
    keep the ``set_query_status`` invariants, and only an unreviewed query gets one;
    ``set_status`` marks each unreviewed query of the import that has a relevant
    judgment ``relevant``. History: a ``JudgmentChange`` (source import, version 1, by
    ``by``, the importer, whoever the record names) per judgment; a record's
    ``reviewer`` stays the judgment's reviewer when they are a member of the collection,
    else it is kept as ``reviewer_name``, an external assessor's name, never a user;
    an assessment's ``assessor`` and an adjudication's ``decided_by`` alike: a member's
    username becomes that member's, any other name stays a name. No user account is
    ever created: a file that could make accounts (even inactive ones, which an admin
    might later activate for whoever claims the name) could attribute labels to
    whoever it likes; names keep every label attributable, and the snapshot hash,
    which names assessors by name, is the same either way. Make the people members
    first (``load_demo`` does) to have their labels count as theirs (in the blind
    queue, for example). A ``QueryStatusChange`` per status set. Run records (the
    scoring app's, by the ``bundle_runs`` hook) are stored as they were, not pooled.
    Imported judgments complete their pairs' review tasks; unjudged records (qrels grade
    -1) are queued through ``queue_unjudged``.
    """
    collection, created = _import_target(data.collection, collection_slug, create=create, by=by)
    plan = _ImportPlan(
        collection,
        data,
        create_missing_items=create_missing_items,
        set_status=set_status,
        by=by,
    )
    plan.check()
    runs = bundle_runs() if data.runs or data.rankings else None
    if data.runs or data.rankings:
        if runs is None:
            first = (data.runs or data.rankings)[0].where
            plan.problems.append(Problem(first, "runs need the scoring app, which is not here"))
        else:
            plan.problems += runs.check(collection, data.runs, data.rankings)
    if plan.problems:
        raise ImportRefused(plan.problems)
    try:
        report = plan.write(progress)
    except IntegrityError as e:  # a concurrent writer that does not lock the collection
        raise VerityError(
            f"the collection changed while importing ({e}); nothing was imported, run the "
            "import again"
        ) from None
    if runs is not None:
        report.runs_created = runs.write(collection, data.runs, data.rankings, by)
    report.collection_created = created
    analyze_after_commit(
        Item,
        Query,
        Judgment,
        JudgmentChange,
        Assessment,
        ReviewTask,
        rows=report.items_created
        + report.placeholders_created
        + report.queries_created
        + report.judgments_created
        + report.assessments_created
        + report.tasks_created,
    )
    return report
