"""A job that could not be queued (``QueueUnavailable``, raised where the request starts
it) answers 503 with the reason: JSON under /api/ (the API's error shape), a page
elsewhere. The job itself is already failed as retryable with the same words."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse

#: Seconds a client should wait before trying again.
RETRY_AFTER = 30


class QueueUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        # Imported here: the system checks import every middleware class at start-up.
        from .services import QueueUnavailable

        if not isinstance(exc, QueueUnavailable):
            return None
        job = exc.job
        if request.path.startswith("/api/"):
            response: HttpResponse = JsonResponse(
                {
                    "detail": str(exc),
                    "errors": [],
                    "job": job.pk,
                    "job_url": reverse("jobs-api:job", args=[job.pk]),
                },
                status=503,
            )
        else:
            context = {"job": job, "message": str(exc)}
            response = render(request, "jobs/queue_unavailable.html", context, status=503)
        response["Retry-After"] = str(RETRY_AFTER)
        return response
