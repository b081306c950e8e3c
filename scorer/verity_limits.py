"""One place for the limits of what Verity stores: ids, names, notes, tags, integers, and
the JSON values a file line may hold.

Pure standard library (the scoring engine uses it too, without Django). Models size their
columns from these numbers, and the readers, serializers and forms refuse anything larger
with the same numbers in their messages, so a value that passes a check always fits its
column.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: External ids (queries, items, fine and coarse units), in UTF-8 bytes. Some corpora use
#: URLs as ids, which run well past 200 characters; 2,048 bytes also keeps a
#: (collection, id) key inside PostgreSQL's B-tree entry limit (about 2,700 bytes), which
#: a limit in characters would not (a character is up to 4 bytes).
ID_MAX = 2048
#: Reviewer notes, on every path (the review page, the API, imported judgments).
NOTE_MAX = 2000
#: Collection names; slugs and run names.
NAME_MAX = 200
SLUG_MAX = 100
#: Stage names of a multi-stage run.
STAGE_MAX = 100
#: One query tag.
TAG_MAX = 200
#: Item links.
URL_MAX = 2000
#: Column ranges: PostgreSQL's integer and smallint.
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT16_MAX = 2**15 - 1
#: Grades, on every path (qrels, JSON Lines, scales, forms, the API): stored as
#: PostgreSQL's smallint. -1 in qrels means pooled but unjudged; what a negative grade
#: means beyond that is the reader's business, the bound is the same everywhere.
GRADE_MAX = INT16_MAX
GRADE_MIN = -INT16_MAX
#: JSON nesting a line may hold: far beyond any real record, far below the recursion limit.
JSON_DEPTH_MAX = 64


def id_problem(value: str) -> str | None:
    """Why ``value`` cannot be an id, else ``None``: the one id rule of every reader (runs,
    qrels, bundles, mappings, documents), URL path and query parameter.

    An id is stored (no NUL, at most ``ID_MAX`` bytes) and written back to a TREC file
    and read again (no whitespace), and a reader sees what it compares: no control
    characters and no invisible ones (zero-width spaces, right-to-left overrides,
    anything ``str.isprintable`` refuses), which would make two ids that look the same.
    """
    if "\x00" in value:
        return "contains a NUL character, which cannot be stored; remove it"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > ID_MAX:
        return f"is {size:,} bytes long; ids have at most {ID_MAX:,} bytes"
    if not value.isprintable() or " " in value:
        bad = next(c for c in value if c == " " or not c.isprintable())
        return (
            f"contains whitespace or an invisible or control character (U+{ord(bad):04X}), "
            "which TREC files cannot carry; use an id without them"
        )
    return None


_GRADE_TEXT = re.compile(r"[+-]?[0-9]+")


def grade_problem(value: str | int) -> str | None:
    """Why ``value`` (a grade as written in a file, or already an integer) cannot be a
    grade, else ``None``. Checked where the grade is read, before anything is built from
    it: a grade of 10**20 once made a scale of 10**20 entries."""
    if isinstance(value, str):
        text = value.strip()
        if not _GRADE_TEXT.fullmatch(text):
            shown = text[:40] + ("…" if len(text) > 40 else "")
            return f"grade {shown!r} is not an integer; write a whole number"
        digits = text.lstrip("+-").lstrip("0")
        if len(digits) > 6:  # int() of a million digits is slow, and 6 are plenty
            text = text[:40] + ("…" if len(text) > 40 else "")
            return f"grade {text} is out of range; grades are between {GRADE_MIN} and {GRADE_MAX}"
        value = int(text)
    if not GRADE_MIN <= value <= GRADE_MAX:
        return f"grade {value} is out of range; grades are between {GRADE_MIN} and {GRADE_MAX}"
    return None


def parse_grade(text: str) -> int:
    """``text`` as a grade; ``ValueError`` saying why not (``grade_problem``)."""
    problem = grade_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return int(text)


class JsonLineError(ValueError):
    """A JSON line that cannot be read or stored; the message says why and how to fix it."""


def _refuse_constant(name: str) -> float:
    raise JsonLineError(f"{name} is not a JSON number; write a finite number or null")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonLineError(f"the number {text[:40]} is too large; write a finite number")
    return value


#: Digits an integer may have (Python's own limit is 4,300; no stored integer needs more).
INT_DIGITS_MAX = 100


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > INT_DIGITS_MAX:
        raise JsonLineError(
            f"an integer has {len(text.lstrip('-')):,} digits; at most {INT_DIGITS_MAX} are read"
        )
    return int(text)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonLineError(f"the key {key[:80]!r} appears twice in one object; keep one")
            seen.add(key)
    return result


_ESCAPE = re.compile(r"\\u")


def _check_strings(value: Any) -> None:
    """Depth, NUL and lone surrogates, walked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _check_text(node)
        elif isinstance(node, dict | list):
            if depth > JSON_DEPTH_MAX:
                raise JsonLineError(
                    f"values are nested more than {JSON_DEPTH_MAX} levels deep; flatten them"
                )
            children = node.items() if isinstance(node, dict) else ((None, v) for v in node)
            for key, child in children:
                if key is not None:
                    _check_text(key)
                stack.append((child, depth + 1))


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise JsonLineError(
            "a string holds \\u0000, a NUL character, which cannot be stored; remove it"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise JsonLineError(
            "a string holds a lone UTF-16 surrogate (e.g. \\ud800), which is not text; "
            "escape whole characters only"
        ) from None


def parse_json_line(text: str) -> Any:
    """Parse one line of JSON Lines into a value that can be stored as it is.

    Refused with ``JsonLineError``: invalid JSON, duplicate keys in one object, NaN and
    infinities, numbers too large, nesting deeper than ``JSON_DEPTH_MAX``, NUL and lone
    surrogates in strings. The deep checks run only where they can matter (an escape in
    the line, or more brackets than the depth limit), so plain lines cost one parse.
    """
    try:
        value = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_refuse_constant,
            parse_float=_finite,
            parse_int=_integer,
        )
    except JsonLineError:
        raise
    except json.JSONDecodeError as exc:
        raise JsonLineError(
            f"not valid JSON ({exc.msg} at column {exc.colno}); write one JSON object per line"
        ) from None
    except RecursionError:
        raise JsonLineError(
            f"values are nested more than {JSON_DEPTH_MAX} levels deep; flatten them"
        ) from None
    except ValueError as exc:  # an integer past Python's digit limit, among others
        raise JsonLineError(f"not readable JSON ({str(exc)[:120]})") from None
    if _ESCAPE.search(text) or text.count("[") + text.count("{") > JSON_DEPTH_MAX:
        _check_strings(value)
    return value
