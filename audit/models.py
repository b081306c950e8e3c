"""The audit log: who did what, when, to which collection, with the state before and after.

Rows are append-only: the ORM refuses updates and deletes here, and on PostgreSQL a trigger
(migration 0001) refuses them from raw SQL too. The one exception is retention: ``prune``
deletes rows older than ``VERITY_AUDIT_RETENTION_DAYS`` inside a transaction that sets
``verity.audit_prune``, which the trigger checks.

The log names its actor and collection by value (id and name) as well as by id, without
foreign keys: it outlives deleted users and collections, and the app at the bottom of the
layers (everyone records into it) depends on nothing above it.
"""

from __future__ import annotations

from django.db import models


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs):  # type: ignore[no-untyped-def]
        raise TypeError("AuditEvent rows are append-only")

    def delete(self):  # type: ignore[no-untyped-def]
        raise TypeError("AuditEvent rows are append-only (retention uses audit.services.prune)")


class AuditEvent(models.Model):
    at = models.DateTimeField(db_index=True)
    action = models.CharField(max_length=64, db_index=True)
    actor_id = models.IntegerField(null=True, blank=True, db_index=True)
    actor_name = models.CharField(max_length=150, blank=True, help_text="'' for the system.")
    collection_id = models.IntegerField(null=True, blank=True, db_index=True)
    collection_slug = models.CharField(max_length=100, blank=True)
    target = models.CharField(
        max_length=300, blank=True, help_text="What was acted on, e.g. a username or 'v3'."
    )
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    detail = models.JSONField(default=dict, blank=True)
    address = models.GenericIPAddressField(null=True, blank=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["collection_id", "-at"], name="audit_by_collection")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor_name or 'system'} {self.action}"

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not self._state.adding:
            raise TypeError("AuditEvent rows are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise TypeError("AuditEvent rows are append-only")
