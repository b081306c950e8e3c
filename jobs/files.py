"""A job's files: the input it was given (an uploaded run, a bundle) and the output it
makes (an export), kept in the ``jobs`` storage (``VERITY_JOB_DIR/files`` by default)
under the job's key.

An input stays until its job ends either way, so that a job whose worker died can be
started again from the same file; its output stays until the job row is deleted.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages
from django.utils.text import get_valid_filename

from .models import Job


def _storage() -> Any:
    return storages["jobs"]


def safe_name(name: str | None, default: str = "upload") -> str:
    """A file name fit for the storage, kept close to the client's: readers name the file
    in their line-numbered errors, and tell a JSON Lines run by its suffix."""
    try:
        return get_valid_filename(Path(name or default).name)
    except Exception:  # SuspiciousFileOperation for names that reduce to nothing
        return default


def store_input(job: Job, source: Any, name: str) -> str:
    """Keep ``source`` (an uploaded file or a path) as the job's input; return its name in
    the storage. A temporary upload on the same file system is moved, not copied."""
    target = f"inputs/{job.key}/{safe_name(name)}"
    if isinstance(source, str | Path):
        with open(source, "rb") as fh:
            return _storage().save(target, File(fh, name=Path(target).name))
    return _storage().save(target, source)


def has_input(job: Job) -> bool:
    name = job.params.get("input")
    return bool(name) and _storage().exists(name)


@contextmanager
def input_path(job: Job) -> Iterator[Path]:
    """The job's input as a local path (storage that keeps files elsewhere is copied to a
    temporary file, named like the original)."""
    name = job.params["input"]
    storage = _storage()
    try:
        yield Path(storage.path(name))
        return
    except NotImplementedError:
        pass
    with tempfile.TemporaryDirectory(
        prefix="verity-job-", dir=settings.FILE_UPLOAD_TEMP_DIR
    ) as folder:
        target = Path(folder) / Path(name).name
        with storage.open(name, "rb") as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        yield target


def _delete(name: str) -> None:
    """Delete a stored file, and its folder (``inputs/<job key>/``) once it is empty."""
    storage = _storage()
    storage.delete(name)
    try:
        folder = Path(storage.path(name)).parent
    except NotImplementedError:  # storage without folders
        return
    with contextlib.suppress(OSError):
        folder.rmdir()  # only an empty folder; another file in it keeps it


def move_input(source: Job, target: Job) -> str | None:
    """Hand ``source``'s input to ``target`` (a retry); return its new name."""
    name = source.params.get("input")
    if not name or not _storage().exists(name):
        return None
    with _storage().open(name, "rb") as fh:
        new = store_input(target, fh, Path(name).name)
    _delete(name)
    return new


def discard_input(job: Job) -> None:
    name = job.params.get("input")
    if name and _storage().exists(name):
        _delete(name)


def output_name(job: Job, name: str) -> str:
    return f"outputs/{job.key}/{safe_name(name)}"


@contextmanager
def writing_output(job: Job, name: str) -> Iterator[Any]:
    """A binary file to write the job's output into; stored under ``name`` only when the
    block ends without error (a killed job leaves no half-written output behind)."""
    with tempfile.NamedTemporaryFile(
        prefix="verity-out-", suffix=".part", dir=settings.FILE_UPLOAD_TEMP_DIR
    ) as tmp:
        yield tmp
        tmp.flush()
        tmp.seek(0)
        stored = _storage().save(output_name(job, name), File(tmp, name=safe_name(name)))
    job.result = {**job.result, "file": stored}


def discard_output(job: Job) -> None:
    """Delete what the job stored as its output: a job that does not finish (refused,
    timed out, cancelled, failed) keeps no file on disk, though no door would hand it out.
    """
    name = job.result.get("file") if isinstance(job.result, dict) else None
    if name and _storage().exists(name):
        _delete(name)
    if name:
        job.result = {k: v for k, v in job.result.items() if k != "file"}


def open_output(job: Job) -> Any:
    return _storage().open(job.result["file"], "rb")


def output_size(job: Job) -> int | None:
    name = job.result.get("file")
    return _storage().size(name) if name and _storage().exists(name) else None
