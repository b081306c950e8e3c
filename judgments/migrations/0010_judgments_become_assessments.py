"""Every existing judgment becomes its reviewer's assessment (``import`` when it has no
reviewer) and stays the pair's resolved label; the history and snapshot rows of
assessments get the immutability triggers of 0002 on PostgreSQL.

Set-based (INSERT … SELECT), so a million judgments copy in seconds. Snapshots are not
touched: their canonical form and hash do not depend on assessments while a collection
has one assessor per item.
"""

from django.db import migrations

IMMUTABLE = ["judgments_assessmentchange", "judgments_snapshotassessment"]


def copy_judgments(apps, schema_editor):
    judgment = apps.get_model("judgments", "Judgment")._meta.db_table
    query = apps.get_model("judgments", "Query")._meta.db_table
    assessment = apps.get_model("judgments", "Assessment")._meta.db_table
    schema_editor.execute(
        f"INSERT INTO {assessment} (collection_id, query_id, item_id, assessor_id, "
        "assessor_name, grade, note, version, created_at, updated_at) "
        "SELECT q.collection_id, j.query_id, j.item_id, j.reviewer_id, "
        "CASE WHEN j.reviewer_id IS NULL THEN 'import' ELSE '' END, "
        f"j.grade, j.note, 1, j.created_at, j.updated_at FROM {judgment} j "
        f"JOIN {query} q ON q.id = j.query_id",
        params=None,
    )


def remove_copies(apps, schema_editor):
    apps.get_model("judgments", "Assessment").objects.all().delete()


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in IMMUTABLE:
        schema_editor.execute(
            f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION verity_refuse_change();"
        )


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in IMMUTABLE:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable ON {table};")


class Migration(migrations.Migration):
    dependencies = [("judgments", "0009_several_assessors_per_item")]

    operations = [
        migrations.RunPython(copy_judgments, remove_copies),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
