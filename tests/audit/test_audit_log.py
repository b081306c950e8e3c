"""The audit log is append-only: the ORM refuses edits, PostgreSQL refuses them in SQL too,
and retention is the one delete."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import prune, record

pytestmark = pytest.mark.django_db


def test_a_row_names_its_actor_and_collection_by_value(django_user_model):
    alice = django_user_model.objects.create_user("alice")
    event = record("member.role", actor=alice, target="bob", before="reviewer", after="admin")

    assert (event.actor_id, event.actor_name, event.action) == (alice.pk, "alice", "member.role")
    assert (event.before, event.after, event.target) == ("reviewer", "admin", "bob")
    alice.delete()
    event.refresh_from_db()
    assert event.actor_name == "alice"  # the log outlives the account


def test_the_orm_refuses_edits_and_deletes():
    event = record("login.failed", target="mallory")
    event.action = "login"
    with pytest.raises(TypeError, match="append-only"):
        event.save()
    with pytest.raises(TypeError, match="append-only"):
        event.delete()
    with pytest.raises(TypeError, match="append-only"):
        AuditEvent.objects.update(action="x")
    with pytest.raises(TypeError, match="append-only"):
        AuditEvent.objects.all().delete()
    assert AuditEvent.objects.get().action == "login.failed"


@pytest.mark.postgres
@pytest.mark.parametrize(
    "sql", ["UPDATE audit_auditevent SET action = 'x'", "DELETE FROM audit_auditevent"]
)
def test_postgresql_refuses_raw_sql_edits(sql):
    record("login.failed", target="mallory")
    with (
        pytest.raises(IntegrityError, match="audit log is append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql)
    assert AuditEvent.objects.get().action == "login.failed"


def test_retention_deletes_only_rows_older_than_its_days(settings):
    old = record("login", target="old")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ALTER TABLE audit_auditevent DISABLE TRIGGER USER")
        cursor.execute(
            "UPDATE audit_auditevent SET at = %s WHERE id = %s",
            [timezone.now() - timedelta(days=40), old.pk],
        )
        if connection.vendor == "postgresql":
            cursor.execute("ALTER TABLE audit_auditevent ENABLE TRIGGER USER")
    record("login", target="new")

    settings.VERITY_AUDIT_RETENTION_DAYS = 0
    assert prune() == 0  # 0 keeps everything
    assert prune(days=30) == 1
    assert list(AuditEvent.objects.values_list("target", flat=True)) == ["new"]
