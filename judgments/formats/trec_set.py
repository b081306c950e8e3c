"""A collection's start from standard TREC files: qrels, topics and (optionally) the
documents, read together as ``manage.py import_trec`` and the new-collection page read
them, with the scale their grades imply when none is given."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .docs import parse_docs
from .records import Bundle, Problem
from .trec import parse_qrels, parse_topics


def read_trec_set(
    *,
    qrels: tuple[bytes, str],
    topics: tuple[bytes, str],
    docs: tuple[Iterable[bytes], str] | None = None,
    all_docs: bool = False,
) -> tuple[Bundle, list[Problem], int]:
    """(bundle, problems, documents skipped): topics then qrels, then the documents the
    qrels name (every document with ``all_docs``). Each of ``qrels``, ``topics`` and
    ``docs`` is (content, the file's name as problems should give it)."""
    bundle, problems = Bundle(), []
    for part, found in (parse_topics(*topics), parse_qrels(*qrels)):
        bundle.absorb(part)
        problems += found
    skipped = 0
    if docs is not None:
        named = {r.item for r in (*bundle.judgments, *bundle.unjudged)}
        items, found, skipped = parse_docs(docs[0], docs[1], wanted=None if all_docs else named)
        bundle.items = items
        problems += found
    return bundle, problems, skipped


def scale_from_grades(bundle: Bundle) -> list[dict[str, Any]]:
    """The default scale for qrels: every grade from 0 to the highest used, up to 10 (a
    gap in a short scale is a grade nobody happened to give); beyond that, only the
    grades used."""
    used = {r.grade for r in bundle.judgments} | {0, 1}
    return [
        {"grade": g, "name": "not relevant" if g == 0 else f"grade {g}"}
        for g in sorted(used | set(range(min(max(used), 10) + 1)))
    ]
