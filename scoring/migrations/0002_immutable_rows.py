"""On PostgreSQL, refuse UPDATE and DELETE of runs, mappings and evaluations from raw SQL.

Uses ``verity_refuse_change()`` created by ``judgments.0002_immutable_rows``.
"""

from django.db import migrations

TABLES = [
    "scoring_run",
    "scoring_runstage",
    "scoring_rankedlist",
    "scoring_unitmapping",
    "scoring_unitmappingentry",
    "scoring_evaluation",
    "scoring_evaluationquery",
]


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
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
    dependencies = [("scoring", "0001_initial"), ("judgments", "0002_immutable_rows")]

    operations = [migrations.RunPython(create_triggers, drop_triggers)]
