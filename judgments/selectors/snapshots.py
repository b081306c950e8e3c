"""Frozen snapshots: one by number, its rows, its canonical and TREC forms, and the
differences between two of them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from ..models import (
    Collection,
    Snapshot,
    SnapshotJudgment,
    SnapshotQuery,
    SnapshotUnjudged,
)
from ..snapshots import (
    SECTIONS,
    Overlap,
    assessment_line,
    canonical_lines,
    frozen_qid,
    header_lines,
    resolution_of,
)
from .assessments import frozen_assessments, frozen_unresolved, one_assessor


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
    """Every label of the snapshot, people's and (when its policy accepted them) model
    judges': what scoring and the qrels use."""
    return (
        SnapshotJudgment.objects.of(snapshot)
        .values_list("query__external_id", "item__external_id", "grade")
        .iterator(chunk_size=20000)
    )


def frozen_labels_by_source(snapshot: Snapshot) -> Iterator[tuple[str, str, int, str]]:
    """Every label as (QID, ITEM, GRADE, SOURCE): SOURCE is '' for a person's label and
    the judge's name for a model's."""
    return (
        SnapshotJudgment.objects.of(snapshot)
        .values_list("query__external_id", "item__external_id", "grade", "source")
        .iterator(chunk_size=20000)
    )


def frozen_unjudged(snapshot: Snapshot) -> Iterator[tuple[str, str]]:
    return (
        SnapshotUnjudged.objects.of(snapshot)
        .values_list("query__external_id", "item__external_id")
        .iterator(chunk_size=20000)
    )


def frozen_queries(snapshot: Snapshot) -> Iterator[tuple[str, str, list[list[str]] | None]]:
    return (
        SnapshotQuery.objects.of(snapshot)
        .values_list("query__external_id", "status", "evidence")
        .iterator(chunk_size=20000)
    )


def snapshot_canonical_lines(snapshot: Snapshot) -> Iterator[bytes]:
    """The snapshot in its canonical form (``snapshots.py``): sha256 of these bytes is
    ``snapshot.content_hash``, so an export can be verified with ``sha256sum``.

    Read from the bytes its query blocks stored when they were frozen; a version frozen
    before blocks stored bytes (migration 0015) is rendered from its rows."""
    blocks = SnapshotQuery.objects.of(snapshot)
    if blocks.filter(query_line__isnull=True).exists():
        return rendered_canonical_lines(snapshot)
    header = header_lines(
        slug=snapshot.collection.slug,
        unit=snapshot.unit,
        relevant_grade=snapshot.relevant_grade,
        scale=snapshot.scale,
        resolution=resolution_of(snapshot),
    )
    return _stored_lines(header, blocks)


def _stored_lines(header: list[bytes], blocks: QuerySet[SnapshotQuery]) -> Iterator[bytes]:
    yield from header
    order = sorted(
        ((pk, frozen_qid(line)) for pk, line in blocks.values_list("pk", "query_line")),
        key=lambda r: r[1],
    )
    for name in SECTIONS:
        for start in range(0, len(order), 1000):
            chunk = [pk for pk, _ in order[start : start + 1000]]
            stored = dict(SnapshotQuery.objects.filter(pk__in=chunk).values_list("pk", name))
            for pk in chunk:  # a block's part of a section: none, one or several lines
                yield from (line + b"\n" for line in bytes(stored[pk]).split(b"\n")[:-1])


def rendered_canonical_lines(snapshot: Snapshot) -> Iterator[bytes]:
    """The canonical form rendered from the snapshot's rows (with today's query and item
    ids): equal to the stored bytes as long as no id was renamed since the freeze."""
    if snapshot.model_labels:
        rows = list(frozen_labels_by_source(snapshot))
        human: Iterable[tuple[str, str, int]] = [(q, i, g) for q, i, g, src in rows if not src]
        model = [(q, i, src, g) for q, i, g, src in rows if src]
    else:
        human, model = frozen_judgments(snapshot), []
    return canonical_lines(
        slug=snapshot.collection.slug,
        unit=snapshot.unit,
        relevant_grade=snapshot.relevant_grade,
        scale=snapshot.scale,
        queries=frozen_queries(snapshot),
        judgments=human,
        unjudged=frozen_unjudged(snapshot),
        model_judgments=model,
        overlap=None
        if not snapshot.has_overlap
        else Overlap(
            policy=snapshot.resolution_policy,
            assessors_per_item=snapshot.assessors_per_item,
            distance=snapshot.adjudicate_distance,
            assessments=frozen_assessments(snapshot),
            unresolved=frozen_unresolved(snapshot),
        ),
    )


