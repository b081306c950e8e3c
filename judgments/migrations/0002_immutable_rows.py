"""On PostgreSQL, refuse UPDATE and DELETE of history and snapshot rows even from raw SQL.

The ORM refuses them already (``ImmutableModel``); these triggers close the back door.
TRUNCATE is left alone: it is how test databases are flushed, not how data is edited.
"""

from django.db import migrations

TABLES = [
    "judgments_judgmentchange",
    "judgments_querystatuschange",
    "judgments_snapshot",
    "judgments_snapshotquery",
    "judgments_snapshotjudgment",
    "judgments_snapshotunjudged",
]

FUNCTION = """
CREATE OR REPLACE FUNCTION verity_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'verity: rows of % are immutable (% refused)', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
"""


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(FUNCTION, params=None)
    for table in TABLES:
        schema_editor.execute(
            f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION verity_refuse_change();"
        )


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable ON {table};")


class Migration(migrations.Migration):
    dependencies = [("judgments", "0001_initial")]

    operations = [migrations.RunPython(create_triggers, drop_triggers)]
