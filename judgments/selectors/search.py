"""Searching a collection's items by their text, with each hit's state for one query.

PostgreSQL: full-text search (``websearch_to_tsquery`` over title and text, English
stemming), ranked by ``ts_rank``; the GIN index of migration 0008 covers the very
expression built here (``item_search_vector``). SQLite: the FTS5 table of the same
migration, every word of the search required, ranked by BM25 with the title weighing
double. An exact item id comes first either way, so a reviewer can paste one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector
from django.db import connection

from ..models import Collection, Item, Judgment, Query, ReviewTask
from .review import OPEN_TASK_STATUSES

FTS_TABLE = "judgments_item_fts"
SEARCH_CONFIG = "english"
MAX_HITS = 20
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class SearchHit:
    """One item found, and for the query searched from: its judgment (``None`` when
    unjudged) and its open review task (``None`` when no run or qrels queued it)."""

    item: Item
    judgment: Judgment | None
    task: ReviewTask | None
    id_match: bool = False

    @property
    def state(self) -> str:
        if self.judgment is not None:
            return "judged"
        return "queued" if self.task is not None else "unjudged"


def item_search_vector() -> SearchVector:
    """The searched document: title and text. Migration 0008 indexes this expression."""
    return SearchVector("title", "text", config=SEARCH_CONFIG)


def search_items(
    collection: Collection, text: str, *, query: Query | None = None, limit: int = MAX_HITS
) -> list[SearchHit]:
    """Up to ``limit`` items of the collection matching ``text``, best first; with
    ``query``, each hit carries that query's judgment and open task of the item."""
    text = text.strip()
    if not text:
        return []
    exact = Item.objects.filter(collection=collection, external_id=text).first()
    ids = [] if exact is None else [exact.pk]
    for pk in _ranked_ids(collection, text, limit):
        if pk not in ids:
            ids.append(pk)
    ids = ids[:limit]
    items = Item.objects.filter(collection=collection).in_bulk(ids)
    judgments: dict[int, Judgment] = {}
    tasks: dict[int, ReviewTask] = {}
    if query is not None:
        judgments = {
            j.item_id: j
            for j in Judgment.objects.filter(query=query, item_id__in=ids).select_related(
                "reviewer"
            )
        }
        tasks = {
            t.item_id: t
            for t in ReviewTask.objects.filter(
                query=query, item_id__in=ids, status__in=OPEN_TASK_STATUSES
            )
        }
    return [
        SearchHit(
            item=items[pk],
            judgment=judgments.get(pk),
            task=tasks.get(pk),
            id_match=exact is not None and pk == exact.pk,
        )
        for pk in ids
        if pk in items
    ]


def _ranked_ids(collection: Collection, text: str, limit: int) -> list[int]:
    if connection.vendor == "postgresql":
        found = SearchQuery(text, search_type="websearch", config=SEARCH_CONFIG)
        return list(
            Item.objects.filter(collection=collection)
            .alias(document=item_search_vector())
            .filter(document=found)
            .annotate(rank=SearchRank(item_search_vector(), found))
            .order_by("-rank", "external_id")
            .values_list("pk", flat=True)[:limit]
        )
    if connection.vendor == "sqlite":
        words = _WORD.findall(text)
        if not words:
            return []
        match = " ".join('"' + w.replace('"', '""') + '"' for w in words)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s "
                f"AND collection_id = %s ORDER BY bm25({FTS_TABLE}, 2.0, 1.0), rowid LIMIT %s",
                [match, collection.pk, limit],
            )
            return [row[0] for row in cursor.fetchall()]
    raise NotImplementedError(
        f"item search supports PostgreSQL and SQLite, not {connection.vendor}"
    )
