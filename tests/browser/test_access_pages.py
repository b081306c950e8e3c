"""The tokens page and the audit log's pages in real Chromium: axe-core finds nothing,
nothing scrolls sideways at 390 px nor at 200 % zoom, in the states a person reaches (a
new key shown once, a refused filter, rows with their details open). The full walk of
every page (test_every_page.py) covers them too; this checks them alone, quickly.
"""

from __future__ import annotations

import pytest

from audit.services import record
from judgments.models import Collection
from tests.browser.test_every_page import checker, demo  # noqa: F401  (the fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_tokens_and_audit_pages_are_axe_clean_and_fit_390_px(checker, demo):  # noqa: F811
    collection = Collection.objects.get(slug="demo-handbook")
    admin = demo["users"]["admin"]
    for n in range(3):
        record(
            "member.role",
            actor=admin,
            collection=collection,
            target=f"a-rather-long-username-{n}@example.org",
            before={"role": "reviewer"},
            after={"role": "evaluator", "adjudicator": True},
        )
    record("login.failed", target="someone")
    c = checker("admin")
    for url in (
        "/accounts/tokens/",
        "/audit/",
        "/c/demo-handbook/audit/",
        "/c/demo-handbook/audit/?action=member",
        "/audit/?since=yesterday",  # refused: the error summary
    ):
        assert c.visit(url, (390, 640)) in (200, 400), url
    page = c.pages[390]
    page.goto("/accounts/tokens/", wait_until="load")
    page.fill("#token-name", "nightly qrels export")
    with page.expect_navigation(wait_until="load"):
        page.click("button:has-text('Create a token')")
    assert page.locator("#new-key").count() == 1
    c.check_state(page, "a new key shown")
    assert not c.problems, "\n".join(c.problems)
