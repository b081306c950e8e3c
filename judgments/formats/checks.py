"""The checks a file fails on its own, shared by the JSONL and TREC readers.

Lines that do not decode, fields of the wrong type or size, and duplicates within one
file; each becomes a ``Problem`` naming the file and line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from verity_limits import TAG_MAX, id_problem

from .records import MAX_SMALL_INT, UNJUDGED_GRADE, UTF8_BOM, Problem, Where


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
    """An external id: a non-empty string that passes ``verity_limits.id_problem``."""
    if not isinstance(value, str):
        hint = f'; write "{value}"' if isinstance(value, int) else ""
        raise _Bad(f"'{key}' must be a string id, got {_json_type(value)}{hint}")
    if not value:
        raise _Bad(f"'{key}' must not be empty")
    problem = id_problem(value)
    if problem is not None:
        shown = value[:40] + ("…" if len(value) > 40 else "")
        raise _Bad(f"'{key}' {shown!r} {problem}")
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
    if any(len(t) > TAG_MAX for t in value):
        raise _Bad(f"'{key}' holds a tag longer than {TAG_MAX} characters; shorten it")
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


class _Duplicates:
    """Within one file: each item id, query id and (query, item) pair appears once."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        self.items: dict[str, int] = {}
        self.queries: dict[str, int] = {}
        self.statuses: dict[str, int] = {}
        self.adjudications: dict[tuple[str, str], int] = {}
        self.others: dict[str, dict[str, int]] = {}
        self.pairs: dict[tuple[str, ...], tuple[int, int]] = {}

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

    def once(self, what: str, key: str, where: Where) -> bool:
        """Any other record kind whose ``key`` appears once (runs, ranked lists)."""
        return self._once(self.others.setdefault(what, {}), key, where, what)

    def adjudication(self, query: str, item: str, where: Where) -> bool:
        """One adjudication per pair (the task is one per pair)."""
        first = self.adjudications.setdefault((query, item), where.line or 0)
        if first == where.line:
            return True
        self.problems.append(
            Problem(
                where,
                f"duplicate adjudication for query '{query}' item '{item}' (first at line "
                f"{first}); keep one of them",
            )
        )
        return False

    def pair(
        self, query: str, item: str, grade: int, where: Where, assessor: str | None = None
    ) -> bool:
        """Once per (query, item), or per (query, item, assessor) for assessments."""
        line = where.line or 0
        key = (query, item) if assessor is None else (query, item, assessor)
        first_line, first_grade = self.pairs.setdefault(key, (line, grade))  # type: ignore[arg-type]
        if first_line == line:
            return True
        if first_grade == grade:
            what = "unjudged marker" if grade == UNJUDGED_GRADE else f"judgment (grade {grade})"
            message = (
                f"duplicate {what} for query '{query}' item '{item}'"
                + (f" by assessor '{assessor}'" if assessor else "")
                + f", same as line "
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
