"""JSONL bundles, item, query and judgment files: one JSON object per line.

The bundle format is documented in full in ``docs/BUNDLES.md``; in short, a bundle holds
the collection record first (format 2 adds ``format_version`` and the settings from
``holds_whole_corpus`` on; a line without them is format 1)::

    {"type": "collection", "format_version": 2, "slug": ..., "name": ...,
     "description": ..., "unit": ..., "scale": [{"grade": 0, "name": ...}, ...],
     "relevant_grade": 1, "guidelines": ..., "pool_depth": 10,
     "holds_whole_corpus": false, "assessors_per_item": 1, "resolution_policy": "single",
     "adjudicate_distance": 1, "model_labels": ""}
    (then "pool_strategy": "bandit", "pool_floor": 5 when not depth and 0, the defaults)
    {"type": "item", "id": ..., "title": ..., "text": ..., "url": ..., "metadata": {},
     "placeholder": false}
    {"type": "query", "id": ..., "text": ..., "tags": [...], "status": "unreviewed",
     "evidence": [["a", "b"], ["c"]] or null}
    {"type": "judgment", "query": ..., "item": ..., "grade": 1, "note": ..., "reviewer": ...}
    {"type": "judgment", "query": ..., "item": ..., "grade": 1, "note": ..., "assessor": ...}
    {"type": "adjudication", "query": ..., "item": ..., "status": "decided", "grade": 2,
     "decided_by": ..., "decided_at": "2026-12-04T18:00:00+00:00", "reason": ...}
    {"type": "unjudged", "query": ..., "item": ..., "source": "qrels -1", "rank": null}
    {"type": "run", "name": ..., "stages": ["default"], ...}   (export_collection --runs)
    {"type": "ranking", "run": ..., "stage": ..., "query": ..., "items": [...]}

A judgment record with an ``"assessor"`` (a name) is that assessor's assessment of the
pair, not its resolved label: a pair may have one per assessor, and the collection's
resolution policy makes the label (``judgments/resolution.py``). A ``"reviewer"`` who is
a member of the collection stays the judgment's reviewer; any other name is kept as an
external assessor's name (``Judgment.reviewer_name``), never a user account, and the
history names the importer. The same holds for an ``"assessor"`` and an adjudication's
``"decided_by"``.

A ``--judgments`` file may also hold ``{"type": "status", "query": ..., "status": ...}``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from verity_limits import (
    GRADE_MAX,
    GRADE_MIN,
    INT16_MAX,
    INT32_MAX,
    NAME_MAX,
    NOTE_MAX,
    SLUG_MAX,
    STAGE_MAX,
    URL_MAX,
    JsonLineError,
    parse_json_line,
)

from .checks import (
    _Bad,
    _boolean,
    _Duplicates,
    _empty,
    _evidence,
    _integer,
    _json_type,
    _lines,
    _obj,
    _optional,
    _scale,
    _tags,
    _text,
    check_id,
)
from .records import (
    BUNDLE_FORMAT,
    UNJUDGED_GRADE,
    UTF8_BOM,
    AdjudicationRecord,
    Bundle,
    CollectionRecord,
    ItemRecord,
    JudgmentRecord,
    Problem,
    QueryRecord,
    RankingRecord,
    RunRecord,
    StatusRecord,
    UnjudgedRecord,
    Where,
)
from .trec import parse_topics

_GRADE = _integer(low=GRADE_MIN, high=GRADE_MAX)  # the scale check is the service's


def _stages(key: str, value: Any) -> list[str]:
    """A run's stage names, in order: distinct, non-empty."""
    if not isinstance(value, list) or not value:
        raise _Bad(f"'{key}' must be a non-empty list of stage names, e.g. [\"default\"]")
    names = [_text(required=True, max_length=STAGE_MAX)(key, v) for v in value]
    if len(set(names)) != len(names):
        raise _Bad(f"'{key}' names a stage twice; each stage once")
    return names


