"""The versions holding a query block become a run ``[first_number, end_number)`` on the
block, instead of one ``SnapshotMember`` row per query per version.

A freeze kept the blocks of unchanged queries by writing a membership row for each: a
version after one regrade of a 10,000-query collection wrote 10,000 rows. A block is
held by a contiguous run of versions (it is replaced only when its query's content
changes, and ends when the query goes), so the run says the same: a freeze now writes
the k blocks that changed and sets ``end_number`` on the k blocks they replace.

The data: each block's run is its members' versions (``first_number`` the lowest,
``end_number`` one past the highest, null when the highest is the collection's latest
version); a block whose versions are not contiguous stops the migration (no freeze
writes one). A block held by no version (none is written so) gets the empty run
``[n, n)`` of its ``frozen_in`` version ``n``. Every version holds exactly the blocks
it held, so every hash and export is unchanged.

On PostgreSQL the block's immutability trigger now lets exactly one change through:
``end_number`` set once, from null, every other column unchanged. And a deleted query
is listed in ``UnfrozenChange`` by a trigger of its own (``verity_unfrozen_query_delete``),
so a freeze notices it without reading every query of the collection.
"""

from django.db import migrations, models
from django.db.models import F, Q

BLOCKS = "judgments_snapshotquery"
MEMBERS = "judgments_snapshotmember"
CHANGES = "judgments_unfrozenchange"

RUNS = (
    "SELECT m.block_id, MIN(s.number) AS first, MAX(s.number) AS last, COUNT(*) AS n "
    f"FROM {MEMBERS} m JOIN judgments_snapshot s ON s.id = m.snapshot_id GROUP BY m.block_id"
)

END_BLOCK = f"""
CREATE FUNCTION verity_end_block() RETURNS trigger AS $$
DECLARE
    kept {BLOCKS};
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.end_number IS NULL AND NEW.end_number IS NOT NULL THEN
        kept := NEW;
        kept.end_number := NULL;
        IF kept IS NOT DISTINCT FROM OLD THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION 'verity: rows of % are immutable but for end_number, set once (% refused)',
        TG_TABLE_NAME, TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
"""

QUERY_DELETE = "verity_unfrozen_query_delete"
_LIST_GONE = (
    f"INSERT INTO {CHANGES} (query_id) SELECT DISTINCT c.query_id FROM ({{select}}) c "
    f"WHERE NOT EXISTS (SELECT 1 FROM {CHANGES} u WHERE u.query_id = c.query_id)"
)


def _immutability(schema_editor, on: bool) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"ALTER TABLE {BLOCKS} {'ENABLE' if on else 'DISABLE'} TRIGGER {BLOCKS}_immutable",
            params=None,
        )


def members_to_runs(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM ({RUNS}) r WHERE r.last - r.first + 1 <> r.n")
        (broken,) = cursor.fetchone()
    if broken:
        raise RuntimeError(
            f"{broken} snapshot query blocks are held by versions that are not contiguous; "
            "a block held by runs of versions cannot be converted (no freeze writes one)"
        )
    _immutability(schema_editor, False)
    schema_editor.execute(
        f"WITH runs AS ({RUNS}) "
        f"UPDATE {BLOCKS} SET collection_id = x.collection_id, first_number = x.first, "
        "end_number = x.end_number FROM ("
        "SELECT b.id, f.collection_id, COALESCE(r.first, f.number) AS first, CASE "
        "WHEN r.block_id IS NULL THEN f.number "
        "WHEN r.last = (SELECT MAX(l.number) FROM judgments_snapshot l "
        "WHERE l.collection_id = f.collection_id) THEN NULL "
        "ELSE r.last + 1 END AS end_number "
        f"FROM {BLOCKS} b JOIN judgments_snapshot f ON f.id = b.frozen_in_id "
        f"LEFT JOIN runs r ON r.block_id = b.id) x WHERE x.id = {BLOCKS}.id",
        params=None,
    )
    _immutability(schema_editor, True)


def runs_to_members(apps, schema_editor):
    schema_editor.execute(
        f"INSERT INTO {MEMBERS} (snapshot_id, query_id, block_id) "
        f"SELECT s.id, b.query_id, b.id FROM {BLOCKS} b JOIN judgments_snapshot s "
        "ON s.collection_id = b.collection_id AND s.number >= b.first_number "
        "AND (b.end_number IS NULL OR s.number < b.end_number)",
        params=None,
    )
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE TRIGGER {MEMBERS}_immutable BEFORE UPDATE OR DELETE ON {MEMBERS} "
            "FOR EACH ROW EXECUTE FUNCTION verity_refuse_change();",
            params=None,
        )


