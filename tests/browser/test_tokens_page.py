"""The API tokens page in a browser: make a scoped token, see its key once, use it, revoke
it; axe-clean and no wider than a 390 px phone (tests/browser/test_every_page.py skips
this page: its URL name starts with "api-")."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from judgments.models import ApiToken
from judgments.services import set_membership
from tests.factories import make_collection, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDEST = """() => {
  const limit = document.documentElement.clientWidth;
  return [...document.querySelectorAll("body *")]
    .filter((el) => !el.closest(".scroll, [role=region]") || el.matches(".scroll, [role=region]"))
    .filter((el) => Math.round(el.getBoundingClientRect().right) > limit)
    .map((el) => `${el.tagName.toLowerCase()}#${el.id}`);
}"""


def api_get(base: str, path: str, key: str) -> tuple[int, dict]:
    request = urllib.request.Request(base + path, headers={"Authorization": f"Token {key}"})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_token_is_made_shown_once_used_and_revoked(page, login, live_server):
    from axe_playwright_python.sync_playwright import Axe
    from playwright.sync_api import expect

    collection = make_collection(slug="handbook", name="Handbook")
    ana = make_user("ana")
    set_membership(collection=collection, user=ana, role="reviewer")
    page.set_viewport_size({"width": 390, "height": 800})
    login(page, ana)
    page.goto("/accounts/tokens/")
    expect(page.get_by_text("You have no token.")).to_be_visible()

    page.get_by_label("Name").fill("nightly export")
    page.get_by_label("Scope").select_option("judge")
    page.get_by_label("Collection").select_option("handbook")
    page.get_by_role("button", name="Create a token").click()
    key = page.get_by_label("Key", exact=True).input_value()
    assert re.fullmatch(r"vt_[a-z0-9]{8}_[\w-]{43}", key)
    token = ApiToken.objects.get(user=ana)
    assert (token.name, token.scope, token.collection_id) == (
        "nightly export",
        "judge",
        collection.pk,
    )
    violations = Axe().run(page).response["violations"]
    assert not violations, [v["id"] for v in violations]
    assert page.evaluate(WIDEST) == []

    status, body = api_get(live_server.url, "/api/collections/", key)
    assert status == 200 and [c["slug"] for c in body["results"]] == ["handbook"]

    page.goto("/accounts/tokens/")
    assert key not in page.content()
    row = page.get_by_role("row", name=re.compile("nightly export"))
    expect(row).to_contain_text(token.prefix)
    expect(row).to_contain_text("judge")
    expect(row).to_contain_text(re.compile(r"UTC from 127\.0\.0\.1"))
    row.get_by_role("button", name="Revoke nightly export").click()
    expect(page.get_by_text("Token 'nightly export' revoked")).to_be_visible()
    expect(page.get_by_role("row", name=re.compile("nightly export"))).to_contain_text("revoked")
    status, body = api_get(live_server.url, "/api/collections/", key)
    assert status == 401 and "was revoked on" in body["detail"]
