"""Keeping the SQLite full-text index of items in step with the items.

On PostgreSQL the search index is a GIN index over an expression of the item's columns,
which the database maintains itself: nothing to do. On SQLite it is the FTS5 table
``judgments_item_fts`` (rowid = item pk), written here by the services that create or
fill in items (imports, placeholder fill-in, the admin's item form), inside their own
transaction. No signals: a write that bypasses the services is not indexed (the
migration that creates the table indexes every item there was).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection

from ..models import Item

FTS_TABLE = "judgments_item_fts"
_BATCH = 500  # rows per statement: under SQLite's 999 host-parameter limit once doubled


def index_items(items: Iterable[Item]) -> int:
    """(Re)index these items' title and text for search; returns how many. Call it inside
    the transaction that wrote them, after the write (the items need their pk)."""
    if connection.vendor != "sqlite":
        return 0
    rows = [(i.pk, i.title or "", i.text or "", i.collection_id) for i in items]
    for start in range(0, len(rows), _BATCH):
        _replace(rows[start : start + _BATCH])
    return len(rows)


def _replace(rows: Sequence[tuple[int, str, str, int]]) -> None:
    marks = ", ".join(["%s"] * len(rows))
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {FTS_TABLE} WHERE rowid IN ({marks})", [r[0] for r in rows])
        cursor.executemany(
            f"INSERT INTO {FTS_TABLE} (rowid, title, text, collection_id) VALUES (%s, %s, %s, %s)",
            rows,
        )
