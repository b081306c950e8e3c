"""Issue 25's acceptance, end to end in Chromium with no shell: a team lead creates a
collection from DL-style TREC files (two assessors per item, the ``adjudicate`` policy),
adds three reviewers and an adjudicator on the members page; two reviewers label blind
and disagree on one pair; the adjudicator decides it; the lead freezes a snapshot and
downloads its qrels and its bundle from the snapshots page. The bundle, imported into a
fresh, empty database (``manage.py`` in a subprocess, on its own SQLite file), freezes to
the same content hash as the one the page shows.

Only the superuser is made by the fixture; the people's accounts are made in the Django
admin (Verity has no page of its own for accounts), and every step the issue lists goes
through the pages. Jobs (the import, the freeze, the bundle)
run in the live server as their requests commit (the Tasks API's immediate backend).
Each step checks the database too.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from judgments.models import (
    AdjudicationStatus,
    AdjudicationTask,
    Assessment,
    Collection,
    Judgment,
    Membership,
    Snapshot,
)
from tests.browser.conftest import PASSWORD
from tests.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REPO = Path(__file__).resolve().parents[2]

# TREC DL's files: qrels "qid 0 docid grade" (-1: pooled, not judged yet), topics and the
# collection as "id<TAB>text".
QRELS = """\
1037798 0 7067032 2
1037798 0 7067033 0
1037798 0 7067034 -1
1037798 0 7067035 -1
1063750 0 8412684 3
1063750 0 8412685 -1
"""
TOPICS = """\
1037798\twho is robert gray
1063750\twhy did the us volunterilay enter ww1
"""
DOCS = """\
7067032\tRobert Gray (1755-1806) was an American merchant sea-captain, not a café owner.
7067033\tGray is a colour between black and white.
7067034\tCaptain Robert Gray was the first American to circumnavigate the globe.
7067035\tRobert Gray is an Australian poet, born in 1945.
8412684\tThe United States entered World War I in April 1917 after submarine attacks.
8412685\tThe Zimmermann telegram pushed American opinion towards war.
9999999\tA document no qrels line names: not kept.
"""
SCALE = "0 irrelevant\n1 related\n2 highly relevant\n3 perfectly relevant"
# The two reviewers' grades, item → grade: they agree on 7067034, are one apart on
# 8412685 (the policy resolves it to the lower, 1) and three apart on 7067035 (adjudicated).
ANA = {"7067034": "2", "7067035": "3", "8412685": "1"}
BEN = {"7067034": "2", "7067035": "0", "8412685": "2"}
DECIDED = "2"


PEOPLE = ("ana", "ben", "cleo", "dora")


@pytest.fixture
def lead(settings, job_dir):
    """The one account made outside the browser: the superuser who starts it all."""
    # Jobs run in the live server when the request that queues them commits.
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    return make_user("lead", is_superuser=True, is_staff=True, email="lead@example.org")


def create_account(page, username: str) -> None:
    """The Django admin's "Add user", then the e-mail address on the user's change page:
    Verity has no page of its own for accounts (single sign-on makes them, or the admin)."""
    page.goto("/admin/auth/user/add/")
    page.get_by_label("Username").fill(username)
    page.locator("#id_password1").fill(PASSWORD)
    page.locator("#id_password2").fill(PASSWORD)
    with page.expect_navigation(wait_until="load"):
        page.get_by_role("button", name="Save", exact=True).click()
    assert re.search(r"/admin/auth/user/\d+/change/$", page.url), page.url
    page.get_by_label("Email address").fill(f"{username}@example.org")
    with page.expect_navigation(wait_until="load"):
        page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")


def log_in(page, username: str) -> None:
    """As ``login`` does, with the password the admin gave (nothing set in the ORM)."""
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"^https?://[^/]+/$"))


def write_trec_files(folder: Path) -> dict[str, Path]:
    files = {"qrels": QRELS, "topics": TOPICS, "docs": DOCS}
    paths = {}
    for role, text in files.items():
        paths[role] = folder / f"dl-{role}.txt"
        paths[role].write_text(text, encoding="utf-8")
    return paths


def create_collection(page, files: dict[str, Path]) -> None:
    page.goto("/c/new/")
    page.get_by_label("Name", exact=True).fill("DL passages, spring round")
    page.get_by_label("Slug").fill("dl-spring")
    page.get_by_label("Labeling unit").select_option("document")
    page.get_by_label("Corpus boundary").fill("MS MARCO passages named by the DL qrels.")
    page.get_by_label("Scale", exact=True).fill(SCALE)
    page.get_by_label("Relevant from grade").fill("2")
    page.get_by_label("Guidelines").fill("# Grading\n\nGrade **3** when the passage answers.")
    page.get_by_label("Assessors per item").fill("2")
    page.get_by_label("Resolution policy").select_option("adjudicate")
    page.get_by_label("Adjudicate distance").fill("1")
    page.get_by_label("TREC files: qrels and topics (and documents)").check()
    page.get_by_label("TREC qrels").set_input_files(files["qrels"])
    page.get_by_label("TREC topics").set_input_files(files["topics"])
    page.get_by_label("Documents (optional)").set_input_files(files["docs"])
    with page.expect_navigation(wait_until="load"):
        page.get_by_role("button", name="Create the collection").click()
    assert re.search(r"/jobs/\d+/$", page.url), page.url
    expect(page.locator("[data-field=state], .job-state").first).to_have_text("done")
    expect(page.locator(".msg.success")).to_contain_text("Created collection 'dl-spring'")
    with page.expect_navigation(wait_until="load"):
        page.get_by_role("link", name="Open the collection").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("DL passages, spring round")


def add_member(page, who: str, role: str = "reviewer", adjudicates: bool = False) -> None:
    page.get_by_label("Username or e-mail address").fill(who)
    page.locator("#id_add-role").select_option(role)
    if adjudicates:
        page.locator("#id_add-can_adjudicate").check()
    with page.expect_navigation(wait_until="load"):
        page.get_by_role("button", name="Add", exact=True).click()
    expect(page.locator(".messages")).to_contain_text(f"as {role}")


def label_blind(page, username: str, grades: dict[str, str], other: str) -> None:
    """Log in and grade every task of the queue by keyboard (item id → grade key),
    moving to the next query when one is done; nothing names the other assessor."""
    log_in(page, username)
    page.goto("/c/dl-spring/review/")
    left = dict(grades)
    while left:
        page.locator("[data-task], .query-done").first.wait_for()
        done = page.locator(".query-done")
        if done.count():
            finished = done.get_attribute("data-finished")
            expect(done).to_contain_text("nothing left for you to assess")
            page.keyboard.press("l")  # the next query
            # the panel moves on before the loop looks again
            expect(page.locator(f".query-done[data-finished='{finished}']")).to_have_count(0)
            continue
        item = page.locator(".item-card .eyebrow code").inner_text()
        assert item in left, f"{username} was served {item}, not one of {sorted(left)}"
        # Blind: nothing on the page names the other assessor or shows their grade.
        expect(page.locator("main")).not_to_contain_text(other)
        expect(page.locator(".task-side")).not_to_contain_text("assessment")
        page.keyboard.press(left[item])
        expect(page.locator("#queue-status")).to_contain_text(
            f"Saved your assessment {left.pop(item)} "
        )
        expect(page.locator("#queue-status")).to_contain_text(f"item '{item}'")
        expect(page.locator(".item-card .eyebrow code", has_text=item)).to_have_count(0)
    # Nothing left for this reviewer; the query page shows no resolved label either.
    page.goto("/c/dl-spring/q/1037798/")
    expect(page.locator("main")).not_to_contain_text(other)


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env={**env, "PYTHONIOENCODING": "utf-8"},
        capture_output=True,
        encoding="utf-8",
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def parse_qrels(text: str) -> dict[tuple[str, str], int]:
    rows = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            qid, _zero, docid, grade = line.split()
            rows[(qid, docid)] = int(grade)
    return rows


def test_a_team_lead_sets_up_and_runs_a_project_in_the_browser(new_page, login, lead, tmp_path):
    files = write_trec_files(tmp_path)
    page = new_page()
    login(page, lead)

    # 0. The people's accounts, in the Django admin.
    for username in PEOPLE:
        create_account(page, username)

    # 1. The lead creates the collection from the TREC files: a job imports them.
    create_collection(page, files)
    c = Collection.objects.get(slug="dl-spring")
    assert (c.assessors_per_item, c.resolution_policy, c.adjudicate_distance) == (
        2,
        "adjudicate",
        1,
    )
    assert (c.relevant_grade, [g["name"] for g in c.scale][3]) == (2, "perfectly relevant")
    assert Membership.objects.get(collection=c, user=lead).role == "admin"
    assert sorted(c.items.values_list("external_id", flat=True)) == sorted(
        {line.split()[2] for line in QRELS.splitlines()}
    )
    expect(page.locator("main")).to_contain_text("2 assessors per item")

    # 2. The members page: three reviewers (one by e-mail) and an adjudicator, granted
    # on her row after she joined.
    page.goto("/c/dl-spring/members/")
    add_member(page, "ana")
    add_member(page, "ben@example.org")
    add_member(page, "cleo")
    add_member(page, "dora", role="evaluator")
    row = page.get_by_role("form", name="Access of dora")
    row.get_by_label("may adjudicate").check()
    with page.expect_navigation(wait_until="load"):
        row.get_by_role("button", name="Save").click()
    expect(page.locator(".messages")).to_contain_text("Saved dora's access.")
    members = dict(Membership.objects.filter(collection=c).values_list("user__username", "role"))
    assert members == {
        "lead": "admin",
        "ana": "reviewer",
        "ben": "reviewer",
        "cleo": "reviewer",
        "dora": "evaluator",
    }
    assert Membership.objects.get(collection=c, user__username="dora").can_adjudicate
    # The settings page's history has every one of those changes, with who made them.
    page.goto("/c/dl-spring/settings/")
    history = page.locator("table.history")
    expect(history).to_contain_text("member.adjudicate dora")
    for name in ("ana", "ben", "cleo", "dora"):
        expect(history).to_contain_text(f"member.add {name}")

    # 3. Two reviewers label blind, in their own browsers, and disagree on 7067035.
    label_blind(new_page(), "ana", ANA, other="ben")
    label_blind(new_page(), "ben", BEN, other="ana")
    assessed = sorted(
        Assessment.objects.filter(collection=c, assessor__isnull=False).values_list(
            "item__external_id", "assessor__username", "grade"
        )
    )
    assert assessed == sorted(
        [(i, "ana", int(g)) for i, g in ANA.items()] + [(i, "ben", int(g)) for i, g in BEN.items()]
    )
    waiting = AdjudicationTask.objects.get(collection=c, status=AdjudicationStatus.OPEN)
    assert waiting.item.external_id == "7067035"
    assert not Judgment.objects.filter(query__collection=c, item__external_id="7067035").exists()

    # 4. The adjudicator decides it.
    judge = new_page()
    log_in(judge, "dora")
    judge.goto("/c/dl-spring/adjudicate/")
    card = judge.locator("[data-adjudicate]")
    expect(card).to_contain_text("7067035")
    expect(card.locator("tbody tr")).to_have_count(2)
    expect(card).to_contain_text("3 perfectly relevant")
    expect(card).to_contain_text("0 irrelevant")
    judge.keyboard.press(DECIDED)
    expect(judge.locator(".messages")).to_contain_text(
        "Decided 2 highly relevant for item '7067035'"
    )
    decided = Judgment.objects.get(query__collection=c, item__external_id="7067035")
    assert (decided.grade, decided.reviewer.username) == (2, "dora")

    # 5. The lead freezes v1 and downloads its qrels and its bundle.
    page.goto("/c/dl-spring/snapshots/")
    page.get_by_label("Note").fill("after the spring round")
    with page.expect_navigation(wait_until="load"):
        page.get_by_role("button", name="Freeze").click()
    expect(page.locator(".msg.success")).to_be_visible()
    page.goto("/c/dl-spring/snapshots/")
    row = page.locator("#v1")
    expect(row).to_contain_text("after the spring round")
    shown = row.locator("code[title^='sha256:']").get_attribute("title").removeprefix("sha256:")
    v1 = Snapshot.objects.get(collection=c, number=1)
    assert shown == v1.content_hash

    row.get_by_label("What to download of v1").select_option("trec")
    with page.expect_download() as qrels_download:
        row.get_by_role("button", name="Download").click()
    qrels = parse_qrels(Path(qrels_download.value.path()).read_text(encoding="utf-8"))
    assert qrels == {
        ("1037798", "7067032"): 2,  # from the qrels file
        ("1037798", "7067033"): 0,
        ("1037798", "7067034"): 2,  # both reviewers said 2
        ("1037798", "7067035"): 2,  # the adjudicator's decision
        ("1063750", "8412684"): 3,
        ("1063750", "8412685"): 1,  # 1 and 2: the lower median, within the distance
    }

    # Per assessor: ana's own grades (the imported labels are the "import" assessor's).
    page.goto("/c/dl-spring/snapshots/")
    row = page.locator("#v1")
    row.get_by_label("What to download of v1").select_option("assessor:ana")
    with page.expect_download() as ana_download:
        row.get_by_role("button", name="Download").click()
    ana_qrels = parse_qrels(Path(ana_download.value.path()).read_text(encoding="utf-8"))
    assert ana_qrels == {
        ("1063750" if i.startswith("84") else "1037798", i): int(g) for i, g in ANA.items()
    }

    page.goto("/c/dl-spring/snapshots/")
    row = page.locator("#v1")
    row.get_by_label("What to download of v1").select_option("bundle")
    with page.expect_navigation(wait_until="load"):
        row.get_by_role("button", name="Download").click()
    assert re.search(r"/jobs/\d+/$", page.url), page.url  # a bundle is written by a job
    expect(page.locator("[data-field=state]")).to_have_text("done")
    with page.expect_download() as bundle_download:
        page.get_by_role("link", name=re.compile(r"^Download ")).click()
    bundle = tmp_path / bundle_download.value.suggested_filename
    bundle_download.value.save_as(bundle)
    head = bundle.read_text(encoding="utf-8").splitlines()[0]
    assert '"assessors_per_item": 2, "resolution_policy": "adjudicate"' in head
    out = io.StringIO()
    call_command("export_collection", "dl-spring", "--snapshot", "1", stdout=out)
    assert bundle.read_bytes() == out.getvalue().encode("utf-8")  # what the command writes

    # 6. Into a fresh, empty database: the same snapshot hash.
    var = tmp_path / "fresh"
    var.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERITY_")}
    env.pop("DATABASE_URL", None)
    env.update(VERITY_VAR_DIR=str(var), DEBUG="1", DJANGO_SETTINGS_MODULE="config.settings")
    manage(env, "migrate", "--no-input", "-v", "0")
    imported = manage(env, "import_collection", str(bundle))
    assert "Imported into collection 'dl-spring' (created)" in imported
    frozen = manage(env, "freeze_snapshot", "dl-spring")
    assert f"sha256:{shown}" in frozen, frozen
    assert (var / "verity.sqlite3").exists()
    again = manage(env, "export_collection", "dl-spring", "--snapshot", "1")
    assert again.encode("utf-8") == bundle.read_bytes()  # the same bytes back
