"""Row locks, taken in one place and in one order: collection, then query.

Every service that changes labels (judgments, statuses, evidence, review tasks) first
takes a *shared* lock on the collection row, then an exclusive lock on the query row.
Writers of one collection never wait for each other on the shared lock; the query lock
serialises changes to one query, so cross-row invariants (a ``relevant`` query keeps a
relevant judgment) are checked and changed by one transaction at a time.

``freeze_snapshot`` takes the collection row *exclusively*: it waits for writers in
flight to commit and holds new ones back, so the snapshot reads one consistent state.

On SQLite these are no-ops: IMMEDIATE transactions already serialise all writers.
"""

from __future__ import annotations

from django.db import connection

from .models import Collection, Query


def share_collection(collection_id: int) -> None:
    """Hold the collection against a concurrent freeze until this transaction ends."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT 1 FROM {Collection._meta.db_table} WHERE id = %s FOR SHARE",
                [collection_id],
            )


def lock_collection(collection_id: int) -> Collection:
    """Exclusive: no label of this collection changes until this transaction ends."""
    return Collection.objects.select_for_update().get(pk=collection_id)


def lock_query(query_id: int) -> Query:
    if connection.vendor == "postgresql":
        # The collection's shared lock by way of the query: one statement, not a read of
        # the query's collection id first.
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT 1 FROM {Collection._meta.db_table} c JOIN {Query._meta.db_table} q "
                "ON q.collection_id = c.id WHERE q.id = %s FOR SHARE OF c",
                [query_id],
            )
    # of=("self",): lock the query row only, never the joined collection row.
    return (
        Query.objects.select_for_update(of=("self",)).select_related("collection").get(pk=query_id)
    )
