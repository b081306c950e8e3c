"""How several assessors' grades for one (query, item) pair become its resolved label.

Pure: grades in, a grade (or ``NEEDS_ADJUDICATION``) out; no Django. The policies, with
``grades`` the pair's assessments in the order they arrived and ``distance`` the
collection's ``adjudicate_distance`` (a grade spread is ``max(grades) - min(grades)``):

``single``
    the first assessment's grade (with one assessor per item: today's behaviour; with
    more, the later assessments are kept for agreement only).
``majority``
    the most common grade when it occurs strictly more often than every other grade;
    a tie for the most common goes to adjudication.
``median``
    the *lower* median: the grade at position ``(n - 1) // 2`` of the sorted grades
    (grades 1, 2 give 1; 0, 2, 3 give 2). Never adjudication.
``min-of-agreeing``
    the lowest grade when the spread is at most ``distance``, else adjudication
    (Quepid keeps the lowest rating; here only while the assessors roughly agree).
``adjudicate``
    the lower median when the spread is at most ``distance`` (with ``distance`` 0: only
    a unanimous grade), else adjudication: every disagreement beyond the distance is
    decided by a person.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Final

SINGLE: Final = "single"
MAJORITY: Final = "majority"
MEDIAN: Final = "median"
MIN_OF_AGREEING: Final = "min-of-agreeing"
ADJUDICATE: Final = "adjudicate"
POLICIES: Final = (SINGLE, MAJORITY, MEDIAN, MIN_OF_AGREEING, ADJUDICATE)


class _NeedsAdjudication:
    """The one value meaning "a person must decide"; never equal to a grade."""

    _instance: _NeedsAdjudication | None = None

    def __new__(cls) -> _NeedsAdjudication:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NEEDS_ADJUDICATION"


NEEDS_ADJUDICATION: Final = _NeedsAdjudication()


def lower_median(grades: Sequence[int]) -> int:
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]


def resolve(policy: str, grades: Sequence[int], *, distance: int = 1) -> int | _NeedsAdjudication:
    """The resolved grade of one pair under ``policy``, or ``NEEDS_ADJUDICATION``.

    ``grades`` must be non-empty (a pair is resolved once it has its N assessments);
    ``distance`` must be ≥ 0. Unknown policies and bad input raise ``ValueError``.
    """
    if policy not in POLICIES:
        raise ValueError(f"resolution policy {policy!r} must be one of {', '.join(POLICIES)}")
    if not grades:
        raise ValueError("a pair with no assessment cannot be resolved")
    if type(distance) is not int or distance < 0:
        raise ValueError(f"adjudicate distance {distance!r} must be an integer ≥ 0")
    spread = max(grades) - min(grades)
    if policy == SINGLE:
        return grades[0]
    if policy == MAJORITY:
        (top, n_top), *rest = Counter(grades).most_common()
        if rest and rest[0][1] == n_top:
            return NEEDS_ADJUDICATION
        return top
    if policy == MEDIAN:
        return lower_median(grades)
    if spread > distance:
        return NEEDS_ADJUDICATION
    return min(grades) if policy == MIN_OF_AGREEING else lower_median(grades)
