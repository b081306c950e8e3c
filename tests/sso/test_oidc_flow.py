"""Single sign-on end to end against a real OpenID provider in another process.

The provider (tests/oidc_provider: django-oauth-toolkit, PKCE required, RS256) is driven
over HTTP as a browser would be (``Provider.sign_in``); Verity runs in the test's client.
Each refusal is a 4xx page with a sentence saying what went wrong and what to do, and a
``login.failed`` audit row naming the reason.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from audit.models import AuditEvent
from judgments.models import Membership, Role
from tests.factories import make_collection

from .conftest import PASSWORD, callback_path, start

pytestmark = pytest.mark.django_db


def refused(response, status: int, reason: str, sentence: str) -> None:
    """The page: its status, the reason, the sentence; nobody signed in; one audit row."""
    body = response.content.decode()
    assert response.status_code == status, body
    assert f'data-reason="{reason}"' in body
    assert sentence in body
    assert "Traceback" not in body
    assert "_auth_user_id" not in response.wsgi_request.session
    failures = AuditEvent.objects.filter(action="login.failed")
    assert [e.detail for e in failures] == [{"method": "oidc", "reason": reason}]


def sign_in(client, provider, username: str = "ana") -> object:
    return client.get(callback_path(provider.sign_in(start(client), username, PASSWORD)))


def test_the_authorization_code_flow_with_pkce_signs_in_with_the_mapped_role(
    client, sso, settings, django_user_model
):
    settings.VERITY_OIDC_GROUP_ROLES = "search-team=web-search:evaluator,ops=web-search:reviewer"
    web = make_collection(slug="web-search", name="Web search")
    ana = django_user_model.objects.create_user("ana", email="ana@old.example")
    sso.add_user("ana", PASSWORD, email="ana@example.org", groups=["search-team", "ops", "payroll"])

    authorize = start(client, next_url="/c/web-search/")
    params = parse_qs(urlsplit(authorize).query)
    assert authorize.startswith(f"{sso.issuer}/authorize/?")
    assert params["code_challenge_method"] == ["S256"]
    assert len(params["code_challenge"][0]) == 43  # base64url of a SHA-256, unpadded
    assert params["client_id"] == [sso.client_id]
    assert params["redirect_uri"] == ["http://testserver/oidc/callback/"]
    assert {"state", "nonce"} <= params.keys()

    response = client.get(callback_path(sso.sign_in(authorize, "ana", PASSWORD)))

    assert (response.status_code, response["Location"]) == (302, "/c/web-search/")
    assert client.session["_auth_user_id"] == str(ana.pk)
    assert sso.challenge_methods() == ["S256"]  # the provider got the PKCE challenge
    membership = Membership.objects.get(user=ana, collection=web)
    # The higher of the two groups' roles, marked as the mapping's.
    assert (membership.role, membership.granted_by_group) == (Role.EVALUATOR, "search-team")
    ana.refresh_from_db()
    assert ana.email == "ana@example.org"
    rows = AuditEvent.objects.exclude(action="collection.create")  # the fixture's
    assert list(rows.order_by("id").values_list("action", "target")) == [
        ("member.add", "ana"),
        ("login", "ana"),
    ]
    login = AuditEvent.objects.get(action="login")
    # The groups that map to a role; the others are none of the log's business.
    assert login.detail == {"method": "oidc", "groups": ["ops", "search-team"]}
    assert login.actor_id == ana.pk
    assert client.get("/c/web-search/").status_code == 200


def test_a_wrong_state_is_refused(client, sso, django_user_model):
    django_user_model.objects.create_user("ana")
    sso.add_user("ana", PASSWORD)
    back = sso.sign_in(start(client), "ana", PASSWORD)
    path, query = callback_path(back).split("?")
    params = {k: v[0] for k, v in parse_qs(query).items()}
    params["state"] = "forged-" + params["state"]

    response = client.get(f"{path}?{urlencode(params)}")

    refused(response, 400, "state_mismatch", "does not match a sign-in started in this browser")


def test_an_answer_in_another_browser_is_refused(client, sso, django_user_model):
    django_user_model.objects.create_user("ana")
    sso.add_user("ana", PASSWORD)
    from django.test import Client

    back = sso.sign_in(start(client), "ana", PASSWORD)
    response = Client().get(callback_path(back))

    refused(response, 400, "no_sign_in_started", "This browser has no sign-in in progress")


def test_a_replayed_code_is_refused(client, sso, django_user_model):
    django_user_model.objects.create_user("ana")
    sso.add_user("ana", PASSWORD)
    first = callback_path(sso.sign_in(start(client), "ana", PASSWORD))
    assert client.get(first).status_code == 302

    # The same answer again: its state was used up by the first sign-in.
    replay = client.get(first)
    assert replay.status_code == 400
    assert "its state is unknown or was already used" in replay.content.decode()
    client.logout()

    # The old code slipped into a new sign-in's answer: the state is good, but the
    # provider will not exchange a code twice (nor with another PKCE verifier).
    new_state = parse_qs(urlsplit(start(client)).query)["state"][0]
    old_code = parse_qs(first.split("?")[1])["code"][0]
    response = client.get("/oidc/callback/?" + urlencode({"code": old_code, "state": new_state}))
    body = response.content.decode()
    assert response.status_code == 403, body
    assert 'data-reason="code_refused"' in body
    assert "A code works once" in body
    assert "invalid_grant" in body
    assert "_auth_user_id" not in client.session
    reasons = [
        e.detail["reason"] for e in AuditEvent.objects.filter(action="login.failed").order_by("id")
    ]
    assert reasons == ["state_mismatch", "code_refused"]


@pytest.mark.parametrize(
    ("wrong", "status", "reason", "sentence"),
    [
        pytest.param(
            {"exp_offset": -3600},
            403,
            "id_token_expired",
            "ID token had already expired when Verity received it",
            id="expired-id-token",
        ),
        pytest.param(
            {"aud": "another-application"},
            403,
            "wrong_audience",
            "was issued for another application, not for this Verity",
            id="wrong-audience",
        ),
        pytest.param(
            {"iss": "http://127.0.0.1:9/someone-else"},
            403,
            "wrong_issuer",
            "issued by another identity provider than the one this Verity trusts",
            id="wrong-issuer",
        ),
    ],
)
def test_an_id_token_verity_cannot_trust_is_refused(
    client, sso, django_user_model, wrong, status, reason, sentence
):
    django_user_model.objects.create_user("ana")
    sso.add_user("ana", PASSWORD)
    sso.misbehave(**wrong)

    refused(sign_in(client, sso), status, reason, sentence)


def test_an_unknown_user_is_refused_and_told_to_ask_an_admin(client, sso, django_user_model):
    sso.add_user("zoe", PASSWORD, groups=["search-team"])

    refused(
        sign_in(client, sso, "zoe"),
        403,
        "unknown_user",
        "Ask an administrator of this Verity to add you (username &#x27;zoe&#x27;)",
    )
    assert not django_user_model.objects.filter(username="zoe").exists()
    assert AuditEvent.objects.get(action="login.failed").target == "zoe"


def test_an_unknown_user_gets_an_account_when_creation_is_on(
    client, sso, settings, django_user_model
):
    settings.VERITY_OIDC_CREATE_USERS = True
    sso.add_user("zoe", PASSWORD, email="zoe@example.org")

    assert sign_in(client, sso, "zoe").status_code == 302

    zoe = django_user_model.objects.get(username="zoe")
    assert (zoe.email, zoe.has_usable_password()) == ("zoe@example.org", False)
    assert AuditEvent.objects.get(action="login").detail["account_created"] is True


def test_a_deactivated_account_is_refused(client, sso, django_user_model):
    django_user_model.objects.create_user("ana", is_active=False)
    sso.add_user("ana", PASSWORD)

    refused(sign_in(client, sso), 403, "inactive_user", "is deactivated")


def test_leaving_the_group_withdraws_the_mapped_role_only(client, sso, settings, django_user_model):
    settings.VERITY_OIDC_GROUP_ROLES = "search-team=web-search:admin"
    web = make_collection(slug="web-search")
    news = make_collection(slug="news")
    ana = django_user_model.objects.create_user("ana")
    Membership.objects.create(user=ana, collection=news, role=Role.REVIEWER)  # by an admin
    sso.add_user("ana", PASSWORD, groups=["search-team"])
    assert sign_in(client, sso).status_code == 302
    assert Membership.objects.get(user=ana, collection=web).role == Role.ADMIN
    client.logout()

    sso.add_user("ana", PASSWORD, groups=[])  # the IdP takes her out of the group
    assert sign_in(client, sso).status_code == 302

    assert list(Membership.objects.filter(user=ana).values_list("collection__slug", "role")) == [
        ("news", Role.REVIEWER)
    ]
    removal = AuditEvent.objects.get(action="member.remove")
    assert (removal.collection_slug, removal.before) == ("web-search", {"role": "admin"})
    assert removal.detail == {"via": "oidc group mapping", "group": "search-team"}


def test_the_providers_refusal_is_shown(client, sso):
    client.get("/oidc/login/")
    state = next(iter(client.session["oidc_states"]))

    response = client.get(
        "/oidc/callback/?"
        + urlencode({"error": "access_denied", "error_description": "not allowed", "state": state})
    )

    refused(response, 403, "provider_error", "did not sign you in (access_denied: not allowed)")
    assert client.session["oidc_states"] == {}  # that state cannot be used again


def test_an_unreachable_provider_is_a_clear_page(client, sso, settings):
    settings.VERITY_OIDC_ISSUER = "http://127.0.0.1:9/nobody"

    response = client.get("/oidc/login/")

    refused(response, 502, "provider_unreachable", "could not read the identity provider")


def test_a_username_verity_cannot_hold_is_refused(client, sso, settings, django_user_model):
    settings.VERITY_OIDC_USERNAME_CLAIM = "email"
    settings.VERITY_OIDC_CREATE_USERS = True
    sso.add_user("ana", PASSWORD, email="a" * 150 + "@example.org")

    refused(sign_in(client, sso), 403, "username_too_long", "a Verity username has at most 150")
    assert not django_user_model.objects.exists()


def test_a_missing_username_claim_is_refused(client, sso, settings):
    settings.VERITY_OIDC_USERNAME_CLAIM = "employee_id"  # the provider sends none
    sso.add_user("ana", PASSWORD)

    refused(sign_in(client, sso), 403, "username_missing", "has no &#x27;employee_id&#x27; claim")
