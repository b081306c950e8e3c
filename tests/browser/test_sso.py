"""Single sign-on in a browser: from Verity's login page through the real OpenID provider
of tests/oidc_provider (its own process, its own login form) and back, onto the
collections page, with the role the IdP group maps to."""

from __future__ import annotations

import re

import pytest

from judgments.models import Membership, Role
from judgments.sso.config import forget_provider_metadata
from tests.factories import make_collection, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "provider password 1"


def axe_violations(page) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    return [v["id"] for v in Axe().run(page).response["violations"]]


@pytest.fixture
def sso(settings, oidc_provider, live_server):
    oidc_provider.reset()
    oidc_provider.allow_redirect_uri(f"{live_server.url}/oidc/callback/")
    for name, value in oidc_provider.verity_settings().items():
        setattr(settings, name, value)
    settings.VERITY_OIDC_GROUP_ROLES = "search-leads=web-search:admin"
    forget_provider_metadata()
    yield oidc_provider
    forget_provider_metadata()


def test_signing_in_through_the_provider_lands_on_the_collections_page_with_the_mapped_role(
    page, sso
):
    from playwright.sync_api import expect

    web = make_collection(slug="web-search", name="Web search")
    ana = make_user("ana")
    sso.add_user("ana", PASSWORD, email="ana@example.org", groups=["search-leads"])

    page.goto("/")
    assert axe_violations(page) == []  # the login page with both ways in
    page.get_by_role("link", name="Sign in with Test IdP").click()
    expect(page.get_by_role("heading", name="Test identity provider")).to_be_visible()
    assert page.url.startswith(sso.url)
    page.get_by_label("Username").fill("ana")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    page.wait_for_url(re.compile(r"^http://localhost:\d+/$"))
    expect(page.get_by_role("heading", name="Collections", exact=True)).to_be_visible()
    expect(page.locator(".who")).to_have_text("ana")
    membership = Membership.objects.get(user=ana, collection=web)
    assert (membership.role, membership.granted_by_group) == (Role.ADMIN, "search-leads")
    page.get_by_role("link", name="Web search").click()
    # Reviewer statistics: a link only a collection admin sees.
    expect(page.get_by_role("link", name="Reviewer statistics")).to_be_visible()
    assert sso.challenge_methods() == ["S256"]


def test_an_unknown_user_sees_why_and_what_to_do(page, sso):
    from playwright.sync_api import expect

    sso.add_user("zoe", PASSWORD)

    page.goto("/accounts/login/")
    page.get_by_role("link", name="Sign in with Test IdP").click()
    page.get_by_label("Username").fill("zoe")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()

    expect(page.get_by_role("heading", name="Sign-in with Test IdP refused")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text(
        "Ask an administrator of this Verity to add you (username 'zoe')"
    )
    assert axe_violations(page) == []
    page.get_by_role("link", name="Back to the login page").click()
    expect(page.get_by_role("heading", name="Log in to Verity")).to_be_visible()
