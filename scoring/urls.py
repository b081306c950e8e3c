"""Browser pages for evaluations: included at "" by ``config/urls.py``.

Each page also answers ``?format=json`` and ``?format=csv`` with the data it shows.
"""

from django.urls import path

from jobs.lazy_views import views_of

views = views_of("scoring.views")  # imported on first use (jobs/lazy_views.py)

app_name = "scoring"

urlpatterns = [
    path("c/<slug:slug>/evaluations/", views.evaluation_list, name="evaluations"),
    path("c/<slug:slug>/evaluations/new/", views.evaluation_new, name="evaluation-new"),
    path("c/<slug:slug>/evaluations/<int:pk>/", views.evaluation_detail, name="evaluation"),
    path("c/<slug:slug>/runs/", views.run_list, name="runs"),
    path("c/<slug:slug>/runs/<slug:name>/", views.run_detail, name="run"),
    # Query ids are opaque and may hold "/": the path converter takes them whole.
    path(
        "c/<slug:slug>/runs/<slug:name>/q/<external_id:qid>/", views.ranked_list, name="ranked-list"
    ),
    path("c/<slug:slug>/runs/<slug:name>/diagnosis/", views.run_diagnosis, name="diagnosis"),
    path(
        "c/<slug:slug>/runs/<slug:name>/diagnosis/score/",
        views.diagnosis_score,
        name="diagnosis-score",
    ),
    path("c/<slug:slug>/compare/score/", views.compare_score, name="compare-score"),
    path("c/<slug:slug>/compare/focus/", views.compare_focus, name="compare-focus"),
    path("c/<slug:slug>/compare/latest/", views.compare_on_latest, name="compare-latest"),
    path("c/<slug:slug>/compare/", views.compare, name="compare"),
]