def _ids(key: str, value: Any) -> list[str]:
    """A ranked list: item ids, each once."""
    if not isinstance(value, list):
        raise _Bad(f"'{key}' must be a list of item ids")
    ids = [check_id(key, v) for v in value]
    if len(set(ids)) != len(ids):
        raise _Bad(f"'{key}' names an item twice; a ranked list holds each item once")
    return ids


_ID = check_id

# type → {key: (check, required, default)}; a callable default makes a fresh value.
_Spec = dict[str, tuple[Callable[[str, Any], Any], bool, Any]]
_SPECS: dict[str, _Spec] = {
    "collection": {
        "slug": (_text(required=True, max_length=SLUG_MAX), True, None),
        "name": (_text(max_length=NAME_MAX), False, None),
        "description": (_text(), False, ""),
        "unit": (_text(), False, "document"),
        "scale": (_scale, True, None),
        "relevant_grade": (_integer(low=0, high=INT16_MAX), True, None),
        "guidelines": (_text(), False, ""),
        "pool_depth": (_integer(low=1, high=INT32_MAX), False, 10),
        "format_version": (_integer(low=1, high=INT16_MAX), False, 1),
        "holds_whole_corpus": (_optional(_boolean), False, None),
        "assessors_per_item": (_optional(_integer(low=1, high=INT16_MAX)), False, None),
        "resolution_policy": (_optional(_text(required=True, max_length=16)), False, None),
        "adjudicate_distance": (_optional(_integer(low=0, high=INT16_MAX)), False, None),
        "model_labels": (_optional(_text(max_length=100)), False, None),
        "pool_strategy": (_optional(_text(required=True, max_length=16)), False, None),
        "pool_floor": (_optional(_integer(low=0, high=INT32_MAX)), False, None),
    },
    "item": {
        "id": (_ID, True, None),
        "title": (_text(), False, ""),
        "text": (_text(), False, ""),
        "url": (_text(max_length=URL_MAX), False, ""),
        "metadata": (_obj, False, dict),
        "placeholder": (_boolean, False, False),
    },
    "query": {
        "id": (_ID, True, None),
        "text": (_text(required=True), True, None),
        "tags": (_tags, False, list),
        "status": (_text(), False, "unreviewed"),
        "evidence": (_optional(_evidence), False, None),
    },
    "judgment": {
        "query": (_ID, True, None),
        "item": (_ID, True, None),
        "grade": (_GRADE, True, None),
        "note": (_text(max_length=NOTE_MAX), False, ""),
        "reviewer": (_optional(_text(required=True)), False, None),
        "assessor": (_optional(_text(required=True, max_length=150)), False, None),
    },
    "unjudged": {
        "query": (_ID, True, None),
        "item": (_ID, True, None),
        "source": (_text(required=True, max_length=200), False, "import"),
        "rank": (_optional(_integer(low=1, high=INT32_MAX)), False, None),
    },
    "adjudication": {
        "query": (_ID, True, None),
        "item": (_ID, True, None),
        "status": (_text(required=True), False, "decided"),
        "grade": (_optional(_GRADE), False, None),
        "decided_by": (_optional(_text(required=True, max_length=150)), False, None),
        "decided_at": (_optional(_text(required=True, max_length=40)), False, None),
        "reason": (_text(max_length=300), False, ""),
    },
    "status": {
        "query": (_ID, True, None),
        "status": (_text(), True, None),
    },
    "run": {
        "name": (_text(required=True, max_length=SLUG_MAX), True, None),
        "description": (_text(), False, ""),
        "source_filename": (_text(max_length=500), False, ""),
        "source_sha256": (_text(max_length=64), False, ""),
        "source_format": (_text(max_length=8), False, ""),
        "order_rule": (_text(required=True, max_length=8), False, "score"),
        "dedup_policy": (_text(required=True, max_length=8), False, "error"),
        "duplicates_dropped": (_integer(low=0, high=INT32_MAX), False, 0),
        "stages": (_stages, True, None),
    },
    "ranking": {
        "run": (_text(required=True, max_length=SLUG_MAX), True, None),
        "stage": (_text(required=True, max_length=STAGE_MAX), True, None),
        "query": (_ID, True, None),
        "items": (_ids, True, None),
        "abstained": (_boolean, False, False),
    },
}


