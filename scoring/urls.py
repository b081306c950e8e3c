"""Browser pages for evaluations: included at "" by ``config/urls.py``.

Each page also answers ``?format=json`` and ``?format=csv`` with the data it shows.
"""

from django.urls import path

from . import views

app_name = "scoring"

urlpatterns = [
    path("c/<slug:slug>/evaluations/", views.evaluation_list, name="evaluations"),
    path("c/<slug:slug>/evaluations/<int:pk>/", views.evaluation_detail, name="evaluation"),
    path("c/<slug:slug>/runs/<slug:name>/diagnosis/", views.run_diagnosis, name="diagnosis"),
    path("c/<slug:slug>/compare/", views.compare, name="compare"),
]
