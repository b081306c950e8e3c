"""Tokens (header, Bearer, revocation, the tokens page, the command), the session with
its CSRF check, and login lock-outs."""

from __future__ import annotations

import io

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from judgments.api.auth import client_ip
from judgments.models import ApiToken


def test_bearer_is_the_same_key_as_token(api_world):
    bearer, token = APIClient(), APIClient()
    bearer.credentials(HTTP_AUTHORIZATION=f"Bearer {api_world.tokens['reviewer']}")
    token.credentials(HTTP_AUTHORIZATION=f"Token {api_world.tokens['reviewer']}")

    response = bearer.get("/api/collections/")
    claimed = bearer.post(f"/api/collections/{api_world.slug}/tasks/claim/")

    assert response.status_code == 200
    # The request ran as the reviewer: their one collection, and a task claimed in their name.
    assert response.json() == token.get("/api/collections/").json()
    assert [c["slug"] for c in results(response.json())] == [api_world.slug]
    assert claimed.status_code == 200
    assert claimed.json()["claimed_by"] == "reviewer"


def results(body):
    return body["results"] if isinstance(body, dict) else body


def test_anonymous_gets_401_with_the_scheme_to_use(api_world):
    response = APIClient().get(f"/api/collections/{api_world.slug}/queries/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert "Authorization: Token <key>" in response.json()["detail"]


@pytest.mark.parametrize("header", ["Token nope", "Token a b", "Bearer "])
def test_a_bad_token_is_401_saying_how_to_get_one(api_world, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/collections/")
    assert response.status_code == 401
    assert response.json()["errors"] == []


def test_a_revoked_token_stops_working(api_world, api_client):
    client = api_client("reviewer")
    assert client.get("/api/collections/").status_code == 200
    call_command("api_token", "revoke-all", "reviewer", stdout=io.StringIO())
    response = client.get("/api/collections/")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]


def test_a_deactivated_users_token_stops_working(api_world, api_client):
    get_user_model().objects.filter(username="reviewer").update(is_active=False)
    assert api_client("reviewer").get("/api/collections/").status_code == 401


# -- the session: reads freely, writes only with the CSRF token ----------------------------


def test_a_session_write_without_the_csrf_token_is_refused(api_world):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(api_world.users["evaluator"])
    url = f"/api/collections/{api_world.slug}/snapshots/"
    assert client.get(url).status_code == 200
    refused = client.post(url, {"note": "v3"})
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith("CSRF Failed")
    client.get("/accounts/tokens/")  # any page with a form sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    assert client.post(url, {"note": "v3"}, HTTP_X_CSRFTOKEN=token).status_code == 201


# -- the tokens page and the command -------------------------------------------------------


def test_the_tokens_page_creates_shows_once_rotates_and_revokes(api_world):
    # More in tests/api/test_tokens.py (names, scopes, collections, lifetimes).
    user = api_world.users["newbie"]
    client = Client()
    client.force_login(user)
    page = client.get("/accounts/tokens/")
    assert page.status_code == 200 and b"You have no token." in page.content
    assert "no-store" in page["Cache-Control"]
    created = client.post("/accounts/tokens/", {"action": "create", "name": "script"})
    token = ApiToken.objects.get(user=user)
    key = created.content.decode().split('id="new-key" type="text" value="')[1].split('"')[0]
    assert key.startswith(token.prefix) and token.scope == "read"
    assert key.encode() not in client.get("/accounts/tokens/").content  # shown once
    rotated = client.post("/accounts/tokens/", {"action": "rotate", "token": token.pk})
    new = ApiToken.objects.live().get(user=user)
    assert new.pk != token.pk and key.encode() not in rotated.content
    assert new.prefix.encode() in rotated.content
    client.post("/accounts/tokens/", {"action": "revoke", "token": new.pk})
    assert not ApiToken.objects.live().filter(user=user).exists()


def test_the_tokens_page_needs_a_login():
    response = Client().get("/accounts/tokens/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_command_creates_rotates_lists_and_revokes(api_world):
    # More in tests/api/test_tokens.py.
    out, err = io.StringIO(), io.StringIO()
    call_command("api_token", "create", "newbie", "--name", "ci", stdout=out, stderr=err)
    key = out.getvalue().strip()
    token = ApiToken.objects.get(user__username="newbie")
    assert key.startswith(token.prefix)
    assert "shown once" in err.getvalue()
    out = io.StringIO()
    call_command("api_token", "rotate", token.prefix, stdout=out, stderr=io.StringIO())
    assert out.getvalue().strip() != key
    listing = io.StringIO()
    call_command("api_token", "list", "newbie", stdout=listing)
    assert listing.getvalue().startswith("newbie\t")
    assert key not in listing.getvalue()
    call_command("api_token", "revoke-all", "newbie", stdout=io.StringIO())
    assert not ApiToken.objects.live().filter(user__username="newbie").exists()
    with pytest.raises(CommandError, match="no user 'nobody'"):
        call_command("api_token", "create", "nobody", "--name", "x", stdout=io.StringIO())


# -- login lock-out (django-axes) ----------------------------------------------------------


FAST_HASHER = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # tests only: speed


def login(client: Client, password: str, ip: str = "10.0.0.1"):
    return client.post(
        "/accounts/login/", {"username": "ana", "password": password}, REMOTE_ADDR=ip
    )


def test_five_failed_logins_lock_the_username_from_that_address(db, settings):
    settings.AXES_ENABLED = True
    settings.PASSWORD_HASHERS = FAST_HASHER
    get_user_model().objects.create_user("ana", password="correct horse battery")
    client = Client()
    for _ in range(4):
        assert login(client, "wrong").status_code == 200  # the form again, with its error
    assert login(client, "wrong").status_code == 429  # the fifth failure locks
    locked = login(client, "correct horse battery")
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    # The attempt while locked counts as a failure as well (and restarts the 15 minutes).
    assert AccessAttempt.objects.get(username="ana").failures_since_start == 6
    # Keyed on username and address: the same account from elsewhere still logs in.
    other = Client()
    assert login(other, "correct horse battery", ip="10.0.0.2").status_code == 302


def test_lockouts_can_be_switched_off(db, settings):
    settings.AXES_ENABLED = False
    settings.PASSWORD_HASHERS = FAST_HASHER
    get_user_model().objects.create_user("ana", password="correct horse battery")
    client = Client()
    for _ in range(6):
        login(client, "wrong")
    assert login(client, "correct horse battery").status_code == 302


class FakeRequest:
    def __init__(self, meta: dict[str, str]) -> None:
        self.META = meta


@pytest.mark.parametrize(
    ("proxies", "forwarded", "expected"),
    [
        (0, "1.1.1.1", "10.9.9.9"),  # no trusted proxy: the header is the client's to forge
        (1, "6.6.6.6, 1.1.1.1", "1.1.1.1"),  # one proxy: the address it saw
        (2, "6.6.6.6, 1.1.1.1, 10.0.0.5", "1.1.1.1"),
        (2, "1.1.1.1", "10.9.9.9"),  # fewer hops than proxies: fall back
    ],
)
def test_the_lockout_address_trusts_only_the_configured_proxies(
    settings, proxies, forwarded, expected
):
    settings.VERITY_TRUSTED_PROXIES = proxies
    request = FakeRequest({"REMOTE_ADDR": "10.9.9.9", "HTTP_X_FORWARDED_FOR": forwarded})
    assert client_ip(request) == expected


def test_a_login_without_a_request_is_checked_by_password_alone(db, settings):
    # The shell, commands and Client.login() call authenticate() with no request: there is
    # no address to lock out, so django-axes steps aside instead of raising.
    from django.contrib.auth import authenticate

    settings.AXES_ENABLED = True
    settings.PASSWORD_HASHERS = FAST_HASHER
    get_user_model().objects.create_user("ana", password="correct horse battery")
    assert authenticate(username="ana", password="correct horse battery") is not None
    assert authenticate(username="ana", password="wrong") is None
    assert Client().login(username="ana", password="correct horse battery")
