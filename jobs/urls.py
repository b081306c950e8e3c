from django.urls import path

from .lazy_views import views_of

views = views_of("jobs.views")  # imported on first use (jobs/lazy_views.py)

app_name = "jobs"

urlpatterns = [
    path("jobs/<int:pk>/", views.job_page, name="job"),
    path("jobs/<int:pk>/retry/", views.job_retry, name="job-retry"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job-cancel"),
]
