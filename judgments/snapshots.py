"""The canonical form of a snapshot, from which its content hash is computed.

A snapshot's identity is ``sha256`` over this byte sequence, so anyone can recompute it
from an export. Version 1 of the form is UTF-8 text, one JSON array per line, each line
ending in ``\\n``, arrays written with ``separators=(",", ":")`` and
``ensure_ascii=False``, strings compared by Unicode code point:

1. ``["verity-snapshot",1]``
2. ``["collection",SLUG,UNIT,RELEVANT_GRADE,SCALE]`` where SCALE is the list of
   ``{"grade":G,"name":N}`` objects (keys sorted), lowest grade first
3. one ``["query",QID,STATUS,EVIDENCE]`` per query, sorted by QID; EVIDENCE is the
   canonical DNF (each AND-group sorted, groups sorted) or ``null``
4. one ``["judgment",QID,ITEM,GRADE]`` per judgment, sorted by (QID, ITEM)
5. one ``["unjudged",QID,ITEM]`` per open review task, sorted by (QID, ITEM)

Only content is hashed: not the version number, time, author or note. Item texts are
not part of a snapshot; labels are.

Version 2 is the form of a collection with several assessors per item
(``assessors_per_item`` > 1); a collection with one keeps version 1, byte for byte.
It is version 1 with line 1 ``["verity-snapshot",2]`` and three additions:

2a. after the collection line, ``["resolution",POLICY,N,DISTANCE]``: the resolution
    policy, assessors per item and adjudicate distance (``judgments/resolution.py``)
4a. after the judgments (which are the *resolved* labels), one
    ``["assessment",QID,ITEM,ASSESSOR,GRADE]`` per assessment, sorted by
    (QID, ITEM, ASSESSOR); ASSESSOR is the user name or the imported assessor's name
5a. after the unjudged markers, one ``["unresolved",QID,ITEM]`` per pair that has all
    its assessments but awaits an adjudicator, sorted by (QID, ITEM): it is unjudged
    in the snapshot, and counted

Model labels (either version): a snapshot frozen while the collection's policy accepts
a model judge's proposals (``Collection.model_labels``) and holding at least one such
label adds one section; without model labels the form is version 1 or 2 byte for byte:

4b. right after the judgment lines (which are then people's labels only), one
    ``["model-judgment",QID,ITEM,JUDGE,GRADE]`` per pair labelled by a model judge,
    sorted by (QID, ITEM). Such a pair has no person's judgment or assessment, and no
    ``unjudged`` line: it is labelled in this snapshot, by the judge named. A model
    label and a person's label of the same grade are different lines, so different
    hashes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

FORM_VERSION = 1
OVERLAP_FORM_VERSION = 2


def _line(value: list[Any]) -> bytes:
    return (json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


# The same bytes json.dumps(..., ensure_ascii=False) gives for a string, from its C
# encoder: the per-line f-strings below are ~5x faster than json.dumps on a list, which
# matters at a million judgments. Tests pin the bytes against hand-written lines.
_str = json.encoder.encode_basestring


@dataclass(frozen=True)
class Overlap:
    """What form version 2 adds: the resolution settings, every assessment as
    (QID, ITEM, ASSESSOR, GRADE), and the pairs awaiting adjudication as (QID, ITEM)."""

    policy: str
    assessors_per_item: int
    distance: int
    assessments: Iterable[tuple[str, str, str, int]]
    unresolved: Iterable[tuple[str, str]]


def resolution_of(settings: Any) -> tuple[str, int, int] | None:
    """Line 2a's (POLICY, N, DISTANCE) of a collection or a snapshot (both name them
    alike), or None for one assessor per item (form 1)."""
    if not settings.has_overlap:
        return None
    return (
        settings.resolution_policy,
        settings.assessors_per_item,
        settings.adjudicate_distance,
    )


def header_lines(
    *,
    slug: str,
    unit: str,
    relevant_grade: int,
    scale: list[dict[str, Any]],
    resolution: tuple[str, int, int] | None = None,
) -> list[bytes]:
    """Lines 1, 2 and, in form 2 (``resolution`` as (POLICY, N, DISTANCE)), 2a: all
    that comes before the first query line."""
    version = FORM_VERSION if resolution is None else OVERLAP_FORM_VERSION
    lines = [_line(["verity-snapshot", version])]
    scale_sorted = [dict(sorted(g.items())) for g in sorted(scale, key=lambda g: g["grade"])]
    lines.append(_line(["collection", slug, unit, relevant_grade, scale_sorted]))
    if resolution is not None:
        lines.append(_line(["resolution", *resolution]))
    return lines


def query_line(qid: str, status: str, evidence: list[list[str]] | None) -> bytes:
    return _line(["query", qid, status, evidence])


def judgment_line(qid: str, item: str, grade: int) -> bytes:
    return f'["judgment",{_str(qid)},{_str(item)},{int(grade)}]\n'.encode()


def model_line(qid: str, item: str, judge: str, grade: int) -> bytes:
    return f'["model-judgment",{_str(qid)},{_str(item)},{_str(judge)},{int(grade)}]\n'.encode()


def assessment_line(qid: str, item: str, who: str, grade: int) -> bytes:
    return f'["assessment",{_str(qid)},{_str(item)},{_str(who)},{int(grade)}]\n'.encode()


def unjudged_line(qid: str, item: str) -> bytes:
    return f'["unjudged",{_str(qid)},{_str(item)}]\n'.encode()


def unresolved_line(qid: str, item: str) -> bytes:
    return f'["unresolved",{_str(qid)},{_str(item)}]\n'.encode()


def canonical_lines(
    *,
    slug: str,
    unit: str,
    relevant_grade: int,
    scale: list[dict[str, Any]],
    queries: Iterable[tuple[str, str, list[list[str]] | None]],
    judgments: Iterable[tuple[str, str, int]],
    unjudged: Iterable[tuple[str, str]],
    overlap: Overlap | None = None,
    model_judgments: Iterable[tuple[str, str, str, int]] = (),
) -> Iterator[bytes]:
    """Yield the canonical form's lines; inputs may come in any order. ``overlap`` given
    (several assessors per item): form version 2, else version 1. ``model_judgments``
    as (QID, ITEM, JUDGE, GRADE): section 4b, absent when empty."""
    yield from header_lines(
        slug=slug,
        unit=unit,
        relevant_grade=relevant_grade,
        scale=scale,
        resolution=None
        if overlap is None
        else (overlap.policy, overlap.assessors_per_item, overlap.distance),
    )
    for qid, status, evidence in sorted(queries, key=lambda r: r[0]):
        yield query_line(qid, status, evidence)
    for qid, item, grade in sorted(judgments, key=lambda r: (r[0], r[1])):
        yield judgment_line(qid, item, grade)
    for qid, item, judge, grade in sorted(model_judgments, key=lambda r: (r[0], r[1])):
        yield model_line(qid, item, judge, grade)
    if overlap is not None:
        for qid, item, who, grade in sorted(overlap.assessments, key=lambda r: r[:3]):
            yield assessment_line(qid, item, who, grade)
    for qid, item in sorted(unjudged):
        yield unjudged_line(qid, item)
    if overlap is not None:
        for qid, item in sorted(overlap.unresolved):
            yield unresolved_line(qid, item)


# The sections of the form after the header, in order. Every one is sorted by QID first,
# so the form is also: for each section, each query's part of it in QID order. That is
# how a freeze hashes per-query blocks (``QueryBlock``) it did not render again.
SECTIONS = (
    "query_line",
    "judgment_lines",
    "model_lines",
    "assessment_lines",
    "unjudged_lines",
    "unresolved_lines",
)


@dataclass
class QueryBlock:
    """One query's part of every section of the canonical form, as bytes."""

    qid: str
    query_line: bytes
    judgment_lines: bytes = b""
    model_lines: bytes = b""
    assessment_lines: bytes = b""
    unjudged_lines: bytes = b""
    unresolved_lines: bytes = b""

    def sections(self) -> tuple[bytes, ...]:
        return tuple(getattr(self, name) for name in SECTIONS)


