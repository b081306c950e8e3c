"""Issue 22, item 7: response headers. Answers to a signed-in user or an API client are
``Cache-Control: private``, exports and downloads ``no-store``; the http -> https redirect
carries the same security headers as every page; ReDoc's logo comes from this server, not
a CDN the policy blocks. Each test fails on main."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from judgments.services import freeze_snapshot, set_membership
from tests.factories import make_collection, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def eve():
    collection = make_collection(slug="heads")
    user = make_user("eve")
    set_membership(collection=collection, user=user, role="evaluator")
    freeze_snapshot(collection=collection, by=user)
    return user


def directives(response) -> set[str]:
    return {d.strip() for d in response.get("Cache-Control", "").split(",") if d.strip()}


def test_pages_and_api_answers_of_a_signed_in_user_are_private(eve):
    client = Client()
    client.force_login(eve)
    page = client.get("/c/heads/")
    assert page.status_code == 200 and "private" in directives(page)
    api = APIClient()
    api.force_authenticate(eve)
    answer = api.get("/api/collections/heads/")
    assert answer.status_code == 200 and "private" in directives(answer)
    refused = APIClient().get("/api/collections/heads/")
    assert refused.status_code == 401 and "private" in directives(refused)


def test_exports_are_not_stored(eve):
    api = APIClient()
    api.force_authenticate(eve)
    qrels = api.get("/api/collections/heads/snapshots/1/qrels")
    assert qrels.status_code == 200 and qrels.has_header("Content-Disposition")
    assert {"private", "no-store"} <= directives(qrels)


def test_the_https_redirect_carries_the_security_headers(settings):
    settings.SECURE_SSL_REDIRECT = True
    response = Client().get("/accounts/login/")
    assert response.status_code == 301
    assert response["Location"] == "https://testserver/accounts/login/"
    assert response["X-Frame-Options"] == "DENY"
    assert "default-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"


def test_redoc_takes_its_logo_from_this_server(db):
    client = Client()
    page = client.get("/api/redoc/").content.decode()
    assert '<script src="/api/redoc/redoc.standalone.js"></script>' in page
    script = client.get("/api/redoc/redoc.standalone.js")
    code = b"".join(script.streaming_content) if script.streaming else script.content
    assert script.status_code == 200
    assert b"cdn.redoc.ly" not in code
    assert b'src:"/static/api/redoc-logo.svg"' in code
