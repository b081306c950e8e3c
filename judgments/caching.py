"""What shared caches may keep: nothing of what a signed-in user or an API client sees.

Every answer to an authenticated request (a page with a session, an API call with a token:
DRF puts its user on the request) is ``Cache-Control: private``: a proxy or CDN between
the server and the browser must not keep it for the next person. Exports and downloads
(any answer with ``Content-Disposition``: CSV and JSON reports, qrels, a job's file) are
``no-store``: not kept at all, not even by the browser. Static files and anonymous pages
(the sign-in page) are left as they are.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_cache_control


class PrivateCacheMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        user = getattr(request, "user", None)
        if response.has_header("Content-Disposition"):
            patch_cache_control(response, private=True, no_store=True)
        elif getattr(user, "is_authenticated", False) or request.path.startswith("/api/"):
            patch_cache_control(response, private=True)
        return response
