"""Exports leave a trace: who took which labels out, and when (the audit log)."""

from __future__ import annotations

from typing import Any

from audit.services import record

from ..models import Collection


def record_export(
    *,
    action: str,
    by: Any,
    collection: Collection,
    target: str,
    detail: dict[str, Any],
    request: Any = None,
) -> None:
    """One ``export.qrels`` or ``export.bundle`` row: ``target`` names what was exported
    (``v3``, ``live``), ``detail`` how (format, with or without unjudged lines, one
    assessor). Written when the download is asked for (the POST that streams the file
    or starts its job), in that request's transaction; fetching a finished job's file
    writes nothing."""
    if action not in ("export.qrels", "export.bundle"):
        raise ValueError(f"not an export action: {action!r}")
    record(
        action,
        actor=by if getattr(by, "is_authenticated", False) else None,
        collection=collection,
        target=target,
        detail=detail,
        request=request,
    )
