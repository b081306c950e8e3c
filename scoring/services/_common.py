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
