"""The evaluator's pages as a browser without JavaScript uses them: the panel on the
collection page, runs and the upload form, the job's page, snapshots (freeze, diff), the
scoring form, the ranked list of a run for one query, and the per-query links."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from jobs.models import Job
from judgments.models import Judgment, Role
from scoring.models import Evaluation, Run
from tests.scoring.conftest import RECALL_EXAMPLE
from tests.scoring.report_helpers import member, three_stage_run

pytestmark = pytest.mark.django_db

RUN = (RECALL_EXAMPLE / "run.trec").read_bytes()


def text(response) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())))


@pytest.fixture
def eve(client, recall_v1):
    user = member(recall_v1.collection, "eve", Role.EVALUATOR)
    client.force_login(user)
    return user


def upload(client, name: str, content: bytes = RUN, filename: str = "run.trec", **fields):
    data = {
        "file": SimpleUploadedFile(filename, content),
        "name": name,
        "order": "score",
        "dedup": "error",
        "pool_depth": 10,
        **fields,
    }
    return client.post("/c/recall-example/runs/", data)


def test_the_panel_is_for_evaluators_only(client, recall_v1):
    client.force_login(member(recall_v1.collection, "ana", Role.REVIEWER))
    reviewer = client.get("/c/recall-example/").content.decode()
    client.force_login(member(recall_v1.collection, "eve", Role.EVALUATOR))
    evaluator = client.get("/c/recall-example/")

    assert "evaluator-panel" not in reviewer
    page = text(evaluator)
    assert "Snapshots 1 Latest: v1" in page
    assert "Runs 0" in page and "Evaluations 0" in page
    assert 'action="/c/recall-example/snapshots/freeze/"' in evaluator.content.decode()


def test_upload_through_the_form_runs_a_job_that_says_what_was_pooled(client, eve, jobs_inline):
    with jobs_inline():
        posted = upload(client, "formed")
    job = Job.objects.get()
    page = client.get(posted["Location"])

    assert posted["Location"] == f"/jobs/{job.pk}/"
    assert page.status_code == 200
    shown = text(page)
    assert "State: done" in shown and "Imported run 'formed': 1 stage, 8 lines." in shown
    assert "pool depth 10: 1 unjudged item found, 1 new to the review queue" in shown
    runs = text(client.get("/c/recall-example/runs/"))
    assert "formed" in runs and "default (4)" in runs


def test_a_running_job_page_has_a_progress_bar_and_reloads_itself_without_script(
    client, eve, settings, job_dir
):
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    posted = upload(client, "waiting")
    html = client.get(posted["Location"]).content.decode()

    assert "<progress" in html and 'data-job-api="/api/jobs/' in html
    assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in html
    assert "jobs/job.js" in html


def test_a_refused_upload_lists_file_and_line_on_the_job_page(client, eve, jobs_inline):
    with jobs_inline():
        posted = upload(client, "dup", RUN + b"A Q0 a 9 0.1 t\n")
    shown = text(client.get(posted["Location"]))

    assert "Failed. run.trec: the run was refused; nothing was imported." in shown
    assert "run.trec line 9:" in shown and not Run.objects.filter(name="dup").exists()


def test_the_form_refuses_a_taken_name_before_any_job(client, eve, jobs_inline):
    with jobs_inline():
        upload(client, "taken")
    again = upload(client, "taken")

    assert again.status_code == 400
    assert "has a run named &#x27;taken&#x27; already" in again.content.decode()
    assert Job.objects.count() == 1


def test_freeze_says_plainly_when_nothing_changed_and_diff_links_queries(client, eve, jobs_inline):
    with jobs_inline():
        same = client.post("/c/recall-example/snapshots/freeze/", {"note": "again"})
    unchanged = text(client.get(same["Location"]))
    Judgment.objects.filter(query__external_id="A", item__external_id="x").update(grade=1)
    with jobs_inline():
        made = client.post("/c/recall-example/snapshots/freeze/", {"note": "regraded"})
    frozen = text(client.get(made["Location"]))
    listing = text(client.get("/c/recall-example/snapshots/"))
    diff = client.get("/c/recall-example/snapshots/1/diff/2/")

    assert "Nothing changed since v1" in unchanged and "no new snapshot was made" in unchanged
    assert "Froze v2: 8 judgments, 3 queries, 0 unjudged markers" in frozen
    assert "v2" in listing and "regraded" in listing and "diff from v1" in listing
    assert (
        "0 unreviewed, 3 reviewed: has relevant items, 0 reviewed: confirmed no answer" in listing
    )
    assert "1 regraded" in text(diff)
    assert 'href="/c/recall-example/q/A/"' in diff.content.decode()
    assert "0 → 1" in text(diff)


def test_the_scoring_form_starts_a_job_that_lands_on_the_report(client, eve, jobs_inline):
    with jobs_inline():
        upload(client, "example")
    form = client.get("/c/recall-example/evaluations/new/?stage=example/default")
    with jobs_inline():
        posted = client.post(
            "/c/recall-example/evaluations/new/",
            {"stage": "example/default", "snapshot": 1, "ks": "2", "unjudged": "nonrel"},
        )
    landed = client.get(posted["Location"])
    report = client.get(landed["Location"])

    assert 'value="example/default" selected' in form.content.decode()
    evaluation = Evaluation.objects.get()
    assert landed["Location"] == f"/c/recall-example/evaluations/{evaluation.pk}/"
    html = report.content.decode()
    # macro R@2 = (1/3 + 1 + 0) / 3, pooled 2/5 (the founding example, by hand)
    assert re.search(r'data-agg="macro">44\.44%<', html) and re.search(r">40\.00%<", html)
    # each per-query row links to the query page and to the run's list for that query
    assert 'href="/c/recall-example/q/C/"' in html
    assert 'href="/c/recall-example/runs/example/q/C/"' in html


def test_the_scoring_form_names_what_is_wrong(client, eve, jobs_inline):
    with jobs_inline():
        upload(client, "example")
    bad = client.post(
        "/c/recall-example/evaluations/new/",
        {"stage": "example/default", "snapshot": 1, "ks": "0,x", "unjudged": "nonrel"},
    )

    assert bad.status_code == 400 and "comma-separated positive integers" in text(bad)
    assert not Job.objects.filter(kind="scoring").exists()


def test_a_reviewer_may_not_score_upload_or_freeze(client, recall_v1):
    client.force_login(member(recall_v1.collection, "ana", Role.REVIEWER))

    assert client.get("/c/recall-example/evaluations/new/").status_code == 403
    assert client.post("/c/recall-example/snapshots/freeze/").status_code == 403
    assert upload(client, "mine").status_code == 403  # a role too weak, as scoring
    assert "Upload a run" not in client.get("/c/recall-example/runs/").content.decode()


def test_the_ranked_list_shows_labels_misses_and_stages_side_by_side(
    client, eve, recall_v1, tmp_path
):
    from scoring.services import import_run

    import_run(collection=recall_v1.collection, path=three_stage_run(tmp_path), name="pipe")

    page = client.get("/c/recall-example/runs/pipe/q/A/")

    html = page.content.decode()
    shown = text(page)
    assert page.status_code == 200
    assert "Stage candidates 4" in shown and "Stage context 2" in shown
    # A's relevant items are a, b, c; the run never returns c.
    assert "Relevant items the run missed 1" in shown and "c — 1 relevant" in shown
    # x is judged 0 in the bundle, y is not judged for A
    row_y = re.search(r'<tr[^>]*data-item="y"[^>]*>(.*?)</tr>', html, re.S)
    assert row_y and "unjudged" in row_y.group(1) and 'data-key="1"' in row_y.group(1)
    assert "data-grade-row" in row_y.group(0) and 'tabindex="0"' in row_y.group(0)
    assert '<input type="hidden" name="next" value="/c/recall-example/runs/pipe/q/A/' in html


def test_a_grade_given_on_the_ranked_list_returns_to_it(client, eve, recall_v1):
    from scoring.services import import_run

    import_run(collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="r")

    saved = client.post(
        "/c/recall-example/q/C/",
        {"action": "grade", "item": "y", "grade": 0, "next": "/c/recall-example/runs/r/q/C/"},
    )
    elsewhere = client.post(
        "/c/recall-example/q/C/",
        {
            "action": "grade",
            "item": "y",
            "grade": 1,
            "expected_version": 1,
            "next": "https://evil.example/",
        },
    )

    assert saved.status_code == 302 and saved["Location"] == "/c/recall-example/runs/r/q/C/"
    assert elsewhere["Location"].startswith("/c/recall-example/q/C/")
    assert "1 relevant" in text(client.get("/c/recall-example/runs/r/q/C/"))


def test_the_upload_form_takes_a_pooling_strategy(client, eve, jobs_inline):
    from judgments.models import PoolArm
    from judgments.services import update_collection_settings

    refused = upload(client, "greedy", pool_strategy="bandit")
    assert refused.status_code == 400
    assert "pools by depth; set its pool_strategy to mtf or bandit first" in text(refused)
    update_collection_settings(collection=eve_collection(eve), pool_strategy="mtf")
    form = client.get("/c/recall-example/runs/").content.decode()
    assert 'name="pool_strategy"' in form and 'placeholder="mtf"' in form
    with jobs_inline():
        posted = upload(client, "floored", pool_strategy="depth 1 + bandit")
    assert posted.status_code == 302
    arms = PoolArm.objects.filter(label="run floored")
    assert arms.exists() and set(arms.values_list("strategy", flat=True)) == {"bandit"}


def eve_collection(user):
    return user.memberships.get().collection
