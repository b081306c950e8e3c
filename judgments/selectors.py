"""Reads: querysets with their joins applied, named as questions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from .formats import (
    Bundle,
    CollectionRecord,
    ItemRecord,
    JudgmentRecord,
    QueryRecord,
    UnjudgedRecord,
    Where,
)
from .models import (
    Collection,
    EvidenceCondition,
    Item,
    Judgment,
    JudgmentChange,
    Membership,
    Query,
    QueryStatus,
    ReviewTask,
    Role,
    Snapshot,
    SnapshotJudgment,
    SnapshotQuery,
    SnapshotUnjudged,
    TaskStatus,
    role_allows,
)
from .snapshots import canonical_lines


def collections_with_progress() -> QuerySet[Collection]:
    """Collections annotated with their number of queries, by review status."""
    return Collection.objects.annotate(
        n_queries=Count("queries", distinct=True),
        n_unreviewed=Count(
            "queries", filter=Q(queries__status=QueryStatus.UNREVIEWED), distinct=True
        ),
        n_relevant=Count("queries", filter=Q(queries__status=QueryStatus.RELEVANT), distinct=True),
        n_no_answer=Count(
            "queries", filter=Q(queries__status=QueryStatus.NO_ANSWER), distinct=True
        ),
    )


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


def bundle_of(collection: Collection):  # -> formats.Bundle
    """Everything an export holds, as format records: the collection, its items, its
    queries with status and evidence, its judgments, and its open review tasks (unjudged
    pairs) except any whose pair is judged. Records come in no particular order; the
    writers in ``formats.py`` sort them."""
    where = Where(f"collection '{collection.slug}'")
    username = get_user_model().USERNAME_FIELD
    bundle = Bundle(
        collection=CollectionRecord(
            where,
            slug=collection.slug,
            name=collection.name,
            scale=collection.scale,
            relevant_grade=collection.relevant_grade,
            unit=collection.unit,
            description=collection.description,
            guidelines=collection.guidelines,
            pool_depth=collection.pool_depth,
        )
    )
    bundle.items = [
        ItemRecord(where, id=i, title=t, text=x, url=u, metadata=m, placeholder=p)
        for i, t, x, u, m, p in Item.objects.filter(collection=collection)
        .values_list("external_id", "title", "text", "url", "metadata", "placeholder")
        .iterator(chunk_size=5000)
    ]
    bundle.queries = [
        QueryRecord(where, id=i, text=t, tags=tags, status=s, evidence=g)
        for i, t, tags, s, g in queries_of(collection)
        .values_list("external_id", "text", "tags", "status", "evidence__groups")
        .iterator(chunk_size=5000)
    ]
    bundle.judgments = [
        JudgmentRecord(where, query=q, item=i, grade=g, note=n, reviewer=r)
        for q, i, g, n, r in judgments_of(collection)
        .values_list(
            "query__external_id", "item__external_id", "grade", "note", f"reviewer__{username}"
        )
        .iterator(chunk_size=5000)
    ]
    judged = {(j.query, j.item) for j in bundle.judgments}
    bundle.unjudged = [
        UnjudgedRecord(where, query=q, item=i, source=s, rank=r)
        for q, i, s, r in unjudged_items_for(collection)
        .values_list("query__external_id", "item__external_id", "source", "best_rank")
        .iterator(chunk_size=5000)
        if (q, i) not in judged
    ]
    return bundle


# -- snapshots ------------------------------------------------------------------------------


def snapshot_of(collection: Collection, number: int | None = None) -> Snapshot:
    """Version ``number`` of the collection's snapshots, or the latest; raises
    ``Snapshot.DoesNotExist`` with a message naming the versions that exist."""
    snapshots = Snapshot.objects.filter(collection=collection)
    found = (
        snapshots.order_by("-number").first()
        if number is None
        else snapshots.filter(number=number).first()
    )
    if found is None:
        have = ", ".join(
            f"v{n}" for n in snapshots.order_by("number").values_list("number", flat=True)
        )
        raise Snapshot.DoesNotExist(
            f"collection '{collection.slug}' has no snapshot "
            + (f"v{number}" if number is not None else "yet")
            + (f"; it has {have}" if have else "; freeze one with manage.py freeze_snapshot")
        )
    return found


def frozen_judgments(snapshot: Snapshot) -> Iterator[tuple[str, str, int]]:
    return (
        SnapshotJudgment.objects.filter(snapshot=snapshot)
        .values_list("query__external_id", "item__external_id", "grade")
        .iterator(chunk_size=20000)
    )


def frozen_unjudged(snapshot: Snapshot) -> Iterator[tuple[str, str]]:
    return (
        SnapshotUnjudged.objects.filter(snapshot=snapshot)
        .values_list("query__external_id", "item__external_id")
        .iterator(chunk_size=20000)
    )


def frozen_queries(snapshot: Snapshot) -> Iterator[tuple[str, str, list[list[str]] | None]]:
    return (
        SnapshotQuery.objects.filter(snapshot=snapshot)
        .values_list("query__external_id", "status", "evidence")
        .iterator(chunk_size=20000)
    )


def snapshot_canonical_lines(snapshot: Snapshot) -> Iterator[bytes]:
    """The snapshot in its canonical form (``snapshots.py``): sha256 of these bytes is
    ``snapshot.content_hash``, so an export can be verified with ``sha256sum``."""
    return canonical_lines(
        slug=snapshot.collection.slug,
        unit=snapshot.unit,
        relevant_grade=snapshot.relevant_grade,
        scale=snapshot.scale,
        queries=frozen_queries(snapshot),
        judgments=frozen_judgments(snapshot),
        unjudged=frozen_unjudged(snapshot),
    )


def snapshot_trec_lines(snapshot: Snapshot, *, with_unjudged: bool = False) -> Iterator[str]:
    """TREC qrels ``qid 0 docid grade`` sorted by (qid, docid) in code-point order;
    with ``with_unjudged``, open review tasks as grade ``-1`` (pooled but unjudged)."""
    rows: list[tuple[str, str, int]] = list(frozen_judgments(snapshot))
    if with_unjudged:
        rows.extend((q, i, -1) for q, i in frozen_unjudged(snapshot))
    rows.sort()
    return (f"{q} 0 {i} {g}\n" for q, i, g in rows)


@dataclass
class SnapshotDiff:
    """What changed from snapshot ``a`` to ``b``; every list sorted by query, item."""

    a: Snapshot
    b: Snapshot
    added: list[tuple[str, str, int]] = field(default_factory=list)
    removed: list[tuple[str, str, int]] = field(default_factory=list)
    regraded: list[tuple[str, str, int, int]] = field(default_factory=list)
    status_changes: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    evidence_changes: list[tuple[str, Any, Any]] = field(default_factory=list)
    unjudged_added: int = 0
    unjudged_removed: int = 0
    scale_changed: bool = False

    @property
    def is_empty(self) -> bool:
        return not (
            self.added
            or self.removed
            or self.regraded
            or self.status_changes
            or self.evidence_changes
            or self.unjudged_added
            or self.unjudged_removed
            or self.scale_changed
        )


def diff_snapshots(a: Snapshot, b: Snapshot) -> SnapshotDiff:
    """Judgments added, removed and regraded, and query status and evidence changes."""
    diff = SnapshotDiff(a=a, b=b)
    ja = {(q, i): g for q, i, g in frozen_judgments(a)}
    jb = {(q, i): g for q, i, g in frozen_judgments(b)}
    diff.added = sorted((q, i, g) for (q, i), g in jb.items() if (q, i) not in ja)
    diff.removed = sorted((q, i, g) for (q, i), g in ja.items() if (q, i) not in jb)
    diff.regraded = sorted(
        (q, i, ja[(q, i)], g) for (q, i), g in jb.items() if (q, i) in ja and ja[(q, i)] != g
    )
    qa = {q: (s, e) for q, s, e in frozen_queries(a)}
    qb = {q: (s, e) for q, s, e in frozen_queries(b)}
    for q in sorted(qa.keys() | qb.keys()):
        sa, ea = qa.get(q, (None, None))
        sb, eb = qb.get(q, (None, None))
        if sa != sb:
            diff.status_changes.append((q, sa, sb))
        if ea != eb:
            diff.evidence_changes.append((q, ea, eb))
    ua, ub = set(frozen_unjudged(a)), set(frozen_unjudged(b))
    diff.unjudged_added, diff.unjudged_removed = len(ub - ua), len(ua - ub)
    diff.scale_changed = (a.scale, a.relevant_grade, a.unit) != (b.scale, b.relevant_grade, b.unit)
    return diff


def collection_by_slug(slug: str) -> Collection:
    """The collection, or ``Collection.DoesNotExist`` naming the ones that exist."""
    found = Collection.objects.filter(slug=slug).first()
    if found is None:
        known = ", ".join(Collection.objects.values_list("slug", flat=True)) or "none yet"
        raise Collection.DoesNotExist(f"no collection '{slug}'; the collections are: {known}")
    return found


# -- access ---------------------------------------------------------------------------------


def collections_for(user: Any) -> QuerySet[Collection]:
    """The collections this user may see: every one for a superuser, else by membership."""
    if not getattr(user, "is_authenticated", False):
        return Collection.objects.none()
    if user.is_superuser:
        return Collection.objects.all()
    return Collection.objects.filter(members__user=user)


def role_of(user: Any, collection: Collection) -> str | None:
    """The user's role in the collection (``admin`` for a superuser), or ``None``."""
    if not getattr(user, "is_authenticated", False):
        return None
    if user.is_superuser:
        return Role.ADMIN
    return (
        Membership.objects.filter(user=user, collection=collection)
        .values_list("role", flat=True)
        .first()
    )


