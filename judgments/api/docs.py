"""The API's documentation pages under the Content-Security-Policy.

drf-spectacular's Swagger UI page carries an inline ``<script>`` and ``<style>``; the
"split" view serves the script as a file of its own, and ``api/swagger_ui.html`` takes
the style from ``static/css/swagger.css``. Redoc renders with styles it injects at run
time, so its page alone allows inline styles (never inline scripts). Its side menu shows
Redocly's logo from their CDN, which the policy blocks: ``redoc_script`` serves the
sidecar bundle with that address pointing at a local image instead.

``drf_spectacular.views`` (its renderers and YAML: ~0.3 s of imports) is imported on the
first request for a documentation page, not by every process that loads the URLs.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib.staticfiles import finders
from django.http import HttpRequest, HttpResponse
from django.templatetags.static import static
from django.views.decorators.http import require_GET

#: Where Redoc's bundle fetches its attribution logo, and the sidecar bundle's file.
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
REDOC_BUNDLE = "drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"


@cache
def _swagger_view() -> Any:
    from drf_spectacular.views import SpectacularSwaggerSplitView

    return SpectacularSwaggerSplitView.as_view(
        url_name="api-schema", template_name="api/swagger_ui.html"
    )


@cache
def _redoc_view() -> Any:
    from drf_spectacular.views import SpectacularRedocView

    return SpectacularRedocView.as_view(url_name="api-schema", template_name="api/redoc.html")


def swagger_ui(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    return _swagger_view()(request, *args, **kwargs)


@csp_update({"style-src": [SELF, UNSAFE_INLINE], "worker-src": [SELF, "blob:"]})
def redoc(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    return _redoc_view()(request, *args, **kwargs)


swagger_ui.csrf_exempt = True  # type: ignore[attr-defined]  # as every APIView.as_view() is
redoc.csrf_exempt = True  # type: ignore[attr-defined]


@cache
def _redoc_bundle() -> bytes:
    path = finders.find(REDOC_BUNDLE)
    if not path:
        raise FileNotFoundError(REDOC_BUNDLE)
    with open(path, "rb") as f:
        code = f.read()
    return code.replace(REDOC_LOGO.encode(), static("api/redoc-logo.svg").encode())


@require_GET
def redoc_script(request: HttpRequest) -> HttpResponse:
    """Redoc's bundle, every request to another origin taken out (the logo is local)."""
    response = HttpResponse(_redoc_bundle(), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "public, max-age=86400"
    return response
