"""Full-text search over items: a GIN index on PostgreSQL, an FTS5 table on SQLite.

The two are vendor-specific, so neither is in the model state: each is created here only
on its own database, and a later migration that rebuilds the item table on SQLite cannot
carry a PostgreSQL index along. On PostgreSQL the index covers the expression that
``judgments.selectors.search`` queries, and the database keeps it up to date; on SQLite
the services that write items keep ``judgments_item_fts`` in step
(``judgments.services.search_index``). The expressions are copied here, as migrations
must not import the app.
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import migrations

INDEX_NAME = "item_search_gin"
FTS_TABLE = "judgments_item_fts"


def create(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    Item = apps.get_model("judgments", "Item")
    if vendor == "postgresql":
        index = GinIndex(SearchVector("title", "text", config="english"), name=INDEX_NAME)
        schema_editor.add_index(Item, index)
    elif vendor == "sqlite":
        schema_editor.execute(
            f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5("
            "title, text, collection_id UNINDEXED, tokenize = 'porter unicode61')"
        )
        schema_editor.execute(
            f"INSERT INTO {FTS_TABLE} (rowid, title, text, collection_id) "
            f"SELECT id, title, text, collection_id FROM {Item._meta.db_table}"
        )


def drop(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX_NAME}")
    elif vendor == "sqlite":
        schema_editor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")


class Migration(migrations.Migration):
    dependencies = [
        ("judgments", "0007_whole_corpus_setting_and_search_source"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