def may(user: Any, collection: Collection, role: str) -> bool:
    """Whether the user holds ``role`` or a stronger one in the collection."""
    return role_allows(role_of(user, collection), role)


def may_score(user: Any, collection: Any) -> bool:
    """Scoring stores evaluations: an evaluator's action (``Role.EVALUATOR``)."""
    return may(user, collection, Role.EVALUATOR)


# -- review UI ------------------------------------------------------------------------------
# Reads for the reviewer's pages. Counts come from grouped aggregates (one query per kind
# of row), never from several Count()s over different joins, which multiply rows.

# "Open" is spelled as an IN list rather than "not done": PostgreSQL can walk the
# (collection, status, ...) index for an IN list, not for "<>".
OPEN_TASK_STATUSES = (TaskStatus.PENDING, TaskStatus.CLAIMED)


@dataclass(frozen=True)
class ReviewProgress:
    """What is done and what is left in one collection."""

    unreviewed: int = 0
    relevant: int = 0
    no_answer: int = 0
    judged: int = 0
    open_tasks: int = 0
    claimed_now: int = 0

    @property
    def queries(self) -> int:
        return self.unreviewed + self.relevant + self.no_answer

    @property
    def reviewed(self) -> int:
        return self.relevant + self.no_answer


def collections_with_review_progress(user: Any) -> list[tuple[Collection, ReviewProgress]]:
    """The user's collections (``collections_for``), each with its progress: queries by
    review status, judged items, open review tasks and tasks under a live lease now.
    Four queries, however many collections."""

    collections = list(collections_for(user).order_by("name", "slug"))
    ids = [c.pk for c in collections]
    counts: dict[int, dict[str, int]] = {pk: {} for pk in ids}
    for pk, status, n in (
        Query.objects.filter(collection_id__in=ids)
        .order_by()
        .values_list("collection_id", "status")
        .annotate(n=Count("pk"))
    ):
        counts[pk][status] = n
    for pk, n in (
        Judgment.objects.filter(query__collection_id__in=ids)
        .order_by()
        .values_list("query__collection_id")
        .annotate(n=Count("pk"))
    ):
        counts[pk]["judged"] = n
    now = timezone.now()
    for pk, n_open, n_claimed in (
        ReviewTask.objects.filter(collection_id__in=ids, status__in=OPEN_TASK_STATUSES)
        .order_by()
        .values_list("collection_id")
        .annotate(
            n_open=Count("pk"),
            n_claimed=Count("pk", filter=Q(status=TaskStatus.CLAIMED, lease_expires_at__gt=now)),
        )
    ):
        counts[pk]["open_tasks"], counts[pk]["claimed_now"] = n_open, n_claimed
    return [(c, ReviewProgress(**counts[c.pk])) for c in collections]


