"""Freezing a collection's labels as a numbered, content-hashed snapshot.

The canonical form the hash is computed from lives in ``judgments/snapshots.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from django.db import connection, transaction

from jobs.progress import Progress

from ..extensions import ModelLabel, label_source
from ..locks import lock_collection
from ..models import (
    Assessment,
    Collection,
    EvidenceCondition,
    Judgment,
    Query,
    ReviewTask,
    Snapshot,
    SnapshotAssessment,
    SnapshotJudgment,
    SnapshotQuery,
    SnapshotUnjudged,
    TaskStatus,
)
from ..selectors.assessments import live_assessments, unresolved_pairs
from ..snapshots import Overlap, canonical_lines, content_hash
from ._common import User
from .errors import VerityError


def model_labels_for(collection: Collection) -> list[ModelLabel]:
    """The model-made labels the collection's policy adds to a freeze: none by default;
    with ``model_labels`` naming a judge, that judge's current proposal of every pair
    no person judged or assessed (the judges app's registered source decides which)."""
    if not collection.model_labels:
        return []
    source = label_source()
    if source is None:
        raise VerityError(
            f"collection '{collection.slug}' accepts the labels of model judge "
            f"'{collection.model_labels}', but no app provides model judges here; add "
            "'judges' to INSTALLED_APPS or set model_labels to '' (no model label)"
        )
    try:
        return list(source.labels(collection, collection.model_labels))
    except LookupError as e:
        raise VerityError(str(e.args[0]) if e.args else str(e)) from None


def _live_canonical_lines(collection: Collection, model: list[ModelLabel]) -> Iterator[bytes]:
    queries = (
        (ext, status, groups)
        for ext, status, groups in Query.objects.filter(collection=collection)
        .values_list("external_id", "status", "evidence__groups")
        .iterator(chunk_size=5000)
    )
    judgments = Judgment.objects.filter(query__collection=collection).values_list(
        "query__external_id", "item__external_id", "grade"
    )
    unjudged = (
        ReviewTask.objects.filter(collection=collection)
        .exclude(status=TaskStatus.DONE)
        .values_list("query__external_id", "item__external_id")
        .order_by()
        .distinct()  # one marker per pair, however many of its slots are open
    )
    if model:  # a pair a model labelled is not unjudged in this snapshot
        labelled = {(m.qid, m.item) for m in model}
        unjudged = (pair for pair in unjudged.iterator(chunk_size=20000) if pair not in labelled)
    else:
        unjudged = unjudged.iterator(chunk_size=20000)
    overlap = None
    if collection.has_overlap:
        overlap = Overlap(
            policy=collection.resolution_policy,
            assessors_per_item=collection.assessors_per_item,
            distance=collection.adjudicate_distance,
            assessments=live_assessments(collection),
            unresolved=unresolved_pairs(collection),
        )
    return canonical_lines(
        slug=collection.slug,
        unit=collection.unit,
        relevant_grade=collection.relevant_grade,
        scale=collection.scale,
        queries=queries,
        judgments=judgments.iterator(chunk_size=20000),
        unjudged=unjudged,
        overlap=overlap,
        model_judgments=((m.qid, m.item, m.judge, m.grade) for m in model),
    )


def _copy_rows(sql: str, params: list[Any]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _copy_assessments(snapshot: Snapshot, collection: Collection) -> int:
    user = Assessment._meta.get_field("assessor").related_model
    return _copy_rows(
        f"INSERT INTO {SnapshotAssessment._meta.db_table} "
        "(snapshot_id, query_id, item_id, assessor, grade) "
        "SELECT %s, a.query_id, a.item_id, "
        f"COALESCE(u.{user.USERNAME_FIELD}, a.assessor_name), a.grade "
        f"FROM {Assessment._meta.db_table} a "
        f"LEFT JOIN {user._meta.db_table} u ON u.id = a.assessor_id "
        "WHERE a.collection_id = %s",
        [snapshot.pk, collection.pk],
    )


# Only with model labels: the default freeze runs the very statement it always ran.
_NOT_MODEL_LABELLED = (
    " AND NOT EXISTS (SELECT 1 FROM {table} sj WHERE sj.snapshot_id = %s "
    "AND sj.query_id = r.query_id AND sj.item_id = r.item_id AND sj.source <> '')"
)


def _insert_model_labels(snapshot: Snapshot, model: list[ModelLabel]) -> int:
    rows = SnapshotJudgment.objects.bulk_create(
        (
            SnapshotJudgment(
                snapshot=snapshot,
                query_id=m.query_pk,
                item_id=m.item_pk,
                grade=m.grade,
                source=m.judge,
            )
            for m in model
        ),
        batch_size=5000,
    )
    return len(rows)


@transaction.atomic
def freeze_snapshot(
    *, collection: Collection, by: User | None, note: str = "", progress: Progress | None = None
) -> tuple[Snapshot, bool]:
    """Freeze the collection's labels as version n+1; return (snapshot, created).

    The snapshot holds every judgment, every query's status and evidence condition, the
    open review tasks (unjudged markers), and the scale and relevant grade; with several
    assessors per item also every assessment, the resolution policy and the count of
    pairs awaiting adjudication (canonical form 2). When the collection's policy
    accepts a model judge (``model_labels``), that judge's current proposal of each pair
    no person judged or assessed is frozen as its label, with the judge as its
    ``source``, counted by judge in ``Snapshot.model_labels``; such a pair is not
    unjudged. By default no model label enters. Its hash is
    computed from the canonical form in ``snapshots.py``. If the content equals the
    latest version's, nothing is created and that version is returned with ``False``.
    Rows are copied set-based (INSERT … SELECT), so a million judgments take seconds.
    ``progress`` hears of the hashing (in lines) and of the copy.
    """
    progress = progress or Progress()
    collection = lock_collection(collection.pk)
    model = model_labels_for(collection)
    counts = dict.fromkeys(
        [
            b'["query"',
            b'["judgment"',
            b'["model-judgment"',
            b'["unjudged"',
            b'["assessment"',
            b'["unresolved"',
        ],
        0,
    )

    def counted(lines: Iterator[bytes]) -> Iterator[bytes]:
        for seen, line in enumerate(lines, start=1):
            kind = line[: line.index(b",")]
            if kind in counts:
                counts[kind] += 1
            if seen % 20000 == 0:
                progress.advance(20000)
            yield line

    progress.phase("hashing the labels")
    digest = content_hash(counted(_live_canonical_lines(collection, model)))
    latest = Snapshot.objects.filter(collection=collection).order_by("-number").first()
    if latest is not None and latest.content_hash == digest:
        return latest, False
    snapshot = Snapshot.objects.create(
        collection=collection,
        number=(latest.number + 1) if latest else 1,
        content_hash=digest,
        scale=collection.scale,
        relevant_grade=collection.relevant_grade,
        unit=collection.unit,
        note=note,
        n_queries=counts[b'["query"'],
        n_judgments=counts[b'["judgment"'] + counts[b'["model-judgment"'],
        n_unjudged=counts[b'["unjudged"'],
        assessors_per_item=collection.assessors_per_item,
        resolution_policy=collection.resolution_policy if collection.has_overlap else "",
        adjudicate_distance=collection.adjudicate_distance,
        n_assessments=counts[b'["assessment"'],
        n_unresolved=counts[b'["unresolved"'],
        model_labels=dict(sorted(Counter(m.judge for m in model).items())),
        created_by=by,
    )
    progress.phase(f"copying {sum(counts.values())} rows into v{snapshot.number}")
    t = {
        m.__name__: m._meta.db_table
        for m in (
            Query,
            Judgment,
            ReviewTask,
            EvidenceCondition,
            SnapshotQuery,
            SnapshotJudgment,
            SnapshotUnjudged,
        )
    }
    copied = (
        _copy_rows(
            f"INSERT INTO {t['SnapshotQuery']} (snapshot_id, query_id, status, evidence) "
            f"SELECT %s, q.id, q.status, e.groups FROM {t['Query']} q "
            f"LEFT JOIN {t['EvidenceCondition']} e ON e.query_id = q.id "
            "WHERE q.collection_id = %s",
            [snapshot.pk, collection.pk],
        ),
        _copy_rows(
            f"INSERT INTO {t['SnapshotJudgment']} (snapshot_id, query_id, item_id, grade) "
            f"SELECT %s, j.query_id, j.item_id, j.grade FROM {t['Judgment']} j "
            f"JOIN {t['Query']} q ON q.id = j.query_id WHERE q.collection_id = %s",
            [snapshot.pk, collection.pk],
        )
        + _insert_model_labels(snapshot, model),
        _copy_rows(
            f"INSERT INTO {t['SnapshotUnjudged']} (snapshot_id, query_id, item_id) "
            f"SELECT DISTINCT %s, r.query_id, r.item_id FROM {t['ReviewTask']} r "
            "WHERE r.collection_id = %s AND r.status <> %s"
            + (_NOT_MODEL_LABELLED.format(table=t["SnapshotJudgment"]) if model else ""),
            [snapshot.pk, collection.pk, TaskStatus.DONE] + ([snapshot.pk] if model else []),
        ),
    )
    if collection.has_overlap:
        copied += (_copy_assessments(snapshot, collection),)
    expected = (snapshot.n_queries, snapshot.n_judgments, snapshot.n_unjudged)
    if collection.has_overlap:
        expected += (snapshot.n_assessments,)
    if copied != expected:  # the collection lock makes this unreachable; say so if not
        raise VerityError(f"snapshot copy counted {copied}, hashed {expected}; nothing saved")
    return snapshot, True