def render_block(
    qid: str,
    status: str,
    evidence: list[list[str]] | None,
    *,
    judgments: Iterable[tuple[str, int]] = (),
    model_judgments: Iterable[tuple[str, str, int]] = (),
    assessments: Iterable[tuple[str, str, int]] = (),
    unjudged: Iterable[str] = (),
    unresolved: Iterable[str] = (),
) -> QueryBlock:
    """The block of query ``qid``: judgments as (ITEM, GRADE), model judgments as (ITEM,
    JUDGE, GRADE), assessments as (ITEM, ASSESSOR, GRADE), unjudged and unresolved as
    ITEMs, in any order; the same bytes ``canonical_lines`` writes for them."""
    q = _str(qid)
    return QueryBlock(
        qid=qid,
        query_line=query_line(qid, status, evidence),
        judgment_lines="".join(
            [f'["judgment",{q},{_str(i)},{int(g)}]\n' for i, g in sorted(judgments)]
        ).encode(),
        model_lines=b"".join(
            model_line(qid, i, j, g) for i, j, g in sorted(model_judgments, key=lambda r: r[0])
        ),
        assessment_lines=b"".join(
            assessment_line(qid, i, w, g)
            for i, w, g in sorted(assessments, key=lambda r: (r[0], r[1]))
        ),
        unjudged_lines="".join(
            [f'["unjudged",{q},{_str(i)}]\n' for i in sorted(unjudged)]
        ).encode(),
        unresolved_lines=b"".join(unresolved_line(qid, i) for i in sorted(unresolved)),
    )


def frozen_qid(query_line: bytes) -> str:
    """The QID a block's query line was frozen with (the query may be renamed since)."""
    return json.loads(query_line)[1]


def blocks_hash(header: Iterable[bytes], blocks: Iterable[QueryBlock]) -> str:
    """sha256 of the form made of ``header`` and the query ``blocks`` (any order)."""
    ordered = sorted(blocks, key=lambda b: b.qid)
    digest = hashlib.sha256()
    for line in header:
        digest.update(line)
    for name in SECTIONS:
        for block in ordered:
            digest.update(getattr(block, name))
    return digest.hexdigest()


def content_hash(lines: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line)
    return digest.hexdigest()
