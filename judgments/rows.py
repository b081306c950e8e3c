"""Model instances from raw rows, for the few hot statements written as SQL (issue 29).

Building and compiling a queryset costs a request more CPU than the database spends on
it: the reviewer's claim compiled three or four querysets, and every API request one for
its token and one for its collection. Those statements are written once per process
instead: as SQL from the models' own table and column names (``Columns``), or compiled
once from the ORM with stand-in values and filled in per call (``CompiledSQL``), so the
ORM stays the one statement of what they select.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model, QuerySet

_Converter = Callable[[Any, Any, Any], Any]


class Columns:
    """One model's concrete columns in a SELECT list under a table alias, and the
    instance back from its slice of a row: the values pass through the converters the
    ORM applies (SQLite's text datetimes and integer booleans, JSON), then
    ``Model.from_db``, as a queryset would build it."""

    def __init__(self, model: type[Model], alias: str) -> None:
        self.model = model
        self.alias = alias
        self.fields = list(model._meta.concrete_fields)
        self.attnames = [f.attname for f in self.fields]
        self.width = len(self.fields)
        self._pk_at = self.fields.index(model._meta.pk)
        self._converters: weakref.WeakKeyDictionary[Any, list[tuple[int, _Converter, Any]]] = (
            weakref.WeakKeyDictionary()
        )

    def sql(self) -> str:
        """The SELECT list: every concrete column, qualified by the alias, in field order."""
        qn = connection.ops.quote_name
        return ", ".join(f"{qn(self.alias)}.{qn(f.column)}" for f in self.fields)

    def build(self, row: Sequence[Any], start: int = 0) -> Any:
        """The instance from ``row[start:start + width]``; ``None`` when its primary key
        is NULL (a LEFT JOIN that found nothing)."""
        values = list(row[start : start + self.width])
        if values[self._pk_at] is None:
            return None
        wrapper = _wrapper()
        converters = self._converters.get(wrapper)
        if converters is None:
            converters = []
            for i, field in enumerate(self.fields):
                col = field.get_col(self.alias)
                for conv in _converters_of(col, wrapper):
                    converters.append((i, conv, col))
            self._converters[wrapper] = converters
        for i, conv, col in converters:
            values[i] = conv(values[i], col, wrapper)
        return self.model.from_db(wrapper.alias, self.attnames, values)


def _wrapper() -> Any:
    """This thread's connection object (``django.db.connection`` is a proxy to it): the
    converters are kept per connection, as its ``ops`` are."""
    return connections[DEFAULT_DB_ALIAS]


def _converters_of(expression: Any, wrapper: Any) -> list[_Converter]:
    return [
        *wrapper.ops.get_db_converters(expression),
        *expression.get_db_converters(wrapper),
    ]


Template = list[tuple[str | None, Any]]


def compiled(queryset: QuerySet[Any], stand_ins: dict[str, Any]) -> tuple[str, Template] | None:
    """A queryset built with stand-in values (for what changes from call to call: ids,
    times) as SQL and a parameter template: each compiled parameter equal to a stand-in
    (as the database adapter gets it) is that slot, the others constants. ``None`` when
    the queryset can find nothing (``EmptyResultSet``). A stand-in must be unlike any
    constant: large negative ids, a time in 1970. ``fill`` gives the parameters."""
    try:
        sql, params = queryset.query.get_compiler(connection=connection).as_sql()
    except EmptyResultSet:
        return None
    adapted = {name: adapt(value) for name, value in stand_ins.items()}
    template: Template = []
    for param in params:
        slot = next((n for n, v in adapted.items() if type(v) is type(param) and v == param), None)
        template.append((slot, None if slot is not None else param))
    return sql, template


def fill(template: Template, values: dict[str, Any]) -> list[Any]:
    """The parameters of a ``compiled`` statement: ``values`` by slot (adapted as the
    stand-ins were, ``adapt``), the constants as compiled."""
    return [const if slot is None else values[slot] for slot, const in template]


def adapt(value: Any) -> Any:
    """A value as the compiled parameters hold it (a datetime: the database's form)."""
    if hasattr(value, "tzinfo"):
        return connection.ops.adapt_datetimefield_value(value)
    return value
