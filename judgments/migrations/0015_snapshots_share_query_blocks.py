"""Snapshots share what did not change: per-query blocks held by versions.

Before: every version copied every row (``SnapshotQuery``/``Judgment``/``Unjudged``/
``Assessment`` keyed by snapshot). After: a ``SnapshotQuery`` row is a query *block*,
written once by the version that first froze that content (``frozen_in``, the old
``snapshot`` column), with its rows keyed by the block; ``SnapshotMember`` says which
versions hold which blocks. Existing versions keep exactly their rows: each old
``SnapshotQuery`` becomes a block held by its own version only, so every hash and export
is unchanged. Their ``query_line`` stays null (no rendered bytes), so the next freeze
renders every query again once, from the live labels, as it always did.

``UnfrozenChange`` is filled by triggers on every table the canonical form is made of
(``TRIGGERS`` below, on SQLite and PostgreSQL alike): the next freeze renders only those
queries again. The freeze checks these triggers are all there and renders everything when
one is missing (a table rebuilt by a later SQLite migration drops its triggers).
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import migrations, models

BLOCK_ROWS = [
    "judgments_snapshotjudgment",
    "judgments_snapshotunjudged",
    "judgments_snapshotassessment",
]
CHANGES = "judgments_unfrozenchange"

# Each table the canonical form is made of, and its column that names the query.
QUERY_TABLES = {
    "judgments_judgment": "query_id",
    "judgments_reviewtask": "query_id",
    "judgments_assessment": "query_id",
    "judgments_evidencecondition": "query_id",
    "judgments_query": "id",
}
EVENTS = {"INSERT": ["new_rows"], "UPDATE": ["new_rows", "old_rows"], "DELETE": ["old_rows"]}
SQLITE_ROWS = {"new_rows": "NEW", "old_rows": "OLD"}


def _insert_missing(select: str) -> str:
    """Add the query ids ``select`` yields (column ``query_id``) that are not listed yet."""
    return (
        f"INSERT INTO {CHANGES} (query_id) SELECT DISTINCT c.query_id FROM ({select}) c "
        f"WHERE c.query_id IS NOT NULL AND NOT EXISTS "
        f"(SELECT 1 FROM {CHANGES} u WHERE u.query_id = c.query_id)"
    )


def _function(name: str, select: str) -> str:
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger AS $$ BEGIN "
        f"{_insert_missing(select)}; RETURN NULL; END $$ LANGUAGE plpgsql"
    )


def _item_queries(item: str) -> str:
    """Queries whose rows name the item ``item`` (an id expression)."""
    return " UNION ".join(
        f"SELECT query_id FROM {table} WHERE item_id = {item}"
        for table in ("judgments_judgment", "judgments_reviewtask", "judgments_assessment")
    )


def trigger_sql(vendor: str, user_table: str, username: str) -> list[tuple[str, str, list[str]]]:
    """(trigger name, table, CREATE statements) for ``vendor``."""
    out = []
    for table, column in QUERY_TABLES.items():
        short = table.removeprefix("judgments_")
        # A deleted query leaves its blocks by itself: the freeze drops blocks of queries
        # that are gone.
        events = {k: v for k, v in EVENTS.items() if k != "DELETE"} if short == "query" else EVENTS
        for event, sides in events.items():
            name = f"verity_unfrozen_{short}_{event.lower()}"
            if vendor == "postgresql":
                select = " UNION ALL ".join(f"SELECT {column} AS query_id FROM {s}" for s in sides)
                refs = " ".join(
                    f"{'NEW' if s == 'new_rows' else 'OLD'} TABLE AS {s}" for s in sides
                )
                sql = [
                    _function(name, select),
                    f"CREATE TRIGGER {name} AFTER {event} ON {table} REFERENCING {refs} "
                    f"FOR EACH STATEMENT EXECUTE FUNCTION {name}();",
                ]
            else:
                select = " UNION ALL ".join(
                    f"SELECT {SQLITE_ROWS[s]}.{column} AS query_id" for s in sides
                )
                sql = [
                    f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW BEGIN "
                    f"{_insert_missing(select)}; END;"
                ]
            out.append((name, table, sql))
    # A renamed item or user changes the lines that name it.
    renames = [
        ("item", "judgments_item", "external_id", _item_queries),
        (
            "assessor",
            user_table,
            username,
            lambda user: f"SELECT query_id FROM judgments_assessment WHERE assessor_id = {user}",
        ),
    ]
    for short, table, column, queries in renames:
        name = f"verity_unfrozen_{short}_rename"
        if vendor == "postgresql":
            select = (
                f"SELECT q.query_id FROM new_rows n JOIN old_rows o ON o.id = n.id, "
                f"LATERAL ({queries('n.id')}) q WHERE n.{column} IS DISTINCT FROM o.{column}"
            )
            sql = [
                _function(name, select),
                f"CREATE TRIGGER {name} AFTER UPDATE ON {table} "
                "REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {name}();",
            ]
        else:
            sql = [
                f"CREATE TRIGGER {name} AFTER UPDATE OF {column} ON {table} FOR EACH ROW "
                f"WHEN NEW.{column} IS NOT OLD.{column} BEGIN "
                f"{_insert_missing(queries('NEW.id'))}; END;"
            ]
        out.append((name, table, sql))
    return out


def _user(apps):
    user = apps.get_model(settings.AUTH_USER_MODEL)
    username = get_user_model().USERNAME_FIELD  # historical models lack it
    return user._meta.db_table, user._meta.get_field(username).column


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor not in ("postgresql", "sqlite"):
        return
    for _name, _table, statements in trigger_sql(vendor, *_user(apps)):
        for sql in statements:
            schema_editor.execute(sql, params=None)
    if vendor == "postgresql":  # the membership rows are frozen like the rest
        schema_editor.execute(
            "CREATE TRIGGER judgments_snapshotmember_immutable BEFORE UPDATE OR DELETE ON "
            "judgments_snapshotmember FOR EACH ROW EXECUTE FUNCTION verity_refuse_change();",
            params=None,
        )


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor not in ("postgresql", "sqlite"):
        return
    for name, table, _sql in trigger_sql(vendor, *_user(apps)):
        if vendor == "postgresql":
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name} ON {table};", params=None)
            schema_editor.execute(f"DROP FUNCTION IF EXISTS {name}();", params=None)
        else:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name};", params=None)
    if vendor == "postgresql":
        schema_editor.execute(
            "DROP TRIGGER IF EXISTS judgments_snapshotmember_immutable ON judgments_snapshotmember;",
            params=None,
        )


def _immutability(schema_editor, on: bool):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in BLOCK_ROWS:
        schema_editor.execute(
            f"ALTER TABLE {table} {'ENABLE' if on else 'DISABLE'} TRIGGER {table}_immutable",
            params=None,
        )


def rows_to_blocks(apps, schema_editor):
    """Each old (snapshot, query) row becomes a block held by that snapshot alone."""
    _immutability(schema_editor, False)
    for table in BLOCK_ROWS:
        if schema_editor.connection.vendor == "postgresql":  # a join, not a probe per row
            sql = (
                f"UPDATE {table} SET block_id = b.id FROM judgments_snapshotquery b "
                f"WHERE b.frozen_in_id = {table}.snapshot_id AND b.query_id = {table}.query_id"
            )
        else:
            sql = (
                f"UPDATE {table} SET block_id = (SELECT b.id FROM judgments_snapshotquery b "
                f"WHERE b.frozen_in_id = {table}.snapshot_id AND b.query_id = {table}.query_id)"
            )
        schema_editor.execute(sql, params=None)
    _immutability(schema_editor, True)
    schema_editor.execute(
        "INSERT INTO judgments_snapshotmember (snapshot_id, query_id, block_id) "
        "SELECT frozen_in_id, query_id, id FROM judgments_snapshotquery",
        params=None,
    )


def blocks_to_rows(apps, schema_editor):
    _immutability(schema_editor, False)
    for table in BLOCK_ROWS:
        schema_editor.execute(
            f"UPDATE {table} SET snapshot_id = (SELECT b.frozen_in_id FROM "
            f"judgments_snapshotquery b WHERE b.id = {table}.block_id)",
            params=None,
        )
    _immutability(schema_editor, True)


def _row_constraint(model, fields):
    return migrations.AddConstraint(
        model_name=model,
        constraint=models.UniqueConstraint(fields=fields, name=f"{model}_unique"),
    )


def _block_field(null):
    return models.ForeignKey(
        db_constraint=False,
        db_index=False,
        null=null,
        on_delete=models.deletion.PROTECT,
        related_name="+",
        to="judgments.snapshotquery",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("judgments", "0014_model_labels_policy_and_label_source"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        # The old per-version query rows become blocks.
        migrations.RemoveConstraint(model_name="snapshotquery", name="snapshotquery_unique"),
        migrations.RenameField(
            model_name="snapshotquery", old_name="snapshot", new_name="frozen_in"
        ),
        migrations.AlterField(
            model_name="snapshotquery",
            name="frozen_in",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=models.deletion.PROTECT,
                related_name="+",
                to="judgments.snapshot",
            ),
        ),
        _row_constraint("snapshotquery", ["frozen_in", "query"]),
        *[
            migrations.AddField(
                model_name="snapshotquery", name=name, field=models.PositiveIntegerField(default=0)
            )
            for name in (
                "n_judgments",
                "n_model_labels",
                "n_unjudged",
                "n_assessments",
                "n_unresolved",
            )
        ],
        migrations.AddField(
            model_name="snapshotquery", name="query_line", field=models.BinaryField(null=True)
        ),
        *[
            migrations.AddField(
                model_name="snapshotquery", name=name, field=models.BinaryField(default=b"")
            )
            for name in (
                "judgment_lines",
                "model_lines",
                "assessment_lines",
                "unjudged_lines",
                "unresolved_lines",
            )
        ],
        migrations.CreateModel(
            name="SnapshotMember",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "block",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=models.deletion.PROTECT,
                        related_name="members",
                        to="judgments.snapshotquery",
                    ),
                ),
                (
                    "query",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=models.deletion.PROTECT,
                        related_name="+",
                        to="judgments.query",
                    ),
                ),
                (
                    "snapshot",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=models.deletion.PROTECT,
                        related_name="+",
                        to="judgments.snapshot",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("snapshot", "query"), name="snapshotmember_unique"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="UnfrozenChange",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("query_id", models.BigIntegerField(db_index=True)),
            ],
        ),
        # Rows move from their version to their block.
        *[
            migrations.AddField(model_name=model, name="block", field=_block_field(True))
            for model in ("snapshotjudgment", "snapshotunjudged", "snapshotassessment")
        ],
        migrations.RunPython(rows_to_blocks, blocks_to_rows),
        *[
            migrations.RemoveConstraint(model_name=model, name=f"{model}_unique")
            for model in ("snapshotjudgment", "snapshotunjudged", "snapshotassessment")
        ],
        *[
            migrations.RemoveField(model_name=model, name="snapshot")
            for model in ("snapshotjudgment", "snapshotunjudged", "snapshotassessment")
        ],
        *[
            migrations.AlterField(model_name=model, name="block", field=_block_field(False))
            for model in ("snapshotjudgment", "snapshotunjudged", "snapshotassessment")
        ],
        _row_constraint("snapshotjudgment", ["block", "item"]),
        _row_constraint("snapshotunjudged", ["block", "item"]),
        _row_constraint("snapshotassessment", ["block", "item", "assessor"]),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
