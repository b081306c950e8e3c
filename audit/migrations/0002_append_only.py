"""On PostgreSQL, refuse UPDATE and DELETE of audit rows even from raw SQL.

The one DELETE allowed is retention (``audit.services.prune``), which sets
``verity.audit_prune`` for its own transaction first. TRUNCATE (how test databases are
flushed) is left alone.
"""

from django.db import migrations

FUNCTION = """
CREATE OR REPLACE FUNCTION verity_audit_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('verity.audit_prune', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'verity: the audit log is append-only (% refused)', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
"""


def create_trigger(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(FUNCTION, params=None)
    schema_editor.execute(
        "CREATE TRIGGER audit_auditevent_append_only BEFORE UPDATE OR DELETE "
        "ON audit_auditevent FOR EACH ROW EXECUTE FUNCTION verity_audit_append_only();"
    )


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP TRIGGER IF EXISTS audit_auditevent_append_only ON audit_auditevent;")


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunPython(create_trigger, drop_trigger)]