def queue_progress(collection: Collection) -> tuple[int, int]:
    """(open review tasks, of which under a live lease now) in the collection. Two
    queries, each answered from the (collection, status, …) index alone: one COUNT with
    the lease condition would have to read every open task's row."""

    tasks = ReviewTask.objects.filter(collection=collection)
    n_open = tasks.filter(status__in=OPEN_TASK_STATUSES).count()
    n_claimed = tasks.filter(status=TaskStatus.CLAIMED, lease_expires_at__gt=timezone.now()).count()
    return n_open, n_claimed


def task_for_review(collection: Collection, task_id: int, *, sources: bool = True) -> ReviewTask:
    """The task with its query and item, and its sources (best rank first) unless
    ``sources=False``: one query each. ``ReviewTask.DoesNotExist`` unless it belongs to
    the collection."""
    tasks = ReviewTask.objects.filter(collection=collection).select_related("query", "item")
    if sources:
        tasks = tasks.prefetch_related("sources")
    return tasks.get(pk=task_id)


def query_tags_of(collection: Collection) -> list[str]:
    """Every tag used by the collection's queries, sorted."""
    tags: set[str] = set()
    for row in Query.objects.filter(collection=collection).values_list("tags", flat=True):
        tags.update(t for t in row or () if isinstance(t, str))
    return sorted(tags)


