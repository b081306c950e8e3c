"""Verity's file formats: JSONL bundles, TREC qrels and TREC topics, read and written.

Pure functions, no database and no Django: bytes in, records plus line-numbered problems
out; records in, deterministic text out. A parser never stops at the first problem: it
reads the whole file and returns every problem it found, each naming the file, the line,
what is wrong and how to fix it.

The checks here are the ones a file fails on its own: encoding, syntax, field types,
duplicates within the file. Checks that need the collection (a grade on its scale, an id
it does not know, a stored judgment that disagrees) are made by
``services.import_collection_data``, which reports them with the same locations.

JSONL bundle, one object per line, the collection record first::

    {"type": "collection", "slug": ..., "name": ..., "description": ..., "unit": ...,
     "scale": [{"grade": 0, "name": ...}, ...], "relevant_grade": 1, "guidelines": ...,
     "pool_depth": 10}
    {"type": "item", "id": ..., "title": ..., "text": ..., "url": ..., "metadata": {},
     "placeholder": false}
    {"type": "query", "id": ..., "text": ..., "tags": [...], "status": "unreviewed",
     "evidence": [["a", "b"], ["c"]] or null}
    {"type": "judgment", "query": ..., "item": ..., "grade": 1, "note": ..., "reviewer": ...}
    {"type": "unjudged", "query": ..., "item": ..., "source": "qrels -1", "rank": null}

A ``--judgments`` file may also hold ``{"type": "status", "query": ..., "status": ...}``.
``dumps_bundle`` writes that format canonically: records sorted by id (codepoint order),
keys in the order above, ``ensure_ascii=False``, separators ``", "`` and ``": "``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_LISTED = 25
MAX_ID_LENGTH = 200  # Query.external_id and Item.external_id
MAX_SMALL_INT = 32767  # grades are stored as small integers
MAX_INT = 2**31 - 1
UTF8_BOM = b"\xef\xbb\xbf"
UNJUDGED_GRADE = -1
QRELS_UNJUDGED_SOURCE = "qrels -1"


# -- problems -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Where:
    """A place in the input: a file (or "command line") and a 1-based line number."""

    file: str
    line: int | None = None

    def __str__(self) -> str:
        return self.file if self.line is None else f"{self.file}, line {self.line}"


@dataclass(frozen=True)
class Problem:
    where: Where
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def describe_problems(problems: Sequence[Problem], *, limit: int = MAX_LISTED) -> str:
    """The refusal message: a count, then the first ``limit`` problems in file order."""
    files: dict[str, int] = {}
    for p in problems:
        files.setdefault(p.where.file, len(files))
    ordered = sorted(problems, key=lambda p: (files[p.where.file], p.where.line or 0))
    n = len(ordered)
    lines = [f"Nothing was imported: {n} problem{'' if n == 1 else 's'} in the input."]
    lines += [str(p) for p in ordered[:limit]]
    if n > limit:
        lines.append(f"… and {n - limit} more")
    return "\n".join(lines)


# -- records --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CollectionRecord:
    where: Where
    slug: str
    name: str
    scale: list[dict[str, Any]]
    relevant_grade: int
    unit: str = "document"
    description: str = ""
    guidelines: str = ""
    pool_depth: int = 10


@dataclass(frozen=True)
class ItemRecord:
    where: Where
    id: str
    title: str = ""
    text: str = ""
    url: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    placeholder: bool = False


@dataclass(frozen=True)
class QueryRecord:
    where: Where
    id: str
    text: str
    tags: list[str] = field(default_factory=list)
    status: str = "unreviewed"
    evidence: list[list[str]] | None = None


@dataclass(frozen=True)
class JudgmentRecord:
    where: Where
    query: str
    item: str
    grade: int
    note: str = ""
    reviewer: str | None = None


@dataclass(frozen=True)
class UnjudgedRecord:
    where: Where
    query: str
    item: str
    source: str = "import"
    rank: int | None = None


@dataclass(frozen=True)
class StatusRecord:
    where: Where
    query: str
    status: str


@dataclass
class Bundle:
    """Everything one import carries, or one export holds."""

    collection: CollectionRecord | None = None
    items: list[ItemRecord] = field(default_factory=list)
    queries: list[QueryRecord] = field(default_factory=list)
    judgments: list[JudgmentRecord] = field(default_factory=list)
    unjudged: list[UnjudgedRecord] = field(default_factory=list)
    statuses: list[StatusRecord] = field(default_factory=list)

    def absorb(self, other: Bundle) -> None:
        if other.collection is not None:
            self.collection = other.collection
        self.items += other.items
        self.queries += other.queries
        self.judgments += other.judgments
        self.unjudged += other.unjudged
        self.statuses += other.statuses


# -- lines ----------------------------------------------------------------------------------


def _lines(data: bytes, name: str, problems: list[Problem]) -> Iterator[tuple[int, str]]:
    """Yield (line number, text) for each line that decodes as UTF-8; report the others."""
    if data.startswith(UTF8_BOM):
        data = data[len(UTF8_BOM) :]
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    for number, raw in enumerate(pieces, 1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as e:
            problems.append(
                Problem(
                    Where(name, number),
                    f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at byte {e.start + 1} of "
                    "the line); save the file as UTF-8",
                )
            )


def _empty(data: bytes, name: str, problems: list[Problem], what: str) -> bool:
    if data.removeprefix(UTF8_BOM).strip():
        return False
    problems.append(Problem(Where(name, 1), f"the file is empty; it should hold {what}"))
    return True


# -- field checks for JSON records ----------------------------------------------------------


class _Bad(ValueError):
    """One field of one record is wrong; the message says how."""


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _no_nul(key: str, value: str) -> str:
    if "\x00" in value:
        raise _Bad(f"'{key}' contains a NUL character, which cannot be stored; remove it")
    return value


def _text(*, max_length: int | None = None, required: bool = False) -> Callable[[str, Any], Any]:
    def check(key: str, value: Any) -> str:
        if not isinstance(value, str):
            hint = f'; write "{value}"' if isinstance(value, int | float) else ""
            raise _Bad(f"'{key}' must be a string, got {_json_type(value)}{hint}")
        if required and not value.strip():
            raise _Bad(f"'{key}' must not be empty")
        if max_length is not None and len(value) > max_length:
            raise _Bad(f"'{key}' is {len(value)} characters long; at most {max_length} fit")
        return _no_nul(key, value)

    return check


def check_id(key: str, value: Any) -> str:
    """An external id: a non-empty string without whitespace, at most 200 characters."""
    if not isinstance(value, str):
        hint = f'; write "{value}"' if isinstance(value, int) else ""
        raise _Bad(f"'{key}' must be a string id, got {_json_type(value)}{hint}")
    if not value:
        raise _Bad(f"'{key}' must not be empty")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise _Bad(
            f"'{key}' {value!r} contains whitespace or control characters, which TREC files "
            "cannot carry; use an id without them"
        )
    if len(value) > MAX_ID_LENGTH:
        raise _Bad(f"'{key}' is {len(value)} characters long; ids have at most {MAX_ID_LENGTH}")
    return value


def _integer(*, low: int, high: int) -> Callable[[str, Any], int]:
    def check(key: str, value: Any) -> int:
        if type(value) is not int:
            hint = ""
            if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
                hint = f"; write {value.strip()} without quotes"
            elif isinstance(value, float) and value.is_integer():
                hint = f"; write {int(value)}"
            raise _Bad(f"'{key}' must be an integer, got {_json_type(value)} {value!r}{hint}")
        if not low <= value <= high:
            raise _Bad(f"'{key}' is {value}; it must be between {low} and {high}")
        return value

    return check


def _optional(check: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    return lambda key, value: None if value is None else check(key, value)


def _boolean(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _Bad(f"'{key}' must be true or false, got {_json_type(value)}")
    return value


def _obj(key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(f"'{key}' must be a JSON object, got {_json_type(value)}")
    return value


def _tags(key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value):
        raise _Bad(f'\'{key}\' must be a list of non-empty strings, e.g. ["faq", "billing"]')
    return [_no_nul(key, t) for t in value]


def _scale(key: str, value: Any) -> list[dict[str, Any]]:
    example = '[{"grade": 0, "name": "not relevant"}, {"grade": 1, "name": "relevant"}]'
    if not isinstance(value, list) or not value:
        raise _Bad(f"'{key}' must be a non-empty list of grades, e.g. {example}")
    for entry in value:
        if not isinstance(entry, dict) or set(entry) != {"grade", "name"}:
            raise _Bad(f'\'{key}\' entry {entry!r} must be {{"grade": N, "name": "..."}}')
        _integer(low=0, high=MAX_SMALL_INT)("grade", entry["grade"])
        _text(required=True)("name", entry["name"])
    return value


def _evidence(key: str, value: Any) -> list[list[str]]:
    shape = 'a list of AND-groups of item ids, e.g. [["a", "b"], ["c"]] for (a AND b) OR c'
    if not isinstance(value, list) or not value:
        raise _Bad(f"'{key}' must be {shape}, or null")
    for group in value:
        if not isinstance(group, list) or not group:
            raise _Bad(f"'{key}' group {group!r} must be a non-empty list; '{key}' is {shape}")
        for item in group:
            check_id(key, item)
    return value


_GRADE = _integer(low=-MAX_SMALL_INT, high=MAX_SMALL_INT)  # the scale check is the service's
_ID = check_id

# type → {key: (check, required, default)}; a callable default makes a fresh value.
_Spec = dict[str, tuple[Callable[[str, Any], Any], bool, Any]]
_SPECS: dict[str, _Spec] = {
    "collection": {
        "slug": (_text(required=True, max_length=100), True, None),
        "name": (_text(max_length=200), False, None),
        "description": (_text(), False, ""),
        "unit": (_text(), False, "document"),
        "scale": (_scale, True, None),
        "relevant_grade": (_integer(low=0, high=MAX_SMALL_INT), True, None),
        "guidelines": (_text(), False, ""),
        "pool_depth": (_integer(low=1, high=MAX_INT), False, 10),
    },
    "item": {
        "id": (_ID, True, None),
        "title": (_text(), False, ""),
        "text": (_text(), False, ""),
        "url": (_text(max_length=2000), False, ""),
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
        "note": (_text(), False, ""),
        "reviewer": (_optional(_text(required=True)), False, None),
    },
    "unjudged": {
        "query": (_ID, True, None),
        "item": (_ID, True, None),
        "source": (_text(required=True, max_length=200), False, "import"),
        "rank": (_optional(_integer(low=1, high=MAX_INT)), False, None),
    },
    "status": {
        "query": (_ID, True, None),
        "status": (_text(), True, None),
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
    return out


def _reject_constant(name: str) -> Any:
    raise _Bad(f"{name} is not a JSON number; write a finite number or null")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Bad(f"the key '{key}' appears twice in one object; keep one")
        out[key] = value
    return out


def _decode(text: str) -> dict[str, Any]:
    if not text.strip():
        raise _Bad("blank line; JSONL allows no blank lines, remove it")
    if text.startswith("#"):
        raise _Bad("comment line; JSONL allows no comments, remove it")
    try:
        obj = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise _Bad(
            f"not valid JSON ({e.msg} at column {e.colno}); each line must be one complete "
            "JSON object"
        ) from None
    if not isinstance(obj, dict):
        raise _Bad(f"expected a JSON object {{...}}, got {_json_type(obj)}")
    if "type" not in obj:
        raise _Bad(f'the record has no "type"; give one of {", ".join(_SPECS)}')
    return obj


# -- JSONL ----------------------------------------------------------------------------------

_ROLES = {
    "bundle": ("collection", "item", "query", "judgment", "unjudged"),
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
            if kind not in _SPECS:
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
        if dups.pair(record.query, record.item, record.grade, where):
            bundle.judgments.append(record)
    elif kind == "unjudged":
        unjudged = UnjudgedRecord(where=where, **f)
        if dups.pair(unjudged.query, unjudged.item, UNJUDGED_GRADE, where):
            bundle.unjudged.append(unjudged)
    elif kind == "status" and dups.status(f["query"], where):
        bundle.statuses.append(StatusRecord(where=where, **f))


class _Duplicates:
    """Within one file: each item id, query id and (query, item) pair appears once."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        self.items: dict[str, int] = {}
        self.queries: dict[str, int] = {}
        self.statuses: dict[str, int] = {}
        self.pairs: dict[tuple[str, str], tuple[int, int]] = {}

    def _once(self, seen: dict[str, int], key: str, where: Where, what: str) -> bool:
        first = seen.setdefault(key, where.line or 0)
        if first == where.line:
            return True
        self.problems.append(
            Problem(where, f"duplicate {what} '{key}' (first at line {first}); keep one of them")
        )
        return False

    def item(self, key: str, where: Where) -> bool:
        return self._once(self.items, key, where, "item id")

    def query(self, key: str, where: Where) -> bool:
        return self._once(self.queries, key, where, "query id")

    def status(self, key: str, where: Where) -> bool:
        return self._once(self.statuses, key, where, "status for query")

    def pair(self, query: str, item: str, grade: int, where: Where) -> bool:
        line = where.line or 0
        first_line, first_grade = self.pairs.setdefault((query, item), (line, grade))
        if first_line == line:
            return True
        if first_grade == grade:
            what = "unjudged marker" if grade == UNJUDGED_GRADE else f"judgment (grade {grade})"
            message = (
                f"duplicate {what} for query '{query}' item '{item}', same as line "
                f"{first_line}; remove this line"
            )
        else:

            def says(g: int) -> str:
                return "unjudged" if g == UNJUDGED_GRADE else f"grade {g}"

            message = (
                f"query '{query}' item '{item}' appears twice: {says(grade)} here, "
                f"{says(first_grade)} at line {first_line}; keep the one you mean"
            )
        self.problems.append(Problem(where, message))
        return False


