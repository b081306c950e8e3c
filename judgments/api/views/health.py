"""The health check for load balancers."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness and database check for load balancers: 200 when a query runs, else 503."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means "not ready"
        return JsonResponse(
            {"status": "error", "database": f"unavailable: {type(exc).__name__}"}, status=503
        )
    return JsonResponse({"status": "ok", "database": "ok"})