def _count_of(queryset: QuerySet) -> Any:

    counted = (
        queryset.filter(query=OuterRef("pk"))
        .order_by()
        .values("query")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def queries_with_progress(
    collection: Collection, *, status: str | None = None, tag: str | None = None
) -> QuerySet[Query]:
    """The collection's queries, optionally one review status and one tag, each annotated
    with ``n_judged``, ``n_relevant`` (grade ≥ the relevant grade) and ``n_open`` (open
    review tasks), ordered by external id."""

    queries = Query.objects.filter(collection=collection)
    if status:
        queries = queries.filter(status=status)
    if tag:
        queries = queries.with_tag(tag)
    judgments = Judgment.objects.all()
    return queries.annotate(
        n_judged=_count_of(judgments),
        n_relevant=_count_of(judgments.filter(grade__gte=collection.relevant_grade)),
        n_open=_count_of(ReviewTask.objects.filter(status__in=OPEN_TASK_STATUSES)),
    ).order_by("external_id")


def query_in(collection: Collection, external_id: str) -> Query:
    """The collection's query by external id, with who last set its status and its
    evidence condition; ``Query.DoesNotExist`` if there is none."""
    return Query.objects.select_related("collection", "status_changed_by").get(
        collection=collection, external_id=external_id
    )


def judgments_for_query(query: Query) -> QuerySet[Judgment]:
    """The query's current judgments with item and reviewer, by item id."""
    return (
        Judgment.objects.filter(query=query)
        .select_related("item", "reviewer")
        .order_by("item__external_id")
    )


def open_tasks_for_query(query: Query) -> QuerySet[ReviewTask]:
    """The query's unjudged markers (open review tasks) with item and sources, in queue
    order."""
    return (
        ReviewTask.objects.filter(query=query, status__in=OPEN_TASK_STATUSES)
        .select_related("item", "claimed_by")
        .prefetch_related("sources")
        .order_by("-priority", "pk")
    )


def evidence_of(query: Query) -> Any:
    """The query's evidence condition, or ``None``."""

    return EvidenceCondition.objects.filter(query=query).select_related("updated_by").first()


def judgment_changes(ids: list[int]) -> dict[int, Any]:
    """History rows by id, with query and item (for describing an undo)."""

    return {
        c.pk: c for c in JudgmentChange.objects.filter(pk__in=ids).select_related("query", "item")
    }


def change_that_made(judgment: Judgment, by: Any) -> Any:
    """The history row of ``by``'s change that produced this version of the judgment
    (the newest, since a removal and re-creation starts the versions again)."""

    return (
        JudgmentChange.objects.filter(
            query_id=judgment.query_id,
            item_id=judgment.item_id,
            version=judgment.version,
            changed_by=by,
        )
        .order_by("-pk")
        .first()
    )


def item_in(collection: Collection, external_id: str) -> Any:
    """The collection's item by external id, or ``None``."""

    return Item.objects.filter(collection=collection, external_id=external_id).first()
