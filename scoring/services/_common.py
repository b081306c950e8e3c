"""Small pieces shared by the scoring service modules."""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser

User = AbstractBaseUser
BATCH = 1000


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class ReadWhole(Exception):
    """A run file cannot be read a piece at a time (a piece refused, a query in two
    pieces, an unknown query to refuse): read it whole, which names the file and its
    lines in any refusal (``run_lists``, ``runs``)."""
