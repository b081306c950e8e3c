"""What the API views share: the error response of the schema, and the lookup by one URL
keyword with a 404 that names what was looked for."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions

from ..errors import ErrorSerializer


def error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


def not_found(what: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"{what} not found in this collection.")


class NamedLookup:
    """``get_object`` by one URL keyword, with a 404 that names what was looked for."""

    lookup_what = "object"

    def get_object(self) -> Any:
        value = self.kwargs[self.lookup_url_kwarg or self.lookup_field]  # type: ignore[attr-defined]
        found = self.get_queryset().filter(**{self.lookup_field: value}).first()  # type: ignore[attr-defined]
        if found is None:
            raise not_found(f"{self.lookup_what} '{value}'")
        return found
