from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView

from judgments.api import docs
from judgments.api.errors import api_not_found
from judgments.api.tokens import api_tokens
from judgments.api.views import healthz

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/tokens/", api_tokens, name="api-tokens"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("healthz", healthz, name="healthz"),
    # The schema and its docs are public (they hold no data); every endpoint they
    # describe needs credentials. Swagger UI and Redoc come from local static files.
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", docs.swagger_ui, name="api-docs"),
    path("api/redoc/", docs.redoc, name="api-redoc"),
    path("api/", include("judgments.api.urls")),
    path("api/", include("scoring.api.urls")),
    path("api/", include("scoring.api.reports")),
    path("api/", include("jobs.api")),
    path("api/", include("judges.api")),
    re_path(r"^api/", api_not_found),  # JSON 404 for any other /api/ URL, DEBUG or not
    path("", include("judgments.urls")),
    path("", include("scoring.urls")),
    path("", include("jobs.urls")),
    path("", include("judges.urls")),
]

handler404 = "judgments.api.errors.page_not_found"
handler500 = "judgments.api.errors.server_error"
