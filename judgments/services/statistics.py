"""Planner statistics after bulk writes.

A table that received most of its rows in one import has no statistics until
autovacuum's next pass (up to ``autovacuum_naptime`` later, or never where autovacuum is
off): PostgreSQL then plans with guesses, and a task claim took 120 to 136 ms on a
never-analysed database against 13 ms after ``ANALYZE`` (issue 23, item 14). So a bulk
import analyses the tables it filled, once its transaction has committed.
"""

from __future__ import annotations

from django.db import connection, models, transaction

#: Fewer rows than this leave the statistics to autovacuum: ANALYZE samples up to 30,000
#: rows of each table whatever was written, which would dwarf a small import.
ANALYZE_MIN_ROWS = 10_000


def analyze_after_commit(*tables: type[models.Model], rows: int) -> bool:
    """On PostgreSQL, when ``rows`` rows were written, run ``ANALYZE`` on ``tables`` after
    the current transaction commits (never inside it: the import's locks would be held
    longer). Returns whether it was scheduled."""
    if connection.vendor != "postgresql" or rows < ANALYZE_MIN_ROWS:
        return False
    names = ", ".join(connection.ops.quote_name(model._meta.db_table) for model in tables)

    def analyze() -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {names}")

    transaction.on_commit(analyze)
    return True
