"""Unit mappings: store a fine → coarse id map as a new version unless it is unchanged."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.db import transaction

import verity_eval as engine
from judgments.models import Collection

from ..models import UnitMapping, UnitMappingEntry
from ._common import User
from .errors import RunImportError


@transaction.atomic
def import_unit_mapping(
    *,
    collection: Collection,
    path: Path,
    from_unit: str = "chunk",
    to_unit: str = "document",
    note: str = "",
    by: User | None = None,
) -> tuple[UnitMapping, bool]:
    """Store a fine → coarse id map (``fine<TAB>coarse`` lines) as version n+1.

    A map whose content equals the latest version's is not stored again: that version is
    returned with ``False``. The content hash covers the sorted pairs and the units.
    """
    try:
        pairs = engine.read_mapping(path)
    except engine.EngineInputError as exc:
        raise RunImportError(f"{path.name}: the mapping was refused.", exc.errors) from None
    digest = hashlib.sha256()
    digest.update(json.dumps([from_unit, to_unit]).encode())
    for fine in sorted(pairs):
        digest.update(json.dumps([fine, pairs[fine]], ensure_ascii=False).encode() + b"\n")
    content_hash = digest.hexdigest()
    latest = UnitMapping.objects.filter(collection=collection).order_by("-number").first()
    if latest is not None and latest.content_hash == content_hash:
        return latest, False
    mapping = UnitMapping.objects.create(
        collection=collection,
        number=(latest.number + 1) if latest else 1,
        content_hash=content_hash,
        from_unit=from_unit,
        to_unit=to_unit,
        note=note,
        n_entries=len(pairs),
        created_by=by,
    )
    UnitMappingEntry.objects.bulk_create(
        (UnitMappingEntry(mapping=mapping, fine_id=f, coarse_id=c) for f, c in pairs.items()),
        batch_size=5000,
    )
    return mapping, True
