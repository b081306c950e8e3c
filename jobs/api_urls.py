"""URLs of ``jobs.api`` (mounted under ``/api/``); its views are imported on first use
(jobs/lazy_views.py), not by every process that loads the URL configuration."""

from django.urls import path

from .lazy_views import views_of

views = views_of("jobs.api")

app_name = "jobs-api"

urlpatterns = [
    path("jobs/<int:pk>/", views.JobApi.as_view(), name="job"),
    path("jobs/<int:pk>/retry/", views.JobRetryApi.as_view(), name="job-retry"),
    path("jobs/<int:pk>/cancel/", views.JobCancelApi.as_view(), name="job-cancel"),
    path("jobs/<int:pk>/file", views.JobFileApi.as_view(), name="job-file"),
]