def _a(kind: str) -> str:
    return f"{'an' if kind[0] in 'aeiou' else 'a'} '{kind}'"


def _fields(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Check one decoded record against its spec; return its fields with defaults filled."""
    spec = _SPECS[kind]
    unknown = sorted(set(obj) - set(spec) - {"type"})
    if unknown:
        raise _Bad(
            f"unknown field(s) {', '.join(map(repr, unknown))} in {_a(kind)} record; "
            f"the fields are {', '.join(spec)}"
        )
    missing = [k for k, (_, required, _) in spec.items() if required and k not in obj]
    if missing:
        raise _Bad(f"{_a(kind).capitalize()} record needs {', '.join(map(repr, missing))}")
    out: dict[str, Any] = {}
    for key, (check, _, default) in spec.items():
        if key in obj:
            out[key] = check(key, obj[key])
        else:
            out[key] = default() if callable(default) else default
    if kind == "collection" and out["name"] is None:
        out["name"] = out["slug"]
    if kind == "item" and out["placeholder"] and (out["title"] or out["text"]):
        raise _Bad("a placeholder item has no title or text; drop one or the other")
    if kind == "collection" and out["format_version"] > BUNDLE_FORMAT:
        raise _Bad(
            f"bundle format {out['format_version']} is newer than this Verity reads (formats "
            f"1 to {BUNDLE_FORMAT}); import it with the Verity that wrote it, or upgrade"
        )
    if kind == "adjudication":
        _check_adjudication(out)
    return out


def _check_adjudication(f: dict[str, Any]) -> None:
    """An open task has no decision; a decided one has its grade, who and when."""
    if f["status"] == "open":
        given = [k for k in ("grade", "decided_by", "decided_at") if f[k] is not None]
        if given:
            raise _Bad(
                f"an open adjudication has no {', '.join(map(repr, given))}; drop them, or "
                'make it "status": "decided"'
            )
        return
    if f["status"] != "decided":
        raise _Bad(f"'status' {f['status']!r} must be 'open' or 'decided'")
    missing = [k for k in ("grade", "decided_at") if f[k] is None]
    if missing:
        raise _Bad(f"a decided adjudication needs {', '.join(map(repr, missing))}")
    try:
        when = datetime.fromisoformat(f["decided_at"])
    except ValueError:
        raise _Bad(
            f"'decided_at' {f['decided_at']!r} is not an ISO 8601 time; write it like "
            "2026-12-04T18:00:00+00:00"
        ) from None
    if when.tzinfo is None:
        raise _Bad("'decided_at' needs its UTC offset, e.g. 2026-12-04T18:00:00+00:00")


def _decode(text: str) -> dict[str, Any]:
    if not text.strip():
        raise _Bad("blank line; JSONL allows no blank lines, remove it")
    if text.startswith("#"):
        raise _Bad("comment line; JSONL allows no comments, remove it")
    try:
        obj = parse_json_line(text)
    except JsonLineError as e:
        raise _Bad(str(e)) from None
    if not isinstance(obj, dict):
        raise _Bad(f"expected a JSON object {{...}}, got {_json_type(obj)}")
    if "type" not in obj:
        raise _Bad(f'the record has no "type"; give one of {", ".join(_SPECS)}')
    return obj


_ROLES = {
    "bundle": (
        "collection",
        "item",
        "query",
        "judgment",
        "adjudication",
        "unjudged",
        "run",
        "ranking",
    ),
    "items": ("item",),
    "queries": ("query",),
    "judgments": ("judgment", "unjudged", "status"),
}
_WHERE_TYPE_BELONGS = {
    "collection": "a bundle's first line",
    "item": "a bundle or an --items file",
    "query": "a bundle or a --queries file",
    "judgment": "a bundle or a --judgments file",
    "unjudged": "a bundle or a --judgments file",
    "adjudication": "a bundle",
    "run": "a bundle",
    "ranking": "a bundle",
    "status": "a --judgments file",
}


def _parse_jsonl(data: bytes, name: str, role: str) -> tuple[Bundle, list[Problem]]:
    problems: list[Problem] = []
    bundle = Bundle()
    allowed = _ROLES[role]
    if _empty(data, name, problems, f"JSON Lines with {' / '.join(allowed)} records"):
        return bundle, problems
    dups = _Duplicates(problems)
    for number, text in _lines(data, name, problems):
        where = Where(name, number)
        try:
            obj = _decode(text)
            kind = obj["type"]
            if not isinstance(kind, str) or kind not in _SPECS:
                raise _Bad(
                    f"unknown record type {kind!r}; a {role} file holds {', '.join(allowed)}"
                )
            if kind not in allowed:
                raise _Bad(
                    f"{_a(kind).capitalize()} record does not belong in a {role} file; it goes in "
                    f"{_WHERE_TYPE_BELONGS[kind]}"
                )
            if role == "bundle" and number == 1 and kind != "collection":
                raise _Bad(
                    "the first line must be the collection record "
                    f'({{"type": "collection", "slug": ...}}), found {_a(kind)} record'
                )
            if kind == "collection" and number != 1:
                raise _Bad(
                    "a collection record belongs on the first line only; a bundle describes "
                    "one collection"
                )
            f = _fields(kind, obj)
        except _Bad as e:
            problems.append(Problem(where, str(e)))
            continue
        _add_record(bundle, kind, f, where, dups)
    line_one_reported = any(p.where.line == 1 for p in problems)
    if role == "bundle" and bundle.collection is None and not line_one_reported:
        problems.append(Problem(Where(name, 1), "the collection record is missing"))
    return bundle, problems


def _add_record(
    bundle: Bundle, kind: str, f: dict[str, Any], where: Where, dups: _Duplicates
) -> None:
    if kind == "collection":
        bundle.collection = CollectionRecord(where=where, **f)
    elif kind == "item":
        if dups.item(f["id"], where):
            bundle.items.append(ItemRecord(where=where, **f))
    elif kind == "query":
        if dups.query(f["id"], where):
            bundle.queries.append(QueryRecord(where=where, **f))
    elif kind == "judgment":
        record = JudgmentRecord(where=where, **f)
        if dups.pair(record.query, record.item, record.grade, where, record.assessor):
            bundle.judgments.append(record)
    elif kind == "unjudged":
        unjudged = UnjudgedRecord(where=where, **f)
        if dups.pair(unjudged.query, unjudged.item, UNJUDGED_GRADE, where):
            bundle.unjudged.append(unjudged)
    elif kind == "adjudication":
        if dups.adjudication(f["query"], f["item"], where):
            bundle.adjudications.append(AdjudicationRecord(where=where, **f))
    elif kind == "run":
        if dups.once("run", f["name"], where):
            bundle.runs.append(RunRecord(where=where, **f))
    elif kind == "ranking":
        key = f"{f['run']}' stage '{f['stage']}' query '{f['query']}"
        if dups.once("ranked list of run", key, where):
            bundle.rankings.append(RankingRecord(where=where, **f))
    elif kind == "status" and dups.status(f["query"], where):
        bundle.statuses.append(StatusRecord(where=where, **f))


def parse_bundle(data: bytes, name: str) -> tuple[Bundle, list[Problem]]:
    """A JSONL bundle: the collection record, then items, queries, judgments and
    assessments, adjudications, unjudged markers (docs/BUNDLES.md)."""
    return _parse_jsonl(data, name, "bundle")


def parse_items(data: bytes, name: str) -> tuple[Bundle, list[Problem]]:
    """A JSONL file of item records."""
    return _parse_jsonl(data, name, "items")


def parse_judgments(data: bytes, name: str) -> tuple[Bundle, list[Problem]]:
    """A JSONL file of judgment, unjudged and status records."""
    return _parse_jsonl(data, name, "judgments")


def parse_queries(data: bytes, name: str) -> tuple[Bundle, list[Problem]]:
    """Queries as JSONL query records, or as TREC topics (``qid<TAB>text``) otherwise."""
    if data.removeprefix(UTF8_BOM).lstrip().startswith(b"{"):
        return _parse_jsonl(data, name, "queries")
    return parse_topics(data, name)
