from django.urls import path

from jobs.lazy_views import views_of

views = views_of("judges.views")  # imported on first use (jobs/lazy_views.py)

app_name = "judges"

urlpatterns = [
    path("c/<slug:slug>/judges/", views.judge_list, name="judges"),
    path("c/<slug:slug>/judges/policy/", views.judge_policy, name="policy"),
    path("c/<slug:slug>/judges/new/", views.judge_edit, name="new"),
    path("c/<slug:slug>/judges/<slug:judge>/edit/", views.judge_edit, name="edit"),
    path("c/<slug:slug>/judges/<slug:judge>/start/", views.judge_start, name="start"),
    path("c/<slug:slug>/judges/<slug:judge>/proposals/", views.proposal_list, name="proposals"),
    path(
        "c/<slug:slug>/judges/<slug:judge>/calibration/",
        views.calibration_page,
        name="calibration",
    ),
]
