"""URLs of ``judges.api`` (mounted under ``/api/``); its views are imported on first use
(jobs/lazy_views.py), not by every process that loads the URL configuration."""

from django.urls import path

from jobs.lazy_views import views_of

views = views_of("judges.api")

app_name = "judges-api"

urlpatterns = [
    path(
        "collections/<slug:slug>/judges/<slug:judge>/proposals/",
        views.ProposalsView.as_view(),
        name="proposals",
    ),
    path(
        "collections/<slug:slug>/judges/<slug:judge>/calibration/",
        views.CalibrationView.as_view(),
        name="calibration",
    ),
]
