"""Base classes for rows that are written once and never updated or deleted."""

from __future__ import annotations

from django.db import models


class ImmutableQuerySet(models.QuerySet):
    def update(self, **kwargs):  # type: ignore[no-untyped-def]
        raise TypeError(f"{self.model.__name__} rows are {self.model.immutable_reason}")

    def delete(self):  # type: ignore[no-untyped-def]
        raise TypeError(f"{self.model.__name__} rows are {self.model.immutable_reason}")


class ImmutableModel(models.Model):
    """Rows inserted once, inside the service that owns them, and never updated or deleted.

    Their user references are ``PROTECT``: a user who wrote history or froze a version is
    deactivated, never deleted (``SET_NULL`` would rewrite frozen rows).

    The ORM refuses here; on PostgreSQL, triggers (see the ``immutable_rows`` migration)
    refuse UPDATE and DELETE from raw SQL as well.
    """

    immutable_reason = "immutable"
    objects = ImmutableQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not self._state.adding:
            raise TypeError(f"{type(self).__name__} rows are {self.immutable_reason}")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise TypeError(f"{type(self).__name__} rows are {self.immutable_reason}")


class AppendOnlyModel(ImmutableModel):
    """History rows: written once inside the service that made the change, never edited."""

    immutable_reason = "append-only history"

    class Meta:
        abstract = True


class FrozenModel(ImmutableModel):
    """Rows of a snapshot, run or evaluation: a frozen version never changes.

    A snapshot's rows reference queries and items without database-level foreign keys
    and with one index (the unique one): freezing copies a million rows, and per-row FK
    checks and extra indexes tripled its time. The ORM still PROTECTs the referenced rows.
    """

    immutable_reason = "frozen: a snapshot, run or evaluation never changes"

    class Meta:
        abstract = True
