"""File uploads: streamed to disk in chunks, bounded in size, never held in memory.

An upload view sets :class:`LimitedTemporaryFileUploadHandler` as the request's only
upload handler before anything reads the body; Django's multipart parser then writes
each file to a temporary file 64 KiB at a time. A declared ``Content-Length`` over
``VERITY_MAX_UPLOAD_BYTES`` is refused before one byte is read, and a body that grows
past it while streaming is refused at that chunk (both 413, JSON).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import TemporaryFileUploadHandler
from django.utils.text import get_valid_filename
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request

from .errors import PayloadTooLarge


def max_upload_bytes() -> int:
    return int(getattr(settings, "VERITY_MAX_UPLOAD_BYTES", 2 * 1024**3))


def too_large(limit: int, declared: int | None = None) -> PayloadTooLarge:
    size = f" ({declared} bytes)" if declared is not None else ""
    return PayloadTooLarge(
        f"The upload{size} is larger than this server accepts: at most {limit} bytes "
        "(VERITY_MAX_UPLOAD_BYTES). Split the run by query into several runs, or ask the "
        "administrators to raise the limit."
    )


class LimitedTemporaryFileUploadHandler(TemporaryFileUploadHandler):
    """Django's temporary-file handler with a cap on the whole request body."""

    def __init__(self, request: Any = None, *, limit: int | None = None) -> None:
        super().__init__(request)
        self.limit = max_upload_bytes() if limit is None else limit
        self.received = 0

    def handle_raw_input(
        self,
        input_data: Any,
        META: Any,
        content_length: int,
        boundary: Any,
        encoding: str | None = None,
    ) -> None:
        if content_length and content_length > self.limit:
            raise too_large(self.limit, content_length)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        self.received += len(raw_data)
        if self.received > self.limit:
            self.upload_interrupted()  # close and remove the partial temporary file
            raise too_large(self.limit)
        super().receive_data_chunk(raw_data, start)


def stream_uploads_to_disk(request: Any) -> None:
    """Make ``request`` (Django's) stream its files through the size-limited handler.

    Call it before anything reads the body (a view's ``initialize_request``).
    """
    request.upload_handlers = [LimitedTemporaryFileUploadHandler(request)]


@contextmanager
def staged_upload(upload: UploadedFile) -> Iterator[Path]:
    """The uploaded file as a path named like the client's file, in a private directory
    removed on exit.

    The name matters: readers name the file in their line-numbered errors, and tell a
    JSON Lines run by its suffix. The temporary file is hard-linked, not copied; where
    that fails (another file system) it is copied in 1 MiB chunks.
    """
    try:
        name = get_valid_filename(Path(upload.name or "upload").name)
    except SuspiciousFileOperation:
        name = "upload"
    source = getattr(upload, "temporary_file_path", None)
    base = os.path.dirname(source()) if source else settings.FILE_UPLOAD_TEMP_DIR
    with tempfile.TemporaryDirectory(prefix="verity-upload-", dir=base) as folder:
        target = Path(folder) / name
        if source is not None:
            try:
                os.link(source(), target)
            except OSError:
                with open(source(), "rb") as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        else:
            with target.open("wb") as dst:
                for chunk in upload.chunks():
                    dst.write(chunk)
        yield target


class StreamedUploads:
    """Upload views: multipart bodies, files streamed to disk with a size limit."""

    parser_classes = [MultiPartParser]

    def initialize_request(self, request: Any, *args: Any, **kwargs: Any) -> Request:
        # Before DRF (or the CSRF check) reads the body: afterwards it is too late.
        stream_uploads_to_disk(request)
        return super().initialize_request(request, *args, **kwargs)  # type: ignore[misc]
