"""The ``<external_id:…>`` path converter: a query or item id in a URL passes the one id
rule (``verity_limits.id_problem``) or the URL matches nothing (404). Ids are opaque and
may hold "/", so it takes the rest of the path, as ``<path:…>`` does. A NUL in an id
reached PostgreSQL, which cannot compare it (a 500 on every page that looked one up)."""

from __future__ import annotations

from django.urls.converters import PathConverter

from verity_limits import id_problem


class ExternalIdConverter(PathConverter):
    def to_python(self, value: str) -> str:
        if id_problem(value) is not None:
            raise ValueError(value)
        return value
