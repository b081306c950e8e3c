"""Every page, every role, in real Chromium (issue 24's acceptance): axe-core finds no
violation, nothing scrolls the page sideways at 390 px (nor at 200 % zoom: a 640 px
viewport at device scale 2), and no page links to a page its reader cannot open.

The pages come from the URLconf itself (``tests/test_get_writes_nothing.named_patterns``,
so a new page is checked without anyone adding it here), filled with the demo's objects,
plus a collection with two assessors per item and a pair awaiting adjudication. Each is
checked as it loads, with every ``<details>`` opened, and in the states a person reaches:
the review queue with a task and its keys dialog open, the forms after a refused submit
(the focus must be on the error summary then).

axe-core comes from the ``axe-playwright-python`` wheel (no CDN, no network).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import get_resolver, reverse

from judgments.models import Collection, ReviewTask, Role
from judgments.services import (
    freeze_snapshot,
    queue_focus,
    queue_unjudged,
    record_assessment,
    set_membership,
    update_collection_settings,
)
from scoring.models import Evaluation
from tests.browser.conftest import NAVIGATION_TIMEOUT_MS, TIMEOUT_MS
from tests.factories import make_collection, make_item, make_query
from tests.test_get_writes_nothing import named_patterns

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROLES = ("reviewer", "evaluator", "admin")
#: Named URLs that are no page (POST endpoints, downloads, redirects, the admin, the API).
NOT_PAGES = re.compile(
    r"(^api|api-|:api|healthz|logout|password_reset|password_change|login|sso-|admin:|"
    r"-claim$|-judge$|-skip$|-undo$|-settle$|-decide$|-freeze$|bulk-status|-score$|"
    r"job-retry|job-cancel|judges:start|judges:policy|snapshot-diff-pick|compare-focus$|"
    r"compare-latest$|-download$|collection-bundle)"
)
#: The elements that stick out of the viewport, outside any scrolling region: what to fix.
WIDEST = """() => {
  const limit = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    if (el.closest(".scroll, [role=region]") && !el.matches(".scroll, [role=region]")) continue;
    const right = Math.round(el.getBoundingClientRect().right);
    const name = `${el.tagName.toLowerCase()}.${[...el.classList].join(".")}#${el.id}`;
    if (right > limit) out.push(`${name} ${right}`);
  }
  return out.slice(-4).join("; ");
}"""
#: Per role: (page, [(field, value)], submit button) that the server refuses.
_EVIDENCE = (
    "/c/demo-handbook/q/q001/",
    [("#id_groups", "no-such-item")],
    "text=Save evidence condition",
)
_SCORING = (
    "/c/demo-handbook/evaluations/new/",
    [("#id_ks", "0")],
    "button:has-text('Score')",
)
_UPLOAD = (
    "/c/demo-handbook/runs/",
    [("#id_file", b"q001 Q0 d0001 1 1.0 t\n"), ("#id_name", "not a slug!")],
    "text=Upload and import",
)
_NEW_COLLECTION = (
    "/c/new/",
    [("#id_scale", "0 no\nyes"), ("#id_slug", "not a slug!")],
    "text=Create the collection",
)
_MEMBER = ("/c/demo-handbook/members/", [("#id_add-user", "nobody")], "button:text-is('Add')")
ERROR_STATES = {
    "reviewer": (_EVIDENCE,),
    "evaluator": (_SCORING, _UPLOAD),
    "admin": (_SCORING, _NEW_COLLECTION, _MEMBER),
}
WIDTHS = ({"width": 390, "height": 800}, {"width": 640, "height": 800, "scale": 2})


def page_urls(demo: dict[str, Any]) -> list[str]:
    values = {
        "slug": "demo-handbook",
        "name": "pipeline",
        "judge": "local-baseline",
        "number": 1,
        "a": 1,
        "b": 1,
        "external_id": "q001",
        "qid": "q001",
    }
    urls = []
    for name, route, params in named_patterns(get_resolver().url_patterns):
        if route.startswith(("api/", "admin/")) or NOT_PAGES.search(name):
            continue
        kwargs = {p: values.get(p) for p in params}
        if "pk" in params:
            kwargs["pk"] = demo["job"] if "jobs" in route else demo["evaluation"]
        url = reverse(name, kwargs=kwargs)
        if "compare" in name:
            url += "?a={}&b={}".format(*demo["pair"])
        urls.append(url)
    urls += [
        "/c/demo-handbook/compare/",  # no pair chosen yet
        "/c/demo-handbook/runs/lexical/q/q001/",
        "/c/pairs/",
        "/c/pairs/adjudicate/",
        "/c/pairs/agreement/",
        "/c/pairs/review/",
        "/c/demo-handbook/review/?scope=demo-focus",  # a focus set (issue 28)
        "/c/pairs/q/A/",
        "/accounts/tokens/",  # named "api-tokens", which NOT_PAGES leaves out
        "/c/pairs/snapshots/",  # per-assessor downloads of v1
        f"/jobs/{demo['bundle_job']}/",  # a bundle export, done: its download link
        "/no/such/page/",
    ]
    return urls


@pytest.fixture
def demo(settings, job_dir) -> dict[str, Any]:
    settings.DEBUG = True  # load_demo's users need it
    call_command("load_demo", stdout=io.StringIO())
    settings.DEBUG = False
    users = get_user_model().objects.in_bulk(ROLES, field_name="username")
    # A collection with two assessors per item: a pair awaiting adjudication, one open.
    pairs = make_collection(
        slug="pairs",
        name="Pairs",
        guidelines="Grade 2 or more when the item answers the query.\n" * 30,
    )
    pairs = update_collection_settings(
        collection=pairs, assessors_per_item=2, resolution_policy="adjudicate"
    )
    for username, role in (("reviewer", Role.REVIEWER), ("evaluator", Role.EVALUATOR)):
        set_membership(collection=pairs, user=users[username], role=role)
    query = make_query(pairs, external_id="A", text="How do I reset my password?")
    items = [make_item(pairs, external_id=i, title=f"Item {i}") for i in ("a", "b")]
    queue_unjudged(
        collection=pairs,
        pairs=[(query.pk, item.pk, r) for r, item in enumerate(items, 1)],
        source="run demo",
    )
    for username, grade in (("evaluator", 0), ("admin", 3)):
        record_assessment(query=query, item=items[0], grade=grade, assessor=users[username])
    # A focus set: the review queue scoped to it (the compare page's pairs, by name).
    demo_collection = Collection.objects.get(slug="demo-handbook")
    pending = ReviewTask.objects.filter(collection=demo_collection, status="pending")
    queue_focus(
        collection=demo_collection,
        name="demo-focus",
        pairs=[(t.query.external_id, t.item.external_id) for t in pending.order_by("pk")[:3]],
        by=users["evaluator"],
        description="three pairs asked for by name",
    )
    freeze_snapshot(collection=pairs, by=None)
    lexical = Evaluation.objects.get(run__name="lexical")
    titles = Evaluation.objects.get(run__name="titles")
    from jobs.models import Job, JobKind, JobState

    job = Job.objects.create(
        kind=JobKind.SNAPSHOT_FREEZE,
        state=JobState.FAILED,
        collection=Collection.objects.get(slug="demo-handbook"),
        created_by=users["evaluator"],
        label="Freeze",
        task_path="judgments.tasks.freeze_task",
        error="the database refused the freeze (a test)",
    )
    from django.core.files.base import ContentFile
    from django.core.files.storage import storages

    stored = storages["jobs"].save(
        "outputs/demo/demo-handbook.bundle.jsonl",
        ContentFile(run_command_output("export_collection", "demo-handbook")),
    )
    bundle_job = Job.objects.create(
        kind=JobKind.BUNDLE_EXPORT,
        state=JobState.DONE,
        collection=Collection.objects.get(slug="demo-handbook"),
        created_by=users["admin"],
        label="Export demo-handbook (live) as a bundle",
        task_path="judgments.tasks.bundle_export_task",
        result={
            "summary": "Wrote demo-handbook.bundle.jsonl: 1,825 lines.",
            "file": stored,
            "download_name": "demo-handbook.bundle.jsonl",
        },
    )
    return {
        "users": users,
        "job": job.pk,
        "bundle_job": bundle_job.pk,
        "evaluation": Evaluation.objects.filter(run__name="pipeline").order_by("pk").last().pk,
        "pair": (lexical.pk, titles.pk),
    }


def run_command_output(*args: str) -> bytes:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().encode("utf-8")


def settle(page: Any, condition: str, *, tries: int = 50) -> bool:
    """Wait (up to 5 s) until ``condition`` holds on the page. Polled with ``evaluate``:
    ``wait_for_function`` evaluates its predicate as a string, which the site's
    Content-Security-Policy (no 'unsafe-eval') refuses."""
    for _ in range(tries):
        if page.evaluate(condition):
            return True
        page.wait_for_timeout(100)
    return False


class Checker:
    """One role's browser contexts (390 px, 640 px at scale 2, 1280 px) and what they found."""

    def __init__(self, browser: Any, base_url: str, user: Any) -> None:
        from axe_playwright_python.sync_playwright import Axe

        self.axe = Axe()
        self.user = user
        self.problems: list[str] = []
        client = Client()
        client.force_login(user)
        self.client = client
        cookie = client.cookies["sessionid"].value
        self.contexts = []
        self.pages = {}
        for size in WIDTHS:
            context = browser.new_context(
                base_url=base_url,
                viewport={"width": size["width"], "height": size["height"]},
                device_scale_factor=size.get("scale", 1),
            )
            context.set_default_timeout(TIMEOUT_MS * 2)
            # A comparison computes its bootstraps in the request: seconds on an idle
            # machine, far more on a loaded one.
            context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS * 6)
            host = urlsplit(base_url).hostname
            context.add_cookies(
                [{"name": "sessionid", "value": cookie, "domain": host, "path": "/"}]
            )
            page = context.new_page()
            page.on(
                "console",
                lambda m, p=page: (
                    self.problems.append(f"{p.url}: CSP: {m.text}")
                    if "Content Security Policy" in m.text
                    else None
                ),
            )
            self.contexts.append(context)
            self.pages[size["width"]] = page

    def close(self) -> None:
        for context in self.contexts:
            context.close()

    def note(self, where: str, what: str) -> None:
        line = f"{self.user.username} {where}: {what}"
        self.problems.append(line)
        print(line, flush=True)  # seen at once with -s, on a slow machine

    def check_state(self, page: Any, state: str) -> None:
        """axe and the sideways scroll, on the page as it is now."""
        width = page.viewport_size["width"]
        where = f"{page.url} [{state}, {width} px]"
        scroll, client = page.evaluate(
            "[document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]"
        )
        if scroll > client:
            wide = page.evaluate(WIDEST)
            self.note(where, f"scrolls sideways ({scroll} > {client} px): {wide}")
        if width == 390:
            # Not while the queue's panel fetches the next task (it is dimmed meanwhile).
            settle(page, "() => !document.querySelector('[aria-busy=true]')")
            result = self.axe.run(page)
            for v in result.response["violations"]:
                targets = "; ".join(" ".join(n["target"]) for n in v["nodes"][:3])
                self.note(where, f"axe {v['id']} ({len(v['nodes'])}): {targets}")

    def visit(self, url: str, widths: tuple[int, ...] = (390, 640)) -> int:
        status = 0
        for width in widths:
            page = self.pages[width]
            response = page.goto(url, wait_until="load")
            status = response.status if response else 0
            self.check_state(page, "loaded")
            if page.locator("details:not([open])").count():
                page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
                self.check_state(page, "details open")
        return status

    def links_on(self, url: str) -> set[str]:
        page = self.pages[390]
        hrefs = page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href)")
        found = set()
        for href in hrefs:
            parts = urlsplit(urljoin(page.url, href))
            if parts.netloc != urlsplit(page.url).netloc or "format=" in parts.query:
                continue
            if parts.path.startswith(("/api/", "/admin/", "/static/")):
                continue
            found.add(parts.path + (f"?{parts.query}" if parts.query else ""))
        return found


