"""The resolution policies, table-driven; expected values worked out by hand beside each row."""

from __future__ import annotations

import pytest

from judgments.resolution import NEEDS_ADJUDICATION, POLICIES, resolve

NA = NEEDS_ADJUDICATION

CASES = [
    # policy, grades (arrival order), distance, expected
    ("single", [2], 1, 2),
    ("single", [3, 0], 1, 3),  # the first assessment
    ("majority", [1, 1, 3], 1, 1),  # 2 of 3
    ("majority", [1, 3], 1, NA),  # a 1-1 tie
    ("majority", [2, 2, 0, 0, 1], 1, NA),  # 2-2 tie for the most common
    ("majority", [2, 2, 2, 0, 0], 1, 2),
    ("median", [1, 2], 1, 1),  # lower median of 1, 2
    ("median", [0, 3, 2], 1, 2),  # sorted 0 2 3
    ("median", [3, 0, 3, 1], 1, 1),  # sorted 0 1 3 3: position (4-1)//2 = 1
    ("min-of-agreeing", [2, 3], 1, 2),  # spread 1 <= 1: the lowest
    ("min-of-agreeing", [1, 3], 1, NA),  # spread 2 > 1
    ("min-of-agreeing", [1, 3], 2, 1),
    ("adjudicate", [2, 2], 0, 2),  # unanimous
    ("adjudicate", [2, 3], 0, NA),  # any disagreement with distance 0
    ("adjudicate", [3, 2, 3], 1, 3),  # spread 1 <= 1: lower median of 2 3 3
    ("adjudicate", [0, 3], 1, NA),
]


@pytest.mark.parametrize(
    ("policy", "grades", "distance", "expected"),
    CASES,
    ids=[f"{p}-{'-'.join(map(str, g))}-d{d}" for p, g, d, _ in CASES],
)
def test_resolve(policy, grades, distance, expected):
    got = resolve(policy, grades, distance=distance)
    assert got is expected if expected is NA else (got is not NA and got == expected)


@pytest.mark.parametrize(
    ("policy", "grades", "distance", "message"),
    [
        ("vote", [1], 1, "must be one of"),
        ("median", [], 1, "no assessment"),
        ("adjudicate", [1, 2], -1, "distance"),
    ],
)
def test_resolve_refuses_bad_input(policy, grades, distance, message):
    with pytest.raises(ValueError, match=message):
        resolve(policy, grades, distance=distance)


def test_the_policies_are_the_documented_five():
    assert POLICIES == ("single", "majority", "median", "min-of-agreeing", "adjudicate")


def test_resolution_and_agreement_import_no_django():
    import subprocess
    import sys

    code = (
        "import sys, judgments.resolution, judgments.agreement; "
        "assert 'django' not in sys.modules, 'django imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
