"""Reports leaving the app as data: each is one ``export.report`` row in the audit log."""

from __future__ import annotations

from typing import Any

from audit.services import record
from judgments.models import Collection


def record_report_export(*, request: Any, collection: Collection, name: str, fmt: str) -> None:
    """One ``export.report`` row for a report, diagnosis or comparison sent as data
    (``name`` is its file name, ``fmt`` json or csv). It is written by a GET, as an access
    log is (RFC 9110 9.2.1: a safe method may log): the audit log is the one table a GET
    may append to, and only for an export. A HEAD sent none of the data: no row."""
    if request.method == "GET":
        record(
            "export.report",
            collection=collection,
            target=name,
            detail={"format": fmt},
            request=request,
        )
