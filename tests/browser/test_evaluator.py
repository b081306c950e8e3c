"""The evaluator's acceptance, in real Chromium, on the ``make run`` demo: the same
commands ``make run`` runs (migrate, load_demo, the web server and a jobs worker), in
processes of their own on a fresh SQLite file, and no shell once the browser is open.

As ``evaluator``: upload fixtures/recall-example/run.trec under a new name through the
form and watch its job reach done; freeze; score it at k = 2 through the form and read
macro R@2 44.44% and pooled 40.00% on the report; open the diff between the two snapshots
and the run's ranked list for a query, and judge its unjudged item with a digit key.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import ARTIFACTS

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "fixtures" / "recall-example" / "run.trec"
#: Jobs wait for the worker and run in another process: give them time on a busy machine.
JOB_TIMEOUT_MS = 60_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def make_run_demo(tmp_path_factory) -> Iterator[str]:
    """What ``make run`` starts: the demo on a fresh database, the server and a worker."""
    var = tmp_path_factory.mktemp("make-run")
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERITY_")}
    env.pop("DATABASE_URL", None)
    env.update(VERITY_VAR_DIR=str(var), DEBUG="1", AXES_ENABLED="0")
    manage = [sys.executable, "manage.py"]
    for args in (["migrate", "--no-input", "-v", "0"], ["load_demo"]):
        done = subprocess.run([*manage, *args], cwd=REPO, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
    port = free_port()
    log = (var / "processes.log").open("w")
    processes = [
        subprocess.Popen(
            [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        ),
        subprocess.Popen(
            [*manage, "jobs_worker"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT
        ),
    ]
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.2)
    try:
        yield url
    finally:
        for p in processes:
            p.terminate()
        for p in processes:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()


def test_evaluator_uploads_freezes_scores_and_reads_the_founding_numbers(
    browser, make_run_demo, request
):
    context = browser.new_context(base_url=make_run_demo, viewport={"width": 1366, "height": 900})
    context.set_default_timeout(10_000)
    context.set_default_navigation_timeout(30_000)
    page = context.new_page()
    try:
        run_acceptance(page)
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "evaluator-acceptance.png"), full_page=True)
        raise
    finally:
        context.close()


def run_acceptance(page) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill("evaluator")
    page.get_by_label("Password").fill("evaluator")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/$"))

    # The collection page shows the evaluator's panel; upload through its form.
    page.get_by_role("link", name=re.compile("Recall example")).click()
    panel = page.locator(".evaluator-panel")
    expect(panel).to_contain_text("Snapshots 1")
    panel.get_by_role("link", name="Upload a run").click()
    page.get_by_label("Run file").set_input_files(str(RUN))
    page.get_by_label("Name", exact=True).fill("acceptance")
    page.get_by_role("button", name="Upload and import").click()

    # The job's page follows it to the end, then says what was pooled.
    expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))
    expect(page.locator('[data-field="state"], .job-state').first).to_be_visible()
    expect(page.locator(".job-state")).to_have_text("done", timeout=JOB_TIMEOUT_MS)
    expect(page.get_by_role("status")).to_contain_text("Imported run 'acceptance'")
    expect(page.locator(".job-details")).to_contain_text(
        "pool depth 10: 1 unjudged item found, 1 new to the review queue"
    )

    # Freeze: the new unjudged marker makes v2.
    page.get_by_role("link", name="Recall example (founding text)").click()
    page.locator(".evaluator-panel").get_by_role("link", name="Snapshots").click()
    page.get_by_label("Note").fill("after the acceptance run")
    page.get_by_role("button", name="Freeze").click()
    expect(page.locator(".job-state")).to_have_text("done", timeout=JOB_TIMEOUT_MS)
    expect(page.get_by_role("status")).to_contain_text("Froze v2: 8 judgments, 3 queries, 1")

    # Score it at k = 2 through the form; the job lands on the report.
    page.get_by_role("link", name="Recall example (founding text)").click()
    page.locator(".evaluator-panel").get_by_role("link", name="Score a run").click()
    page.get_by_label("Run and stage").select_option("acceptance/default")
    expect(page.get_by_label("Snapshot")).to_have_value("2")  # the latest by default
    page.get_by_label("Cutoffs k").fill("2")
    page.get_by_role("button", name="Score").click()
    page.wait_for_url(re.compile(r"/evaluations/\d+/$"), timeout=JOB_TIMEOUT_MS)
    r2 = page.locator('#aggregate-table tr[data-measure="R@2"]')
    expect(r2.locator('[data-agg="macro"]')).to_have_text("44.44%")
    expect(r2.locator('[data-agg="pooled"]')).to_have_text("40.00%")

    # The ranked list of the run for query C, from the report's per-query row.
    page.locator('#query-table tr[data-query="C"]').get_by_role("link", name="list").click()
    expect(page).to_have_url(re.compile(r"/runs/acceptance/q/C/$"))
    row = page.locator('tr[data-item="y"]')
    expect(row).to_contain_text("unjudged, in the review queue")
    # Judge it as in the queue: focus its row, press a grade's digit (once the page's
    # deferred script listens: the server-rendered row is there before it runs).
    page.wait_for_load_state("load")
    row.focus()
    page.keyboard.press("0")
    expect(page.locator(".msg.success")).to_contain_text("Saved 0 not relevant for item 'y'")
    expect(page.locator('tr[data-item="y"]')).to_contain_text("0 not relevant")

    # What changed between the snapshots.
    page.goto("/c/recall-example/snapshots/")
    page.locator("#v2").get_by_role("link", name="diff from v1").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("What changed from v1 to v2")
    expect(page.locator('[data-count="unjudged-added"]')).to_have_text("+1")
    expect(page.locator('[data-count="added"]')).to_have_text("0")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "evaluator-diff.png"), full_page=True)
