from django.urls import path

from . import views

app_name = "jobs"

urlpatterns = [
    path("jobs/<int:pk>/", views.job_page, name="job"),
    path("jobs/<int:pk>/retry/", views.job_retry, name="job-retry"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job-cancel"),
]
