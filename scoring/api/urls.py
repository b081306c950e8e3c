"""``/api/collections/<slug>/…``: runs, unit mappings, evaluations."""

from django.urls import path

from jobs.lazy_views import views_of

views = views_of("scoring.api.views")  # imported on first use (jobs/lazy_views.py)

app_name = "scoring-api"

LIST_CREATE = {"get": "list", "post": "create"}
DETAIL = {"get": "retrieve"}

urlpatterns = [
    path(
        "collections/<slug:slug>/runs/",
        views.RunViewSet.as_view(LIST_CREATE),
        name="runs",
    ),
    path(
        "collections/<slug:slug>/runs/<slug:name>/",
        views.RunViewSet.as_view(DETAIL),
        name="run",
    ),
    path(
        "collections/<slug:slug>/mappings/",
        views.MappingViewSet.as_view(LIST_CREATE),
        name="mappings",
    ),
    path(
        "collections/<slug:slug>/mappings/<int:number>/",
        views.MappingViewSet.as_view(DETAIL),
        name="mapping",
    ),
    path(
        "collections/<slug:slug>/evaluations/",
        views.EvaluationViewSet.as_view(LIST_CREATE),
        name="evaluations",
    ),
    path(
        "collections/<slug:slug>/evaluations/<int:pk>/",
        views.EvaluationViewSet.as_view(DETAIL),
        name="evaluation",
    ),
    path(
        "collections/<slug:slug>/evaluations/<int:pk>/queries/",
        views.EvaluationViewSet.as_view({"get": "queries"}),
        name="evaluation-queries",
    ),
]