def snapshot_trec_lines(
    snapshot: Snapshot, *, with_unjudged: bool = False, assessor: str | None = None
) -> Iterator[str]:
    """TREC qrels ``qid 0 docid grade`` sorted by (qid, docid) in code-point order;
    with ``with_unjudged``, open review tasks and pairs awaiting adjudication as grade
    ``-1`` (pooled but unjudged).
    With ``assessor``, that assessor's frozen assessments instead of the resolved labels
    (``LookupError`` naming the snapshot's assessors when it has none by that name).

    Resolved labels are read from the bytes the query blocks stored at the freeze, as the
    JSONL export is: joining a million rows to their query and item ids took the database
    ~5x the JSONL export's time. So the ids are the ones frozen, as in the JSONL export and
    the content hash, even if a query or item was renamed since. A version frozen
    before blocks stored bytes, an assessor's export and pairs awaiting adjudication are
    read from the rows."""
    if assessor is None and not (with_unjudged and snapshot.n_unresolved):
        blocks = SnapshotQuery.objects.of(snapshot)
        if not blocks.filter(query_line__isnull=True).exists():
            return _stored_trec_lines(blocks, with_unjudged)
    rows: list[tuple[str, str, int]] = (
        list(frozen_judgments(snapshot))
        if assessor is None
        else one_assessor(frozen_assessments(snapshot), assessor, f"snapshot v{snapshot.number}")
    )
    if with_unjudged:
        graded = {(q, i) for q, i, _ in rows}  # an assessor's pair may await other slots
        rows.extend((q, i, -1) for q, i in frozen_unjudged(snapshot) if (q, i) not in graded)
        if snapshot.n_unresolved:
            # Pairs awaiting adjudication are unjudged in the snapshot too: pooled, no label.
            rows.extend(
                (q, i, -1) for q, i in sorted(frozen_unresolved(snapshot)) if (q, i) not in graded
            )
    rows.sort()
    return (f"{q} 0 {i} {g}\n" for q, i, g in rows)


def snapshot_assessor_lines(snapshot: Snapshot, assessor: str) -> Iterator[bytes]:
    """One assessor's frozen assessments as the canonical form's
    ``["assessment",QID,ITEM,ASSESSOR,GRADE]`` lines, in its order (by query, item):
    the lines of the JSONL export that name them. ``LookupError`` as ``one_assessor``."""
    rows = one_assessor(frozen_assessments(snapshot), assessor, f"snapshot v{snapshot.number}")
    rows.sort()
    return (assessment_line(q, i, assessor, g) for q, i, g in rows)


def _stored_trec_lines(blocks: QuerySet[SnapshotQuery], with_unjudged: bool) -> Iterator[str]:
    """TREC lines from the blocks' stored sections, block by block in frozen-QID order:
    every block's lines share its QID, so sorting each block sorts the whole."""
    names = ["judgment_lines", "model_lines"] + (["unjudged_lines"] if with_unjudged else [])
    order = sorted(
        ((pk, frozen_qid(line)) for pk, line in blocks.values_list("pk", "query_line")),
        key=lambda r: r[1],
    )
    for start in range(0, len(order), 1000):
        chunk = order[start : start + 1000]
        stored = {
            pk: sections
            for pk, *sections in SnapshotQuery.objects.filter(
                pk__in=[pk for pk, _ in chunk]
            ).values_list("pk", *names)
        }
        for pk, qid in chunk:
            judged, model, *unjudged = (bytes(s).decode() for s in stored[pk])
            if not model and not any(unjudged) and "\\" not in judged:
                # Only people's labels, no escaped character: ``["judgment","Q","I",G]``
                # becomes ``Q 0 I G`` by replacing the text around the ids (an id holds
                # no '"' here, which would be escaped), already sorted by item.
                prefix = f'["judgment",{json.encoder.encode_basestring(qid)},"'
                text = judged.replace(prefix, f"{qid} 0 ").replace('",', " ")
                yield from [line + "\n" for line in text.split("]\n")[:-1]]
                continue
            # Model labels or unjudged markers to merge, or escaped ids: parse the lines
            # (split at "\n" only: JSON leaves U+2028 and the like unescaped).
            rows = [(f[2], int(f[-1])) for f in _arrays(judged + model)]
            if unjudged:
                graded = {i for i, _ in rows}
                rows.extend((f[2], -1) for f in _arrays(unjudged[0]) if f[2] not in graded)
            rows.sort()
            yield from (f"{qid} 0 {i} {g}\n" for i, g in rows)


def _arrays(lines: str) -> Iterator[list[Any]]:
    """The JSON arrays of stored canonical lines."""
    return (json.loads(line) for line in lines.split("\n")[:-1])


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
