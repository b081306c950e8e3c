"""Locating the data in ``../shared`` (trec_eval's conformance files, TREC DL 2019).

The data is not copied into the repository. Tests that need it skip, saying why, when it
is absent, except under ``VERITY_REQUIRE_SHARED=1`` (set by ``.ci/run``), where a missing
folder fails the test instead of turning the conformance suite into a row of skips.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REQUIRE_SHARED_ENV = "VERITY_REQUIRE_SHARED"
REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    return Path(os.environ.get("VERITY_SHARED", REPO.parent / "shared"))


def need_shared(path: Path, what: str) -> Path:
    """``path`` when it exists; otherwise skip (or fail under VERITY_REQUIRE_SHARED=1)."""
    if path.exists():
        return path
    reason = f"{what} not found at {path}; set VERITY_SHARED to the folder holding it"
    if os.environ.get(REQUIRE_SHARED_ENV, "").lower() in {"1", "true", "yes", "on"}:
        pytest.fail(f"{reason}. {REQUIRE_SHARED_ENV}=1 forbids skipping it.", pytrace=False)
    pytest.skip(reason)
