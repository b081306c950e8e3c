"""URLs of ``judgments.api.tokens`` (mounted under ``/api/``); its views are imported on first use
(jobs/lazy_views.py), not by every process that loads the URL configuration."""

from django.urls import path

from jobs.lazy_views import views_of

views = views_of("judgments.api.tokens")

app_name = "tokens-api"

urlpatterns = [
    path("tokens/", views.TokenListApi.as_view(), name="tokens"),
    path("tokens/<int:pk>/", views.TokenApi.as_view(), name="token"),
]
