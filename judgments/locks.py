"""Row locks, taken in one place and in one order: collection, then query, then judgment.

Every service that changes judgments or query statuses locks the query row first, so
that cross-row invariants (a ``relevant`` query keeps at least one relevant judgment)
are checked and changed by one transaction at a time per query. ``select_for_update``
is a no-op on SQLite, where IMMEDIATE transactions serialise writers instead.
"""

from __future__ import annotations

from .models import Collection, Query


def lock_collection(collection_id: int) -> Collection:
    return Collection.objects.select_for_update().get(pk=collection_id)


def lock_query(query_id: int) -> Query:
    return Query.objects.select_for_update().select_related("collection").get(pk=query_id)
