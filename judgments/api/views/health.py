"""The health check for load balancers."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache

from jobs.health import queue_problem


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness, database and job queue check for load balancers: 200 when a query runs
    and the job queue answers (Redis, with the RQ backend), else 503 saying which."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means "not ready"
        return JsonResponse(
            {"status": "error", "database": f"unavailable: {type(exc).__name__}"}, status=503
        )
    queue = queue_problem()
    if queue is not None:
        return JsonResponse({"status": "error", "database": "ok", "jobs": queue}, status=503)
    return JsonResponse({"status": "ok", "database": "ok", "jobs": "ok"})
