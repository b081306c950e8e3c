"""What an export reads: a collection's judgments, queries and unjudged pairs, and the
whole of it, live or as one snapshot holds it, as one bundle of format records."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from ..extensions import bundle_runs
from ..formats import (
    AdjudicationRecord,
    Bundle,
    CollectionRecord,
    ItemRecord,
    JudgmentRecord,
    QueryRecord,
    UnjudgedRecord,
    Where,
    bundle_lines,
)
from ..models import (
    AdjudicationStatus,
    AdjudicationTask,
    Assessment,
    Collection,
    Item,
    Judgment,
    Query,
    ReviewTask,
    Snapshot,
    SnapshotQuery,
    TaskStatus,
)
from .assessments import frozen_assessments, frozen_unresolved
from .snapshots import frozen_labels_by_source, frozen_queries, frozen_unjudged


def judgments_of(collection: Collection) -> QuerySet[Judgment]:
    return Judgment.objects.filter(query__collection=collection).select_related(
        "query", "item", "reviewer"
    )


def queries_of(collection: Collection) -> QuerySet[Query]:
    return Query.objects.filter(collection=collection).select_related("evidence")


def unjudged_items_for(collection: Collection) -> QuerySet[ReviewTask]:
    """Open review tasks: pairs that a source surfaced and nobody has judged yet."""
    return (
        ReviewTask.objects.filter(collection=collection)
        .exclude(status=TaskStatus.DONE)
        .select_related("query", "item")
    )


def _collection_record(
    collection: Collection, snapshot: Snapshot | None = None
) -> CollectionRecord:
    """The collection line: every setting; what fixes a snapshot's meaning (scale,
    relevant grade, unit, assessors per item, resolution policy and distance) as
    ``snapshot`` froze it when given."""
    frozen = snapshot if snapshot is not None else collection
    return CollectionRecord(
        Where(f"collection '{collection.slug}'"),
        slug=collection.slug,
        name=collection.name,
        scale=frozen.scale,
        relevant_grade=frozen.relevant_grade,
        unit=frozen.unit,
        description=collection.description,
        guidelines=collection.guidelines,
        pool_depth=collection.pool_depth,
        holds_whole_corpus=collection.holds_whole_corpus,
        assessors_per_item=frozen.assessors_per_item,
        # A one-assessor snapshot froze no policy ('' on it): the collection's is kept.
        resolution_policy=frozen.resolution_policy or collection.resolution_policy,
        adjudicate_distance=frozen.adjudicate_distance,
        model_labels=collection.model_labels,
        pool_strategy=collection.pool_strategy,
        pool_floor=collection.pool_floor,
    )


def _items(collection: Collection) -> list[ItemRecord]:
    where = Where(f"collection '{collection.slug}'")
    return [
        ItemRecord(where, id=i, title=t, text=x, url=u, metadata=m, placeholder=p)
        for i, t, x, u, m, p in Item.objects.filter(collection=collection)
        .values_list("external_id", "title", "text", "url", "metadata", "placeholder")
        .iterator(chunk_size=5000)
    ]


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat()


def bundle_of(collection: Collection) -> Bundle:
    """Everything a live export holds, as format records: the collection with every
    setting, its items, its queries with status and evidence, its judgments (the
    resolved labels, with their reviewer's name), every assessment with its assessor's
    name, the adjudication tasks (open, or decided with who and when), and its open
    review tasks (unjudged pairs, one per pair whatever its slots) except any whose pair
    is judged. Users are named by username. Records come in no particular order; the
    writers in ``judgments.formats`` sort them."""
    where = Where(f"collection '{collection.slug}'")
    username = get_user_model().USERNAME_FIELD
    bundle = Bundle(collection=_collection_record(collection))
    bundle.items = _items(collection)
    bundle.queries = [
        QueryRecord(where, id=i, text=t, tags=tags, status=s, evidence=g)
        for i, t, tags, s, g in queries_of(collection)
        .values_list("external_id", "text", "tags", "status", "evidence__groups")
        .iterator(chunk_size=5000)
    ]
    bundle.judgments = [
        JudgmentRecord(where, query=q, item=i, grade=g, note=n, reviewer=r or name or None)
        for q, i, g, n, r, name in judgments_of(collection)
        .values_list(
            "query__external_id",
            "item__external_id",
            "grade",
            "note",
            f"reviewer__{username}",
            "reviewer_name",
        )
        .iterator(chunk_size=5000)
    ]
    judged = {(j.query, j.item) for j in bundle.judgments}
    bundle.judgments += [
        JudgmentRecord(where, query=q, item=i, grade=g, note=n, assessor=r or name)
        for q, i, g, n, r, name in Assessment.objects.filter(collection=collection)
        .values_list(
            "query__external_id",
            "item__external_id",
            "grade",
            "note",
            f"assessor__{username}",
            "assessor_name",
        )
        .order_by()
        .iterator(chunk_size=5000)
    ]
    bundle.adjudications = [
        AdjudicationRecord(
            where,
            query=q,
            item=i,
            status=s,
            grade=g,
            decided_by=(who or name or None) if s == AdjudicationStatus.DECIDED else None,
            decided_at=_iso(at),
            reason=reason,
        )
        for q, i, s, g, who, name, at, reason in AdjudicationTask.objects.filter(
            collection=collection
        )
        .values_list(
            "query__external_id",
            "item__external_id",
            "status",
            "grade",
            f"decided_by__{username}",
            "decided_by_name",
            "decided_at",
            "reason",
        )
        .order_by()
        .iterator(chunk_size=5000)
    ]
    # One marker per pair: its lowest open slot's (slot 1 keeps the sources).
    markers: dict[tuple[str, str], UnjudgedRecord] = {}
    for q, i, s, r in (
        unjudged_items_for(collection)
        .order_by("-slot")
        .values_list("query__external_id", "item__external_id", "source", "best_rank")
        .iterator(chunk_size=5000)
    ):
        if (q, i) not in judged:
            markers[(q, i)] = UnjudgedRecord(where, query=q, item=i, source=s, rank=r)
    bundle.unjudged = list(markers.values())
    return bundle


def collection_bundle_lines(
    collection: Collection, *, snapshot: Snapshot | None = None, runs: bool = False
) -> Iterator[str]:
    """The bundle's lines (``formats.bundle_lines``): the live collection, or what
    ``snapshot`` holds; with ``runs``, the collection's runs too (the scoring app's, by
    the ``bundle_runs`` hook). Raises ``SnapshotNotExportable`` before the first line."""
    bundle = snapshot_bundle_of(snapshot) if snapshot is not None else bundle_of(collection)
    if runs:
        source = bundle_runs()
        if source is None:
            raise SnapshotNotExportable("no app stores runs here (add 'scoring')")
        bundle.runs, bundle.rankings = source.records(collection)
    return bundle_lines(bundle)


class SnapshotNotExportable(ValueError):
    """A bundle cannot carry what was asked (a snapshot's model judges' labels; runs
    where no app stores them)."""


def snapshot_bundle_of(snapshot: Snapshot) -> Bundle:
    """What version ``snapshot`` holds, as a bundle that imports into a collection which
    freezes to the same content hash: the settings that fix its meaning as frozen (the
    rest as they are now), the items as they are now (texts are not frozen), the queries
    it holds with their frozen status and evidence (texts and tags as they are now), its
    labels and assessments (grades and assessor names; a snapshot keeps no notes or
    reviewers), its unjudged markers (source ``snapshot vN``) and, as open adjudications,
    the pairs it left awaiting an adjudicator. Decisions are not frozen: a decided pair
    is its label. Raises ``SnapshotNotExportable`` for a snapshot holding model-made
    labels, which a bundle (holding no judges or proposals) cannot reproduce."""
    if snapshot.model_labels:
        raise SnapshotNotExportable(
            f"snapshot v{snapshot.number} holds {snapshot.n_model_labels} labels made by model "
            "judges, which a bundle cannot carry (it holds no judges or proposals); export "
            "its qrels instead, or the live collection"
        )
    collection = snapshot.collection
    where = Where(f"snapshot v{snapshot.number}")
    bundle = Bundle(collection=_collection_record(collection, snapshot))
    bundle.items = _items(collection)
    held = SnapshotQuery.objects.of(snapshot).values("query_id")
    texts = {
        qid: (text, tags)
        for qid, text, tags in Query.objects.filter(pk__in=held)
        .values_list("external_id", "text", "tags")
        .iterator(chunk_size=5000)
    }
    bundle.queries = [
        QueryRecord(where, id=q, text=texts[q][0], tags=texts[q][1], status=s, evidence=e)
        for q, s, e in frozen_queries(snapshot)
    ]
    bundle.judgments = [
        JudgmentRecord(where, query=q, item=i, grade=g)
        for q, i, g, _ in frozen_labels_by_source(snapshot)
    ]
    if snapshot.has_overlap:
        bundle.judgments += [
            JudgmentRecord(where, query=q, item=i, grade=g, assessor=who)
            for q, i, who, g in frozen_assessments(snapshot)
        ]
        bundle.adjudications = [
            AdjudicationRecord(
                where,
                query=q,
                item=i,
                status=AdjudicationStatus.OPEN,
                reason=f"awaiting adjudication in snapshot v{snapshot.number}",
            )
            for q, i in frozen_unresolved(snapshot)
        ]
    judged = {(j.query, j.item) for j in bundle.judgments if j.assessor is None}
    bundle.unjudged = [
        UnjudgedRecord(where, query=q, item=i, source=f"snapshot v{snapshot.number}")
        for q, i in frozen_unjudged(snapshot)
        if (q, i) not in judged
    ]
    return bundle


__all__ = [
    "SnapshotNotExportable",
    "bundle_of",
    "collection_bundle_lines",
    "judgments_of",
    "queries_of",
    "snapshot_bundle_of",
    "unjudged_items_for",
]