@pytest.fixture
def checker(browser, live_server, demo) -> Iterator[Any]:
    made: list[Checker] = []

    def make(username: str) -> Checker:
        c = Checker(browser, live_server.url, demo["users"][username])
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def test_every_page_every_role_axe_clean_fits_390_px_and_links_only_to_what_opens(checker, demo):
    problems: list[str] = []
    roles = [r for r in ROLES if r in os.environ.get("VERITY_EVERY_PAGE_ROLES", ",".join(ROLES))]
    for role in roles:
        c = checker(role)
        links: dict[str, str] = {}
        # 200 % zoom (640 px at scale 2) lays out as 320 px: checked as the admin, who
        # sees every page; 390 px (and axe) as every role.
        widths = (390, 640) if role == "admin" else (390,)
        for url in page_urls(demo):
            status = c.visit(url, widths)
            if status == 200:
                for link in c.links_on(url):
                    links.setdefault(link, url)
        # The review queue with a task on screen (its script claims one) and the keys dialog.
        for queue in ("/c/demo-handbook/review/", "/c/pairs/review/"):
            page = c.pages[390]
            page.goto(queue, wait_until="load")
            page.locator("[data-task], .query-done, .empty-queue").first.wait_for()
            page.keyboard.press("?")
            if not page.locator("#keys-dialog[open]").count():
                c.note(queue, "? did not open the keys dialog")
            else:
                top = page.evaluate("document.getElementById('keys-dialog').scrollTop")
                if top:
                    c.note(queue, f"the keys dialog opens scrolled ({top} px from its top)")
                c.check_state(page, "keys dialog")
        # Refused submits: the error summary (or the error) gets the focus, and axe finds
        # nothing wrong with the page that says so.
        for url, fill, submit in ERROR_STATES.get(role, ()):
            page = c.pages[390]
            page.goto(url, wait_until="load")
            for selector, value in fill:
                if isinstance(value, bytes):  # a file input
                    page.set_input_files(
                        selector, {"name": "run.trec", "mimeType": "text/plain", "buffer": value}
                    )
                else:
                    page.fill(selector, value)
            with page.expect_navigation(wait_until="load"):
                page.click(submit)
            # verity.js moves it as the page loads; a focus left on the body is reported below
            settle(page, "() => document.activeElement !== document.body")
            focused = page.evaluate(
                "document.activeElement && (document.activeElement.id || "
                "document.activeElement.className)"
            )
            if focused not in ("error-summary", "evidence-error"):
                c.note(url, f"after a refused submit the focus is on {focused!r}")
            c.check_state(page, "refused submit")
        if role == "admin":  # the settings page's preview of a change, keyboard only
            page = c.pages[390]
            page.goto("/c/demo-handbook/settings/", wait_until="load")
            page.fill("#id_assessors_per_item", "2")
            page.focus("button:has-text('Preview the changes')")
            with page.expect_navigation(wait_until="load"):
                page.keyboard.press("Enter")
            settle(page, "() => document.activeElement !== document.body")
            if page.evaluate("document.activeElement && document.activeElement.id") != "plan":
                c.note("/c/demo-handbook/settings/", "the preview does not get the focus")
            if "opens" not in page.inner_text("#plan"):
                c.note("/c/demo-handbook/settings/", "the preview does not count the tasks")
            c.check_state(page, "settings preview")
        for link, where in sorted(links.items()):
            status = c.client.get(link).status_code
            if status not in (200, 302):
                c.note(where, f"links to {link}, which answers {status}")
        problems += c.problems
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)
