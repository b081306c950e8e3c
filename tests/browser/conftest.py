"""Browser tests: Playwright's sync API driving Debian's Chromium against ``live_server``.

Marked ``@pytest.mark.browser``. Without ``/usr/bin/chromium`` they are skipped with the
reason in the summary, except when ``VERITY_REQUIRE_BROWSER=1`` (CI): then they fail, so
that a missing browser cannot turn the suite into silent skips. One browser serves the
whole session; every test gets fresh contexts (cookies, storage). A failing test leaves
a screenshot of each of its pages in ``test-artifacts/<test name>[-n].png``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Playwright's sync API runs an event loop in the test thread, which makes Django refuse
# ORM calls from it (SynchronousOnlyOperation); the test thread never runs async code.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
REQUIRE_BROWSER_ENV = "VERITY_REQUIRE_BROWSER"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TIMEOUT_MS = 5_000
NAVIGATION_TIMEOUT_MS = 20_000
PASSWORD = "correct horse battery staple"


def _browser_required() -> bool:
    return os.environ.get(REQUIRE_BROWSER_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def _why_no_browser() -> str | None:
    if not CHROMIUM.exists():
        return f"needs Chromium at {CHROMIUM} (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "needs the playwright package (pip install playwright)"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # tryfirst: decide before the fixtures (live server, browser) are set up.
    if item.get_closest_marker("browser") is None:
        return
    reason = _why_no_browser()
    if reason is None:
        return
    if _browser_required():
        pytest.fail(f"{reason}. {REQUIRE_BROWSER_ENV}=1 forbids skipping it.", pytrace=False)
    pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        yield browser
        browser.close()


@pytest.fixture
def new_page(browser, live_server, request) -> Iterator[Callable[[], Any]]:
    """Open a page in a fresh browser context (its own cookies) on the live server."""
    contexts: list[Any] = []
    pages: list[Any] = []
    violations: list[str] = []

    def open_page() -> Any:
        context = browser.new_context(
            base_url=live_server.url, viewport={"width": 1366, "height": 800}
        )
        context.set_default_timeout(TIMEOUT_MS)
        # The live server's first request imports the URL conf and compiles templates.
        context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
        contexts.append(context)
        page = context.new_page()
        # The Content-Security-Policy refuses inline script and style: Chromium reports
        # each refusal on the console, and a page that relies on one is a failure.
        page.on(
            "console",
            lambda message: (
                violations.append(f"{page.url}: {message.text}")
                if "Content Security Policy" in message.text
                else None
            ),
        )
        pages.append(page)
        return page

    yield open_page
    call = getattr(request.node, "report_call", None)
    if call is not None and call.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        name = re.sub(r"[^\w.-]+", "_", request.node.name)
        for n, page in enumerate(pages):
            suffix = f"-{n + 1}" if len(pages) > 1 else ""
            try:
                page.screenshot(path=str(ARTIFACTS / f"{name}{suffix}.png"), full_page=True)
            except Exception as e:  # a crashed page must not hide the test's own failure
                print(f"could not save a screenshot of page {n + 1}: {e}")
    for context in contexts:
        context.close()
    assert not violations, "Content-Security-Policy violations:\n" + "\n".join(violations)


@pytest.fixture
def page(new_page) -> Any:
    return new_page()


@pytest.fixture
def login(settings) -> Callable[[Any, Any], None]:
    """Log a user in through the login form, typing like a person."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

    from playwright.sync_api import expect

    def log_in(page: Any, user: Any) -> None:
        user.set_password(PASSWORD)
        user.save(update_fields=["password"])
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill(user.get_username())
        page.get_by_label("Password").fill(PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_url(re.compile(r"^https?://[^/]+/$"))  # the home page, not /accounts/…
        expect(page.get_by_role("heading", name="Collections", exact=True)).to_be_visible()

    return log_in