def parse_bundle(data: bytes, name: str) -> tuple[Bundle, list[Problem]]:
    """A JSONL bundle: the collection record, then items, queries, judgments, unjudged."""
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


# -- TREC -----------------------------------------------------------------------------------


def _trec_lines(data: bytes, name: str, problems: list[Problem]) -> Iterator[tuple[Where, str]]:
    """Data lines of a TREC file: '#' at the start of a line makes a comment; blanks skip."""
    for number, text in _lines(data, name, problems):
        if text.startswith("#") or not text.strip():
            continue
        yield Where(name, number), text


def _trec_id(key: str, value: str, where: Where, problems: list[Problem]) -> bool:
    try:
        check_id(key, value)
    except _Bad as e:
        problems.append(Problem(where, str(e)))
        return False
    return True


def parse_topics(data: bytes, name: str) -> tuple[Bundle, list[Problem]]:
    """TREC topics: ``qid<TAB>text`` per line (text may hold further tabs)."""
    problems: list[Problem] = []
    bundle = Bundle()
    if _empty(data, name, problems, "topics, one 'qid<TAB>text' per line"):
        return bundle, problems
    dups = _Duplicates(problems)
    for where, text in _trec_lines(data, name, problems):
        qid, tab, query_text = text.partition("\t")
        qid, query_text = qid.strip(), query_text.strip()
        if not tab:
            problems.append(
                Problem(
                    where, "expected 'qid<TAB>text', found no tab; separate id and text by a tab"
                )
            )
            continue
        if not query_text:
            problems.append(Problem(where, f"query '{qid}' has no text; add it after the tab"))
            continue
        if "\x00" in query_text:
            problems.append(Problem(where, "the text contains a NUL character; remove it"))
            continue
        if _trec_id("qid", qid, where, problems) and dups.query(qid, where):
            bundle.queries.append(QueryRecord(where=where, id=qid, text=query_text))
    if not bundle.queries and not problems:
        problems.append(Problem(Where(name, 1), "no topics found, only comments or blank lines"))
    return bundle, problems


