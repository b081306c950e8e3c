"""Text no stored value can hold, refused before any view reads it.

A NUL character cannot be stored or compared by PostgreSQL: a view that looked up
``?query=%00``, ``?tag=%00`` or a username holding one answered 500. Ids in URL paths
pass the whole id rule (``judgments.converters``); this catches the rest, whatever the
view: the path (404), every query parameter and every form field (400, naming it).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def _nul_field(data) -> str | None:
    for key, values in data.lists():
        if "\x00" in key or any("\x00" in value for value in values):
            return key.replace("\x00", "\\x00")
    return None


def refuse_nul(get_response: Callable[[HttpRequest], HttpResponse]):
    def middleware(request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            raise Http404("There is no page at this address: it holds a NUL character.")
        field = _nul_field(request.GET)
        if field is None and request.content_type == "application/x-www-form-urlencoded":
            field = _nul_field(request.POST)
        if field is None:
            return get_response(request)
        message = (
            f"The parameter {field!r} contains a NUL character, which no stored value can "
            "hold; remove it."
        )
        if request.path.startswith("/api/"):
            return JsonResponse(
                {"detail": message, "errors": [{"field": field, "message": message}]},
                status=400,
            )
        return render(request, "400.html", {"reason": message}, status=400)

    return middleware