def create_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(END_BLOCK, params=None)
        schema_editor.execute(f"DROP TRIGGER {BLOCKS}_immutable ON {BLOCKS};", params=None)
        schema_editor.execute(
            f"CREATE TRIGGER {BLOCKS}_immutable BEFORE UPDATE OR DELETE ON {BLOCKS} "
            "FOR EACH ROW EXECUTE FUNCTION verity_end_block();",
            params=None,
        )
        select = "SELECT id AS query_id FROM old_rows"
        schema_editor.execute(
            f"CREATE FUNCTION {QUERY_DELETE}() RETURNS trigger AS $$ BEGIN "
            f"{_LIST_GONE.format(select=select)}; RETURN NULL; END $$ LANGUAGE plpgsql",
            params=None,
        )
        schema_editor.execute(
            f"CREATE TRIGGER {QUERY_DELETE} AFTER DELETE ON judgments_query "
            f"REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
            f"EXECUTE FUNCTION {QUERY_DELETE}();",
            params=None,
        )
    elif vendor == "sqlite":
        select = "SELECT OLD.id AS query_id"
        schema_editor.execute(
            f"CREATE TRIGGER {QUERY_DELETE} AFTER DELETE ON judgments_query FOR EACH ROW "
            f"BEGIN {_LIST_GONE.format(select=select)}; END;",
            params=None,
        )


def drop_triggers(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(f"DROP TRIGGER {BLOCKS}_immutable ON {BLOCKS};", params=None)
        schema_editor.execute(
            f"CREATE TRIGGER {BLOCKS}_immutable BEFORE UPDATE OR DELETE ON {BLOCKS} "
            "FOR EACH ROW EXECUTE FUNCTION verity_refuse_change();",
            params=None,
        )
        schema_editor.execute("DROP FUNCTION verity_end_block();", params=None)
        schema_editor.execute(f"DROP TRIGGER {QUERY_DELETE} ON judgments_query;", params=None)
        schema_editor.execute(f"DROP FUNCTION {QUERY_DELETE}();", params=None)
    elif vendor == "sqlite":
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {QUERY_DELETE};", params=None)


class Migration(migrations.Migration):
    dependencies = [("judgments", "0022_pooling_strategies")]

    operations = [
        migrations.AddField(
            model_name="snapshotquery",
            name="collection",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=models.deletion.PROTECT,
                related_name="+",
                to="judgments.collection",
            ),
        ),
        migrations.AddField(
            model_name="snapshotquery",
            name="first_number",
            field=models.PositiveIntegerField(null=True),
        ),
        migrations.AddField(
            model_name="snapshotquery",
            name="end_number",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(members_to_runs, runs_to_members),
        migrations.AlterField(
            model_name="snapshotquery",
            name="collection",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=models.deletion.PROTECT,
                related_name="+",
                to="judgments.collection",
            ),
        ),
        migrations.AlterField(
            model_name="snapshotquery",
            name="first_number",
            field=models.PositiveIntegerField(),
        ),
        migrations.AddConstraint(
            model_name="snapshotquery",
            constraint=models.UniqueConstraint(
                condition=Q(end_number__isnull=True), fields=("query",), name="snapshotquery_held"
            ),
        ),
        migrations.AddConstraint(
            model_name="snapshotquery",
            constraint=models.CheckConstraint(
                condition=Q(end_number__isnull=True) | Q(end_number__gte=F("first_number")),
                name="snapshotquery_run",
            ),
        ),
        migrations.AddIndex(
            model_name="snapshotquery",
            index=models.Index(fields=["collection", "first_number"], name="snapshotquery_runs"),
        ),
        migrations.DeleteModel(name="SnapshotMember"),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
