"""Every API error is JSON of one shape: ``{"detail": "...", "errors": [...]}``.

``detail`` is one sentence a person can act on; ``errors`` lists each problem with the
request field it concerns (``null`` for the request as a whole), and for a refused file
each line's problem, ``file:line``-style, in ``message``. Some errors add a key: a
judgment conflict (409, 412) carries the ``current`` judgment.

Status codes: 400 the request is malformed or names something unknown; 401 no valid
credentials (an unknown, revoked or expired token says which); 403 your role in the
collection is too weak, the token's scope too narrow or its collection another one (or a
session write lacks its CSRF token); 404 no such object in a collection you are a
member of (a collection you are not a member of answers 404 as well, so its existence is
not revealed); 409 the stored data refuses the change, the message says what to change
first; 412/428 a judgment edit named a stale version / no version; 413 an upload over
the size limit.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import (
    ObjectDoesNotExist,
    RequestDataTooBig,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response

from verity_limits import NOTE_MAX

log = logging.getLogger(__name__)

NOT_AUTHENTICATED = (
    "Authentication credentials were not provided. Send 'Authorization: Token <key>' "
    "(create a key on /accounts/tokens/ or with 'manage.py api_token create USERNAME "
    "--name NAME'), "
    "or log in at /accounts/login/ for the browser."
)


class ErrorItemSerializer(serializers.Serializer):
    field = serializers.CharField(
        allow_null=True,
        help_text="The request field (dotted path for nested ones), or null for the whole "
        "request; 'file' for a refused upload's lines.",
    )
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What went wrong and how to fix it.")
    errors = ErrorItemSerializer(many=True)


class ApiError(exceptions.APIException):
    """An error with a chosen status, extra body keys and headers."""

    def __init__(
        self,
        status_code: int,
        detail: str,
        *,
        errors: list[dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.errors = errors or []
        self.extra = extra or {}
        self.headers = headers or {}


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"


def flatten_errors(data: Any, prefix: str | None = None) -> list[dict[str, Any]]:
    """DRF's nested error structure as a flat list of ``{"field", "message"}``."""
    if isinstance(data, dict):
        out = []
        for key, value in data.items():
            if key in ("non_field_errors", "detail"):
                out += flatten_errors(value, prefix)
            else:
                out += flatten_errors(value, f"{prefix}.{key}" if prefix else str(key))
        return out
    if isinstance(data, list):
        if all(not isinstance(v, dict | list) for v in data):
            return [{"field": prefix, "message": str(v)} for v in data]
        out = []
        for i, value in enumerate(data):
            out += flatten_errors(value, f"{prefix}.{i}" if prefix else str(i))
        return out
    return [{"field": prefix, "message": str(data)}]


def summary(errors: list[dict[str, Any]]) -> str:
    parts = [f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in errors]
    if len(parts) > 3:
        parts = [*parts[:3], f"and {len(parts) - 3} more (see errors)"]
    return "; ".join(parts) or "invalid request"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    # A refused file (scoring's RunImportError) is turned into a 400 by its view; any
    # other refused change is the stored data saying no. (Imported here: this module is
    # the project's error handlers, which every start-up's URL check imports.)
    from judgments.services import VerityError

    if isinstance(exc, VerityError):
        exc = ApiError(409, str(exc))
    elif isinstance(exc, RequestDataTooBig):
        # Django's own limit on a request body held in memory (uploads stream to disk and
        # have VERITY_MAX_UPLOAD_BYTES instead); without this it is an HTML 400 page.
        exc = PayloadTooLarge(
            f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes, "
            "the most this endpoint reads; send less (a note has at most "
            f"{NOTE_MAX:,} characters), or upload files as multipart/form-data."
        )
    elif isinstance(exc, TooManyFieldsSent | TooManyFilesSent):
        exc = exceptions.ParseError(f"{exc}; send fewer fields or files in one request.")
    elif isinstance(exc, ObjectDoesNotExist | Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    elif isinstance(exc, exceptions.NotAuthenticated):
        header = getattr(exc, "auth_header", None)  # becomes WWW-Authenticate
        exc = exceptions.NotAuthenticated(NOT_AUTHENTICATED)
        if header:
            exc.auth_header = header

    from rest_framework.views import exception_handler as drf_exception_handler

    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        errors = flatten_errors(response.data)
        response.data = {"detail": summary(errors), "errors": errors}
    else:
        data = response.data if isinstance(response.data, dict) else {"detail": response.data}
        response.data = {
            "detail": str(data.get("detail", "")),
            "errors": getattr(exc, "errors", []),
            **getattr(exc, "extra", {}),
        }
        for name, value in getattr(exc, "headers", {}).items():
            response[name] = value
    return response


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


@csrf_exempt  # it changes nothing; without this a POST would get the HTML CSRF page
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """The JSON 404 of a URL under /api/ that no endpoint matches (routed last, so that
    it answers in JSON in development too, where Django shows its debug page instead of
    ``handler404``)."""
    hint = ""
    if not request.path.endswith("/"):
        try:
            resolve(request.path + "/")
        except Resolver404:
            pass
        else:
            hint = f" Did you mean {request.path}/ (with the trailing slash)?"
    return JsonResponse(
        {
            "detail": f"No API endpoint at {request.path}.{hint} The endpoints are listed at "
            "/api/docs/ (schema: /api/schema/); ids in paths are numbers for judgments, "
            "tasks and evaluations, slugs for collections and runs.",
            "errors": [],
        },
        status=404,
    )


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The site's 404 page (templates/404.html), or the API's JSON error under /api/."""
    if _is_api(request):
        return api_not_found(request)
    # A view's Http404 says what is missing; the resolver's (no URL matched) carries a
    # dict, which is no message for a person.
    message = exception.args[0] if exception.args and isinstance(exception.args[0], str) else ""
    return render(request, "404.html", {"reason": message}, status=404)


#: What each role lets a member do, for the 403 page's "ask for" line.
ROLE_GRANTS = {
    "reviewer": "label items and claim review tasks",
    "evaluator": "also upload runs, freeze snapshots, score runs and export qrels",
    "admin": "also manage members, judges and the collection's settings",
    "adjudicator": "decide pairs whose assessors disagree (admins always may)",
}


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The site's 403 page: the reason the view gave, the role to ask a collection admin
    for (``RoleRequired.role``) and the role held now; JSON under /api/."""
    reason = str(exception) or "You may not open this page."
    if _is_api(request):
        return JsonResponse({"detail": reason, "errors": []}, status=403)
    role = getattr(exception, "role", None)
    context = {
        "reason": reason,
        "role_needed": role,
        "role_grants": ROLE_GRANTS.get(role or "", ""),
        "your_role": getattr(request, "collection_role", None),
        "collection": getattr(request, "collection", None),
    }
    return render(request, "403.html", context, status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    """Django's 500 page, or the API's JSON error under /api/."""
    if _is_api(request):
        return JsonResponse(
            {
                "detail": "Internal server error; it has been logged. Try again, and if it "
                "persists, report the time and the request to the administrators.",
                "errors": [],
            },
            status=500,
        )
    # templates/500.html, rendered without a request context: it reads no database (the
    # error may be the database), so its header shows no user and no collection.
    return defaults.server_error(request)
