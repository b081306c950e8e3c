"""Local passwords beside single sign-on, and switched off (VERITY_LOCAL_LOGIN=0)."""

from __future__ import annotations

import pytest
from django.contrib.auth import authenticate
from django.test import Client, RequestFactory

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"


@pytest.fixture
def ana(django_user_model, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return django_user_model.objects.create_user("ana", password=PASSWORD, is_staff=True)


@pytest.fixture
def sso_only(settings):
    settings.VERITY_OIDC_ISSUER = "https://idp.example.org/realms/verity"
    settings.VERITY_OIDC_PROVIDER_NAME = "Example SSO"
    settings.VERITY_LOCAL_LOGIN = False


def test_without_single_sign_on_the_login_page_is_the_password_form(client, ana):
    page = client.get("/accounts/login/").content.decode()
    assert 'name="password"' in page
    assert "Sign in with" not in page
    assert client.get("/oidc/login/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
    assert 'name="password"' in client.get("/admin/login/").content.decode()  # the admin's own


def test_with_single_sign_on_both_ways_are_offered(client, ana, settings):
    settings.VERITY_OIDC_ISSUER = "https://idp.example.org/realms/verity"
    settings.VERITY_OIDC_PROVIDER_NAME = "Example SSO"

    page = client.get("/accounts/login/?next=/c/x/").content.decode()

    assert 'href="/oidc/login/?next=/c/x/"' in page
    assert "Sign in with Example SSO" in page
    assert 'name="password"' in page
    response = client.post("/accounts/login/", {"username": "ana", "password": PASSWORD})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(ana.pk)


def test_switched_off_the_form_is_gone_and_a_password_post_is_refused(client, ana, sso_only):
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with Example SSO" in page
    assert 'name="password"' not in page
    assert "Forgot your password" not in page

    response = client.post("/accounts/login/", {"username": "ana", "password": PASSWORD})

    assert response.status_code == 403
    assert "Password sign-in is switched off on this Verity" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_switched_off_the_admin_login_sends_to_the_login_page(client, ana, sso_only):
    response = client.post("/admin/login/?next=/admin/", {"username": "ana", "password": PASSWORD})

    assert (response.status_code, response["Location"]) == (
        302,
        "/accounts/login/?next=%2Fadmin%2F",
    )
    assert "_auth_user_id" not in client.session


def test_switched_off_no_password_login_over_http_succeeds(ana, sso_only):
    request = RequestFactory().post("/anything/")
    assert authenticate(request, username="ana", password=PASSWORD) is None
    # Without a request (the shell, a management command) it is not a login from outside.
    assert authenticate(None, username="ana", password=PASSWORD) == ana


def test_switched_off_a_session_from_single_sign_on_still_works(ana, sso_only):
    client = Client()
    client.force_login(ana, backend="judgments.sso.backend.OIDCBackend")
    assert client.get("/").status_code == 200


def test_deactivating_an_account_ends_its_single_sign_on_sessions(ana):
    client = Client()
    client.force_login(ana, backend="judgments.sso.backend.OIDCBackend")
    ana.is_active = False
    ana.save(update_fields=["is_active"])

    response = client.get("/")

    assert (response.status_code, response["Location"]) == (302, "/accounts/login/?next=/")
