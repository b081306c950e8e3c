"""URLs of ``scoring.api.reports`` (mounted under ``/api/``); its views are imported on first use
(jobs/lazy_views.py), not by every process that loads the URL configuration."""

from django.urls import path

from jobs.lazy_views import views_of

views = views_of("scoring.api.reports")

urlpatterns = [
    path(
        "collections/<slug:slug>/evaluations/<int:pk>/report/",
        views.EvaluationReportApi.as_view(),
        name="evaluation-report",
    ),
    path(
        "collections/<slug:slug>/runs/<slug:name>/diagnosis/",
        views.RunDiagnosisApi.as_view(),
        name="run-diagnosis",
    ),
    path(
        "collections/<slug:slug>/compare/",
        views.EvaluationCompareApi.as_view(),
        name="evaluation-compare",
    ),
    path(
        "collections/<slug:slug>/compare/focus/",
        views.CompareFocusApi.as_view(),
        name="evaluation-compare-focus",
    ),
]
