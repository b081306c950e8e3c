from django.urls import path

from . import views

app_name = "judgments"

urlpatterns = [
    path("", views.home, name="home"),
]
