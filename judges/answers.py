"""Reading a model's answer: the grade and rationale, or why there is none. Pure.

An answer that names no grade, names one off the collection's scale, or refuses, is a
failure with its reason; it never becomes a grade by guessing.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

_SCORE = re.compile(r"final\s+score\s*[:=]\s*\**\s*(-?\d+(?:\.\d+)?)", re.IGNORECASE)
_BARE = re.compile(r"^\s*(-?\d+)\s*$")
_RATIONALE = re.compile(r"rationale\s*[:=]\s*(.+)", re.IGNORECASE)
_REFUSAL = re.compile(
    r"\b(I can(?:no|')t|I am unable|I'm unable|I won't|I will not|cannot help|as an AI)\b",
    re.IGNORECASE,
)


#: Longest answer read for a grade: the prompt asks for two lines, and ``max_tokens``
#: bounds what a server may send; a longer text is not read (a grade at its end would
#: be a guess about which of its numbers is meant).
MAX_ANSWER_CHARS = 20_000


@dataclass(frozen=True)
class Reading:
    grade: int | None
    rationale: str = ""
    failure: str = ""


def read_answer(text: str, grades: Collection[int]) -> Reading:
    """The grade in ``text`` (``##final score: N``, or a bare integer) if it is on the
    scale ``grades``; otherwise a failure that says what was wrong."""
    if len(text) > MAX_ANSWER_CHARS:
        return Reading(
            None,
            "",
            f"the answer is {len(text)} characters long, more than {MAX_ANSWER_CHARS}; "
            "lower the judge's max_tokens",
        )
    rationale_match = _RATIONALE.search(text)
    rationale = rationale_match.group(1).strip()[:2000] if rationale_match else ""
    found = _SCORE.search(text) or _BARE.match(text)
    if found is None:
        if _REFUSAL.search(text):
            return Reading(None, rationale, f"refused: {_excerpt(text)}")
        if not text.strip():
            return Reading(None, rationale, "empty answer")
        return Reading(None, rationale, f"no grade in the answer: {_excerpt(text)}")
    raw = found.group(1)
    if "." in raw or int(raw) not in grades:
        scale = ", ".join(str(g) for g in sorted(grades))
        return Reading(None, rationale, f"grade {raw} is not on the scale ({scale})")
    return Reading(int(raw), rationale)


def _excerpt(text: str, size: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= size else flat[: size - 1] + "…")
