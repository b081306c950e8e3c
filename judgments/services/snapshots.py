"""Freezing a collection's labels as a numbered, content-hashed snapshot.

The canonical form the hash is computed from lives in ``judgments/snapshots.py``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import transaction

from audit.services import record
from jobs.progress import Progress

from ..extensions import ModelLabel, label_source
from ..locks import lock_collection
from ..models import (
    Collection,
    Query,
    Snapshot,
    SnapshotQuery,
    UnfrozenChange,
)
from ..snapshots import header_lines, resolution_of
from ._common import User
from .errors import VerityError
from .snapshot_blocks import (
    Block,
    changed_queries,
    end_blocks,
    held_blocks,
    held_queries,
    render_blocks,
    triggers_in_place,
    write_blocks,
)

if TYPE_CHECKING:
    from .snapshot_forms import Spliced

# snapshot_forms (numpy) is imported by the freeze itself: this module loads at every
# process's start-up (the admin), numpy does not (tests/test_startup.py).


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


@dataclass
class _Plan:
    """What a freeze changes: the blocks it writes, the queries whose held block ends
    (those of ``fresh`` that had one, and the deleted ones), and the form they make."""

    fresh: list[Block]
    ended: set[int]
    n_ended: int  # of ``ended``, those the latest version holds a block of
    form: Spliced


def _plan(
    collection: Collection,
    latest: Snapshot | None,
    header: bytes,
    changes: set[int],
    everything: bool,
    model: list,
    progress: Progress,
    cached: bool,
) -> _Plan | None:
    """Render what changed and splice it into the latest version's form: read from its
    file (``cached``; None when that form turns out not to match the database) or from
    the blocks it holds in the database."""
    from . import snapshot_forms

    progress.phase(
        "reading the latest version's form"
        if cached
        else "reading the blocks of the latest version",
        1,
    )
    form = snapshot_forms.load(latest) if cached and latest is not None else None
    if cached and form is None:
        return None
    holding: set[int] | None = None  # the queries the latest version holds blocks of
    if form is None:
        held = held_blocks(latest) if latest is not None else {}
        form = snapshot_forms.Form.of_blocks(header, held.values())
        holding = (
            set(SnapshotQuery.objects.of(latest).values_list("query_id", flat=True))
            if latest is not None
            else set()
        )
        live = set(Query.objects.filter(collection=collection).values_list("pk", flat=True))
        # Blocks without bytes (frozen before 0015), queries no trigger listed, gone ones.
        changes = changes | (live - held.keys()) | (holding - live)
    progress.advance(1)
    try:
        todo = None if everything or len(changes) > len(form) / 4 else changes
        n_render = (
            len(todo) if todo is not None else Query.objects.filter(collection=collection).count()
        )
        progress.phase(
            "rendering every query" if todo is None else f"rendering {len(todo)} changed queries",
            n_render,
        )
        rendered = render_blocks(collection, todo, model)
        progress.advance(n_render)
        if todo is None:
            holding = holding if holding is not None else set(form.pks.tolist())
            gone = (holding | changes) - rendered.keys()
        else:
            gone = todo - rendered.keys()
        at = form.positions(rendered.keys() | gone)
        starts = form.starts()
        drop, fresh = [], []
        for query_pk, block in rendered.items():
            i = at.get(query_pk)
            if i is not None:
                if snapshot_forms.block_sections(form, starts, i) == block.lines.sections():
                    continue  # rendered again, the same content: it keeps its block
                drop.append(i)
            fresh.append(block)
        drop += [at[q] for q in gone if q in at]
        ended = {b.query_pk for b in fresh} | gone
        n_ended = len(held_queries(collection, ended))
        if cached and n_ended != len(drop):  # the file's index is not this database's
            return None
        n_hashed = len(form) - len(drop) + len(fresh)
        progress.phase("hashing", n_hashed)
        if cached and not drop and not fresh and form.header == header:
            # Nothing changed: the latest version's hash, once its form is checked.
            spliced = snapshot_forms.Spliced(
                latest.content_hash, header, form.pks, form.lens, form.counts, None
            )
        else:
            spliced = snapshot_forms.splice(
                form, header, drop, fresh, snapshot_forms.directory(collection.pk)
            )
        progress.advance(n_hashed)
        if not form.verified():
            spliced.discard()
            return None
    finally:
        form.close()
    return _Plan(fresh=fresh, ended=ended, n_ended=n_ended, form=spliced)


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
    the latest version's block, shared (its run of versions goes on), and the hash is
    spliced from the latest version's canonical form kept as a file
    (``snapshot_forms``): O(changes) rows read and written, O(bytes) hashed. Without
    that file (deleted, another machine, the first freeze after an upgrade) the form is
    read from the latest version's blocks in the database instead. All queries are
    rendered again on the first freeze, when the resolution settings changed, while
    model labels are involved (a judge's proposals are not tracked), or if a change
    trigger is missing. A query rendered again whose content did not change keeps its
    block too. ``progress`` hears of each step.
    """
    progress = progress or Progress()
    collection = lock_collection(collection.pk)
    model = model_labels_for(collection)
    latest = Snapshot.objects.filter(collection=collection).order_by("-number").first()
    header = b"".join(_header(collection))
    changes = changed_queries(collection)
    everything = (
        latest is None
        or bool(model)
        or bool(latest.model_labels)
        or resolution_of(collection) != resolution_of(latest)
        or not triggers_in_place()
    )
    listed = {q for _, q in changes}
    plan = (
        None
        if everything
        else _plan(collection, latest, header, listed, everything, model, progress, cached=True)
    )
    if plan is None:
        plan = _plan(collection, latest, header, listed, everything, model, progress, cached=False)
    assert plan is not None  # read from the database, the form always matches
    seen = [pk for pk, _ in changes]
    for start in range(0, len(seen), 500):  # (SQLite limits the parameters of a statement)
        UnfrozenChange.objects.filter(pk__in=seen[start : start + 500]).delete()
    if latest is not None and latest.content_hash == plan.form.digest:
        plan.form.discard()
        return latest, False
    total = plan.form.totals()
    fresh = plan.fresh
    snapshot = Snapshot.objects.create(
        collection=collection,
        number=(latest.number + 1) if latest else 1,
        content_hash=plan.form.digest,
        scale=collection.scale,
        relevant_grade=collection.relevant_grade,
        unit=collection.unit,
        note=note,
        n_queries=len(plan.form.pks),
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
    ended = end_blocks(collection, snapshot.number, plan.ended)
    copied = write_blocks(snapshot, collection, fresh, model)
    progress.advance(len(fresh))
    expected = (
        sum(b.n_judgments + b.n_model_labels for b in fresh),
        sum(b.n_unjudged for b in fresh),
        sum(b.n_assessments for b in fresh) if collection.has_overlap else 0,
    )
    if copied != expected or ended != plan.n_ended:  # the lock makes this unreachable
        plan.form.discard()
        raise VerityError(
            f"snapshot copy counted {copied} rows and ended {ended} blocks, rendered "
            f"{expected} and expected {plan.n_ended}; nothing saved"
        )
    from . import snapshot_forms

    snapshot_forms.keep(snapshot, plan.form)
    record(
        "snapshot.freeze",
        actor=by,
        collection=collection,
        target=f"v{snapshot.number}",
        after={"content_hash": snapshot.content_hash, "n_judgments": snapshot.n_judgments},
        detail={"note": note} if note else None,
    )
    return snapshot, True
