"""Freezing a collection's labels as a numbered, content-hashed snapshot.

The canonical form the hash is computed from lives in ``judgments/snapshots.py``.
"""

from __future__ import annotations

from collections import Counter

from django.db import transaction

from audit.services import record
from jobs.progress import Progress

from ..extensions import ModelLabel, label_source
from ..locks import lock_collection
from ..models import (
    Collection,
    Query,
    Snapshot,
    UnfrozenChange,
)
from ..snapshots import blocks_hash, header_lines, resolution_of
from ._common import User
from .errors import VerityError
from .snapshot_blocks import (
    held_blocks,
    render_blocks,
    triggers_in_place,
    write_blocks,
    write_members,
)


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


def _header(collection: Collection) -> list[bytes]:
    return header_lines(
        slug=collection.slug,
        unit=collection.unit,
        relevant_grade=collection.relevant_grade,
        scale=collection.scale,
        resolution=resolution_of(collection),
    )


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
    unjudged. By default no model label enters. Its hash is computed from the canonical
    form in ``snapshots.py``. If the content equals the latest version's, nothing is
    created and that version is returned with ``False`` (and nothing is audited: only a
    new version leaves a ``snapshot.freeze`` row).

    It costs what changed: only the queries the change triggers listed since the last
    freeze (``UnfrozenChange``) are read and rendered again; every other query keeps
    the latest version's block, shared, and its stored bytes go into the hash. All
    queries are rendered again on the first freeze, when the resolution settings
    changed, while model labels are involved (a judge's proposals are not tracked), or
    if a change trigger is missing. A query rendered again whose content did not change
    keeps its block too. ``progress`` hears of each step.
    """
    progress = progress or Progress()
    collection = lock_collection(collection.pk)
    model = model_labels_for(collection)
    latest = Snapshot.objects.filter(collection=collection).order_by("-number").first()
    live = set(Query.objects.filter(collection=collection).values_list("pk", flat=True))
    changes = list(
        UnfrozenChange.objects.filter(
            query_id__in=Query.objects.filter(collection=collection).values("pk")
        ).values_list("pk", "query_id")
    )
    progress.phase("reading the blocks of the latest version", 1)
    held = held_blocks(latest.pk) if latest is not None else {}
    progress.advance(1)
    everything = (
        latest is None
        or bool(model)
        or bool(latest.model_labels)
        or resolution_of(collection) != resolution_of(latest)
        or not triggers_in_place()
    )
    todo = None if everything else {q for _, q in changes} | (live - held.keys())
    if todo is not None and len(todo) > len(live) / 4:
        todo = None  # one pass over the collection beats many lookups by query
    n_render = len(live) if todo is None else len(todo)
    progress.phase(
        "rendering every query" if todo is None else f"rendering {len(todo)} changed queries",
        n_render,
    )
    rendered = render_blocks(collection, todo, model)
    progress.advance(n_render)
    blocks = {q: b for q, b in held.items() if q in live}  # a query that is gone leaves
    fresh = []
    for query_pk, block in rendered.items():
        same = held.get(query_pk)
        if same is not None and same.same_content(block):
            continue
        blocks[query_pk] = block
        fresh.append(block)
    progress.phase("hashing", len(blocks))
    digest = blocks_hash(_header(collection), (b.lines for b in blocks.values()))
    progress.advance(len(blocks))
    seen = [pk for pk, _ in changes]
    for start in range(0, len(seen), 500):  # (SQLite limits the parameters of a statement)
        UnfrozenChange.objects.filter(pk__in=seen[start : start + 500]).delete()
    if latest is not None and latest.content_hash == digest:
        return latest, False
    total = {
        name: sum(getattr(b, name) for b in blocks.values())
        for name in ("n_judgments", "n_model_labels", "n_unjudged", "n_assessments", "n_unresolved")
    }
    snapshot = Snapshot.objects.create(
        collection=collection,
        number=(latest.number + 1) if latest else 1,
        content_hash=digest,
        scale=collection.scale,
        relevant_grade=collection.relevant_grade,
        unit=collection.unit,
        note=note,
        n_queries=len(blocks),
        n_judgments=total["n_judgments"] + total["n_model_labels"],
        n_unjudged=total["n_unjudged"],
        assessors_per_item=collection.assessors_per_item,
        resolution_policy=collection.resolution_policy if collection.has_overlap else "",
        adjudicate_distance=collection.adjudicate_distance,
        n_assessments=total["n_assessments"],
        n_unresolved=total["n_unresolved"],
        model_labels=dict(sorted(Counter(m.judge for m in model).items())),
        created_by=by,
    )
    progress.phase(f"writing {len(fresh)} new query blocks into v{snapshot.number}", len(fresh))
    copied = write_blocks(snapshot.pk, collection, fresh, model)
    progress.advance(len(fresh))
    expected = (
        sum(b.n_judgments + b.n_model_labels for b in fresh),
        sum(b.n_unjudged for b in fresh),
        sum(b.n_assessments for b in fresh) if collection.has_overlap else 0,
    )
    members = write_members(snapshot.pk, [b for b in blocks.values() if b.pk is not None])
    if copied != expected or members != len(blocks):  # the lock makes this unreachable
        raise VerityError(
            f"snapshot copy counted {copied} rows and {members} queries, rendered "
            f"{expected} and {len(blocks)}; nothing saved"
        )
    record(
        "snapshot.freeze",
        actor=by,
        collection=collection,
        target=f"v{snapshot.number}",
        after={"content_hash": snapshot.content_hash, "n_judgments": snapshot.n_judgments},
        detail={"note": note} if note else None,
    )
    return snapshot, True
