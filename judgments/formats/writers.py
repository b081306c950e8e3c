"""Deterministic text out: the canonical JSONL bundle and TREC qrels.

``dumps_bundle`` writes records sorted by id (codepoint order), keys in the order of
the JSONL format, ``ensure_ascii=False``, separators ``", "`` and ``": "``: the bundle
format's version ``BUNDLE_FORMAT`` (docs/BUNDLES.md). ``bundle_lines`` gives the same
text a line at a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from .records import (
    BUNDLE_FORMAT,
    UNJUDGED_GRADE,
    Bundle,
    CollectionRecord,
    JudgmentRecord,
    UnjudgedRecord,
)

#: The settings a format 2 collection line carries after ``pool_depth``, and the value
#: of each that a collection has when the line does not give it (the model defaults).
SETTING_DEFAULTS: dict[str, Any] = {
    "holds_whole_corpus": False,
    "assessors_per_item": 1,
    "resolution_policy": "single",
    "adjudicate_distance": 1,
    "model_labels": "",
}

#: Settings written after those only when a collection's value is not this default: they
#: came after format 2's first bundles, whose bytes must not change (an export of a
#: collection pooled by depth is the same file as before); absent, a reader takes these.
OPTIONAL_SETTING_DEFAULTS: dict[str, Any] = {
    "pool_strategy": "depth",
    "pool_floor": 0,
}


def _canonical_json(value: Any) -> Any:
    """Nested objects with keys sorted, so that stored key order never shows in an export."""
    return json.loads(json.dumps(value, sort_keys=True))


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def collection_object(c: CollectionRecord) -> dict[str, Any]:
    return {
        "type": "collection",
        "format_version": BUNDLE_FORMAT,
        "slug": c.slug,
        "name": c.name,
        "description": c.description,
        "unit": c.unit,
        "scale": [{"grade": int(g["grade"]), "name": str(g["name"])} for g in c.scale],
        "relevant_grade": c.relevant_grade,
        "guidelines": c.guidelines,
        "pool_depth": c.pool_depth,
        **{k: d if getattr(c, k) is None else getattr(c, k) for k, d in SETTING_DEFAULTS.items()},
        **{
            k: getattr(c, k)
            for k, d in OPTIONAL_SETTING_DEFAULTS.items()
            if getattr(c, k) is not None and getattr(c, k) != d
        },
    }


def dumps_bundle(bundle: Bundle) -> str:
    """The canonical JSONL form: same records in, same bytes out, whatever their order."""
    return "".join(bundle_lines(bundle))


def bundle_lines(bundle: Bundle) -> Iterator[str]:
    """``dumps_bundle``'s lines, in order: the collection, items, queries, the labels,
    the assessments, adjudications, unjudged markers."""
    if bundle.collection is None:
        raise ValueError("a bundle needs its collection record")
    yield _line(collection_object(bundle.collection))
    for i in sorted(bundle.items, key=lambda r: r.id):
        yield _line(
            {
                "type": "item",
                "id": i.id,
                "title": i.title,
                "text": i.text,
                "url": i.url,
                "metadata": _canonical_json(i.metadata),
                "placeholder": i.placeholder,
            }
        )
    for q in sorted(bundle.queries, key=lambda r: r.id):
        yield _line(
            {
                "type": "query",
                "id": q.id,
                "text": q.text,
                "tags": list(q.tags),
                "status": q.status,
                "evidence": q.evidence,
            }
        )
    labels = [j for j in bundle.judgments if j.assessor is None]
    for j in sorted(labels, key=lambda r: (r.query, r.item)):
        yield _line(
            {
                "type": "judgment",
                "query": j.query,
                "item": j.item,
                "grade": j.grade,
                "note": j.note,
                "reviewer": j.reviewer,
            }
        )
    assessments = [j for j in bundle.judgments if j.assessor is not None]
    for j in sorted(assessments, key=lambda r: (r.query, r.item, r.assessor or "")):
        yield _line(
            {
                "type": "judgment",
                "query": j.query,
                "item": j.item,
                "grade": j.grade,
                "note": j.note,
                "assessor": j.assessor,
            }
        )
    for a in sorted(bundle.adjudications, key=lambda r: (r.query, r.item)):
        yield _line(
            {
                "type": "adjudication",
                "query": a.query,
                "item": a.item,
                "status": a.status,
                "grade": a.grade,
                "decided_by": a.decided_by,
                "decided_at": a.decided_at,
                "reason": a.reason,
            }
        )
    for u in sorted(bundle.unjudged, key=lambda r: (r.query, r.item)):
        yield _line(
            {
                "type": "unjudged",
                "query": u.query,
                "item": u.item,
                "source": u.source,
                "rank": u.rank,
            }
        )
    positions: dict[tuple[str, str], int] = {}
    for r in sorted(bundle.runs, key=lambda r: r.name):
        positions.update(((r.name, stage), n) for n, stage in enumerate(r.stages))
        yield _line(
            {
                "type": "run",
                "name": r.name,
                "description": r.description,
                "source_filename": r.source_filename,
                "source_sha256": r.source_sha256,
                "source_format": r.source_format,
                "order_rule": r.order_rule,
                "dedup_policy": r.dedup_policy,
                "duplicates_dropped": r.duplicates_dropped,
                "stages": list(r.stages),
            }
        )
    for k in sorted(
        bundle.rankings,
        key=lambda k: (k.run, positions.get((k.run, k.stage), len(positions)), k.stage, k.query),
    ):
        yield _line(
            {
                "type": "ranking",
                "run": k.run,
                "stage": k.stage,
                "query": k.query,
                "items": list(k.items),
                "abstained": k.abstained,
            }
        )


def dumps_trec_qrels(
    judgments: Iterable[JudgmentRecord], unjudged: Iterable[UnjudgedRecord] = ()
) -> str:
    """``qid 0 docid grade`` lines sorted by (qid, docid) in codepoint order; -1 = unjudged."""
    rows = [(j.query, j.item, j.grade) for j in judgments]
    rows += [(u.query, u.item, UNJUDGED_GRADE) for u in unjudged]
    rows.sort()
    return "".join(f"{q} 0 {i} {g}\n" for q, i, g in rows)
