"""The API's documentation pages under the Content-Security-Policy.

drf-spectacular's Swagger UI page carries an inline ``<script>`` and ``<style>``; the
"split" view serves the script as a file of its own, and ``api/swagger_ui.html`` takes
the style from ``static/css/swagger.css``. Redoc renders with styles it injects at run
time, so its page alone allows inline styles (never inline scripts).
"""

from __future__ import annotations

from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_update
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

swagger_ui = SpectacularSwaggerSplitView.as_view(
    url_name="api-schema", template_name="api/swagger_ui.html"
)
redoc = csp_update({"style-src": [SELF, UNSAFE_INLINE], "worker-src": [SELF, "blob:"]})(
    SpectacularRedocView.as_view(url_name="api-schema", template_name="api/redoc.html")
)