_INTEGER = re.compile(r"[+-]?[0-9]+")


def parse_qrels(data: bytes, name: str) -> tuple[Bundle, list[Problem]]:
    """TREC qrels ``qid 0 docid grade``: whitespace-separated, the second column ignored.

    Grade -1 means pooled but unjudged: it becomes an unjudged record (a review task) with
    source ``qrels -1``. A line starting with '#' is a comment; '#' elsewhere is data.
    """
    problems: list[Problem] = []
    bundle = Bundle()
    if _empty(data, name, problems, "TREC qrels lines 'qid 0 docid grade'"):
        return bundle, problems
    dups = _Duplicates(problems)
    for where, text in _trec_lines(data, name, problems):
        fields = text.split()
        if len(fields) != 4:
            problems.append(
                Problem(
                    where,
                    f"expected 4 fields 'qid 0 docid grade', found {len(fields)}; separate "
                    "them by spaces or tabs",
                )
            )
            continue
        qid, _, docid, raw_grade = fields
        if not _INTEGER.fullmatch(raw_grade):
            problems.append(
                Problem(
                    where,
                    f"grade '{raw_grade}' is not an integer; use a grade on the collection's "
                    "scale, or -1 for pooled but unjudged",
                )
            )
            continue
        grade = int(raw_grade)
        if grade < UNJUDGED_GRADE:
            problems.append(
                Problem(
                    where,
                    f"grade {grade} is below -1; use a grade on the collection's scale, or -1 "
                    "for pooled but unjudged",
                )
            )
            continue
        if not (
            _trec_id("qid", qid, where, problems) and _trec_id("docid", docid, where, problems)
        ):
            continue
        if not dups.pair(qid, docid, grade, where):
            continue
        if grade == UNJUDGED_GRADE:
            bundle.unjudged.append(
                UnjudgedRecord(where=where, query=qid, item=docid, source=QRELS_UNJUDGED_SOURCE)
            )
        else:
            bundle.judgments.append(JudgmentRecord(where=where, query=qid, item=docid, grade=grade))
    if not bundle.judgments and not bundle.unjudged and not problems:
        problems.append(
            Problem(Where(name, 1), "no qrels lines found, only comments or blank lines")
        )
    return bundle, problems


def parse_scale_option(text: str) -> list[dict[str, Any]]:
    """``"0:not relevant,1:relevant"`` → scale entries; raises ValueError saying how to fix."""
    scale = []
    for part in text.split(","):
        grade, colon, grade_name = part.partition(":")
        if not colon or not _INTEGER.fullmatch(grade.strip()) or not grade_name.strip():
            raise ValueError(
                f"scale entry {part.strip()!r} must be GRADE:NAME, e.g. "
                '"0:not relevant,1:relevant,2:highly relevant"'
            )
        scale.append({"grade": int(grade), "name": grade_name.strip()})
    return scale


# -- writers --------------------------------------------------------------------------------


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
