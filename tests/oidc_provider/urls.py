from django.contrib.auth import views as auth_views
from django.urls import include, path

from .provider import control

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("control/", control),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
