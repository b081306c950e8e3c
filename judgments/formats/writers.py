"""Deterministic text out: the canonical JSONL bundle and TREC qrels.

``dumps_bundle`` writes records sorted by id (codepoint order), keys in the order of
the JSONL format, ``ensure_ascii=False``, separators ``", "`` and ``": "``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .records import UNJUDGED_GRADE, Bundle, CollectionRecord, JudgmentRecord, UnjudgedRecord


def _canonical_json(value: Any) -> Any:
    """Nested objects with keys sorted, so that stored key order never shows in an export."""
    return json.loads(json.dumps(value, sort_keys=True))


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def collection_object(c: CollectionRecord) -> dict[str, Any]:
    return {
        "type": "collection",
        "slug": c.slug,
        "name": c.name,
        "description": c.description,
        "unit": c.unit,
        "scale": [{"grade": int(g["grade"]), "name": str(g["name"])} for g in c.scale],
        "relevant_grade": c.relevant_grade,
        "guidelines": c.guidelines,
        "pool_depth": c.pool_depth,
    }


def dumps_bundle(bundle: Bundle) -> str:
    """The canonical JSONL form: same records in, same bytes out, whatever their order."""
    if bundle.collection is None:
        raise ValueError("a bundle needs its collection record")
    out = [_line(collection_object(bundle.collection))]
    for i in sorted(bundle.items, key=lambda r: r.id):
        out.append(
            _line(
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
        )
    for q in sorted(bundle.queries, key=lambda r: r.id):
        out.append(
            _line(
                {
                    "type": "query",
                    "id": q.id,
                    "text": q.text,
                    "tags": list(q.tags),
                    "status": q.status,
                    "evidence": q.evidence,
                }
            )
        )
    for j in sorted(bundle.judgments, key=lambda r: (r.query, r.item)):
        out.append(
            _line(
                {
                    "type": "judgment",
                    "query": j.query,
                    "item": j.item,
                    "grade": j.grade,
                    "note": j.note,
                    "reviewer": j.reviewer,
                }
            )
        )
    for u in sorted(bundle.unjudged, key=lambda r: (r.query, r.item)):
        out.append(
            _line(
                {
                    "type": "unjudged",
                    "query": u.query,
                    "item": u.item,
                    "source": u.source,
                    "rank": u.rank,
                }
            )
        )
    return "".join(out)


def dumps_trec_qrels(
    judgments: Iterable[JudgmentRecord], unjudged: Iterable[UnjudgedRecord] = ()
) -> str:
    """``qid 0 docid grade`` lines sorted by (qid, docid) in codepoint order; -1 = unjudged."""
    rows = [(j.query, j.item, j.grade) for j in judgments]
    rows += [(u.query, u.item, UNJUDGED_GRADE) for u in unjudged]
    rows.sort()
    return "".join(f"{q} 0 {i} {g}\n" for q, i, g in rows)
