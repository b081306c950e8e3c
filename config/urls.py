from functools import cache

from django.contrib import admin
from django.urls import include, path, re_path

from config.startup import resume_gc
from jobs.lazy_views import views_of
from judgments.api import docs

# Views imported on first use, not by every process that loads the URLs (jobs/lazy_views.py).
accounts = views_of("judgments.views.accounts")
sso = views_of("judgments.views.sso")
api_tokens = views_of("judgments.api.tokens")
api_views = views_of("judgments.api.views")
api_errors = views_of("judgments.api.errors")


def _spectacular(view_name: str, **initkwargs: str):
    """drf_spectacular.views (its renderers and YAML: ~0.3 s of imports) is imported on
    the first request for the schema or its docs, not by every process that loads URLs."""

    @cache
    def view():
        from drf_spectacular import views

        return getattr(views, view_name).as_view(**initkwargs)

    def lazy_view(request, *args, **kwargs):
        return view()(request, *args, **kwargs)

    lazy_view.csrf_exempt = True  # as every APIView.as_view() is
    return lazy_view


urlpatterns = [
    # Before the admin's own: with VERITY_LOCAL_LOGIN=0 it sends to the login page.
    path("admin/login/", sso.admin_login),
    path("admin/", admin.site.urls),
    # Single sign-on (OpenID Connect): register <origin>/oidc/callback/ at the provider.
    path("oidc/login/", sso.SignInStart.as_view(), name="sso-login"),
    path("oidc/callback/", sso.SignInCallback.as_view(), name="sso-callback"),
    path("accounts/tokens/", api_tokens.api_tokens, name="api-tokens"),
    # Before Django's own: password reset only where a mail can be sent.
    path("accounts/password_reset/", accounts.password_reset, name="password_reset"),
    path("accounts/password_reset/done/", accounts.password_reset_done, name="password_reset_done"),
    # Before Django's own: refuses password POSTs when local passwords are off.
    path("accounts/login/", sso.login, name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("healthz", api_views.healthz, name="healthz"),
    # The schema and its docs are public (they hold no data); every endpoint they
    # describe needs credentials. Swagger UI and Redoc come from local static files.
    path("api/schema/", _spectacular("SpectacularAPIView"), name="api-schema"),
    path("api/docs/", docs.swagger_ui, name="api-docs"),
    path("api/redoc/", docs.redoc, name="api-redoc"),
    path("api/redoc/redoc.standalone.js", docs.redoc_script, name="api-redoc-script"),
    path("api/", include("judgments.api.urls")),
    path("api/", include("scoring.api.urls")),
    path("api/", include("scoring.api.report_urls")),
    path("api/", include("jobs.api_urls")),
    path("api/", include("judges.api_urls")),
    path("api/", include("judgments.api.token_urls")),
    re_path(r"^api/", api_errors.api_not_found),  # JSON 404 for any other /api/ URL, DEBUG or not
    path("", include("judgments.urls")),
    path("", include("scoring.urls")),
    path("", include("jobs.urls")),
    path("", include("judges.urls")),
]

handler403 = "judgments.api.errors.permission_denied"
handler404 = "judgments.api.errors.page_not_found"
handler500 = "judgments.api.errors.server_error"

# The last large import of a process's start-up: the collector runs again from here on.
resume_gc()
