"""Sweeping the upload folder (``FILE_UPLOAD_TEMP_DIR``, ``var/uploads`` by default).

Every upload in flight, and every temporary copy a job makes, lives there. A process
killed mid-upload (gunicorn's timeout sends SIGKILL, which no ``finally`` survives) leaves
its file behind; each is about as large as the upload, so they must not pile up. What is
older than ``VERITY_UPLOAD_STALE_SECONDS`` (no upload or import takes that long: gunicorn
stops a request after 30 s, and jobs copy their input out of this folder) is removed when
the web or worker process starts, and by ``manage.py sweep_uploads``.
"""

from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Swept:
    removed: int
    bytes: int
    kept: int


def _size(path: Path) -> int:
    if path.is_dir() and not path.is_symlink():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.lstat().st_size


def sweep_uploads(*, older_than: float | None = None, now: float | None = None) -> Swept:
    """Remove entries of the upload folder last modified more than ``older_than`` seconds
    ago (``VERITY_UPLOAD_STALE_SECONDS`` by default); keep younger ones, which may be
    uploads in progress. Never raises for a file that vanished meanwhile."""
    folder = Path(settings.FILE_UPLOAD_TEMP_DIR)
    age = settings.VERITY_UPLOAD_STALE_SECONDS if older_than is None else older_than
    cutoff = (time.time() if now is None else now) - age
    removed = size = kept = 0
    if not folder.is_dir():
        return Swept(0, 0, 0)
    for entry in folder.iterdir():
        try:
            if entry.lstat().st_mtime > cutoff:
                kept += 1
                continue
            entry_size = _size(entry)
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except FileNotFoundError:  # another process swept or finished it
            continue
        removed += 1
        size += entry_size
    if removed:
        log.info("swept %d stale upload(s), %d bytes, from %s", removed, size, folder)
    return Swept(removed, size, kept)
