"""One upload limit on the pages too: ``VERITY_MAX_UPLOAD_BYTES``.

The API refuses a larger body with 413 (``judgments.api.uploads``). A page form answers
with a form error instead: ``UploadLimitMiddleware`` (before the CSRF check, which reads
the body) streams a page's multipart upload to disk through ``PageUploadHandler``, which
stops storing a file once the request passes the limit and hands the form a stand-in of
the size received; every ``forms.FileField`` validates with ``within_upload_limit`` and
says the size and the limit. The other form fields are parsed as usual.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from django import forms
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import TemporaryFileUploadHandler
from django.http import HttpRequest, HttpResponse

from .api.uploads import max_upload_bytes


def too_large_message(size: int | None, limit: int) -> str:
    said = f" is {size:,} bytes;" if size is not None else " is too large:"
    return (
        f"This file{said} this server accepts uploads of at most {limit:,} bytes "
        "(VERITY_MAX_UPLOAD_BYTES). Nothing was stored. Split the file into several, or ask "
        "the administrators to raise the limit."
    )


class RefusedUpload(UploadedFile):
    """What a page form gets for a file the limit refused: its name and the size the
    request had reached, no content (nothing of it was kept)."""

    refused = True

    def __init__(self, name: str, size: int, content_type: str | None = None) -> None:
        super().__init__(io.BytesIO(), name=name, content_type=content_type, size=size)


class PageUploadHandler(TemporaryFileUploadHandler):
    """Files stream to a temporary file 64 KiB at a time; once the whole request has
    passed the limit, the file being received is dropped (its temporary file removed),
    the rest of its bytes are read and discarded, and the form gets a ``RefusedUpload``."""

    def __init__(self, request: Any = None, *, limit: int | None = None) -> None:
        super().__init__(request)
        self.limit = max_upload_bytes() if limit is None else limit
        self.received = 0
        self.over = False

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        self.over = False
        super().new_file(*args, **kwargs)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.received += len(raw_data)
        if self.over:
            return None
        if self.received > self.limit:
            self.over = True
            self.upload_interrupted()  # close and remove the partial temporary file
            return None
        return super().receive_data_chunk(raw_data, start)

    def file_complete(self, file_size: int) -> Any:
        if self.over:
            return RefusedUpload(self.file_name, max(file_size, self.received), self.content_type)
        return super().file_complete(file_size)


class UploadLimitMiddleware:
    """Sets a page request's upload handler before anything reads the body (the CSRF
    check does). API views set their own (413 over the limit: ``StreamedUploads``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.content_type == "multipart/form-data" and not request.path.startswith("/api/"):
            request.upload_handlers = [PageUploadHandler(request)]
        return self.get_response(request)


def within_upload_limit(upload: Any) -> None:
    """The validator of every page form's file field."""
    limit = max_upload_bytes()
    if getattr(upload, "refused", False) or (upload.size or 0) > limit:
        raise forms.ValidationError(too_large_message(upload.size, limit), code="too_large")
