"""OpenAPI generation: every operation documents the errors it can answer.

Views declare their success responses and the errors particular to them (409, 412, 413,
428) with ``extend_schema``; the errors common to all are added here from what the
operation is, so that the schema cannot forget one:

- 401 for every operation (every one needs credentials);
- 403 when the operation needs more than the reviewer role, or writes (a session write
  without its CSRF token is refused);
- 404 under a collection (a collection you are not a member of is not found) and for
  lists (a page past the end);
- 400 when the operation takes a body or query parameters (filters, pages, options).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse

from judgments.models import Role

from .auth import TokenOrBearerAuthentication
from .errors import ErrorSerializer

DESCRIPTIONS = {
    "400": "Invalid request: `errors` names each field (or file line) and its problem.",
    "401": "No valid credentials: send `Authorization: Token <key>` (or Bearer).",
    "403": "Your role in this collection is too weak for the operation (the message says "
    "which one it needs), or a session write lacks its CSRF token.",
    "404": "Not found: no such object in this collection, or a collection you are not a "
    "member of, or a page past the end of a list.",
}


class VerityAutoSchema(AutoSchema):
    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        responses = operation["responses"]
        for code in self._common_errors(operation):
            if code not in responses:
                responses[code] = self._get_response_for_code(
                    OpenApiResponse(ErrorSerializer, description=DESCRIPTIONS[code]), code
                )
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _common_errors(self, operation: dict[str, Any]) -> list[str]:
        codes = ["401"]
        unsafe = self.method not in ("GET", "HEAD", "OPTIONS")
        needs = Role.REVIEWER
        required_role = getattr(self.view, "required_role", None)
        if required_role is not None:
            needs = required_role()
        if unsafe or needs != Role.REVIEWER:
            codes.append("403")
        if "{" in self.path or self._is_list_view():
            codes.append("404")
        takes_query = any(p["in"] == "query" for p in operation.get("parameters", []))
        if unsafe or takes_query:
            codes.append("400")
        return codes


class TokenOrBearerScheme(OpenApiAuthenticationExtension):
    """Two security schemes, either of which will do. Here rather than beside the
    authentication class: drf-spectacular registers it when this module (the schema class,
    which every schema generation loads) is imported, and the settings import the
    authentication class in every process (drf-spectacular's plumbing is ~40 ms)."""

    target_class = TokenOrBearerAuthentication
    name = ["tokenAuth", "bearerAuth"]

    def get_security_definition(self, auto_schema: Any) -> list[dict[str, str]]:
        return [
            {
                "type": "apiKey",
                "in": "header",
                "name": "Authorization",
                "description": 'Send "Authorization: Token <key>".',
            },
            {"type": "http", "scheme": "bearer", "description": "The same key, as Bearer."},
        ]

    def get_security_requirement(self, auto_schema: Any) -> list[dict[str, list[Any]]]:
        return [{"tokenAuth": []}, {"bearerAuth": []}]
