"""Issue 24, items 9 and 11-14, without a browser: refusal pages, links only to what
opens, the run page and ranked lists past rank 200, form accessibility, and wording.
Each test fails on main (its docstring says how); tests/browser/test_every_page.py checks
the same pages in Chromium (axe-core, 390 px)."""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import RequestFactory

from jobs.models import Job, JobKind, JobState
from judgments.api.errors import server_error
from judgments.models import Role
from judgments.services import queue_unjudged
from judgments.wording import counted, plural_of
from scoring.services import import_run
from scoring.services.errors import RunImportError
from tests.factories import make_item, make_query
from tests.scoring.report_helpers import RECALL_EXAMPLE, member
from tests.scoring.test_pages import text, upload

pytestmark = pytest.mark.django_db


class Ids(HTMLParser):
    """Every id on a page, and every id an aria-describedby names."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.described: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        self.described += (a.get("aria-describedby") or "").split()


def ids_of(html: str) -> Ids:
    parser = Ids()
    parser.feed(html)
    return parser


# -- item 9: refusals in the site's page, no links to what does not open ------------------------


def test_a_403_is_the_sites_page_with_the_reason_and_the_role_to_ask_for(client, recall_v1):
    """On main it was Django's bare "403 Forbidden"."""
    client.force_login(member(recall_v1.collection, "ana", Role.REVIEWER))

    refused = client.get("/c/recall-example/evaluations/new/")

    page = text(refused)
    assert refused.status_code == 403
    assert 'class="top"' in refused.content.decode()  # the site's header
    assert "Scoring stores an evaluation: it needs the evaluator role." in page
    assert "It needs the evaluator role in Recall example" in page
    assert "Your role there is reviewer . Ask one of the collection's admins" in page


def test_404_and_500_are_the_sites_pages_and_the_500_reads_no_database(
    client, recall_v1, django_assert_num_queries
):
    """On main both were Django's bare pages."""
    client.force_login(member(recall_v1.collection, "ana", Role.REVIEWER))
    missing = client.get("/c/recall-example/q/no-such-query/")
    with django_assert_num_queries(0):
        broken = server_error(RequestFactory().get("/c/recall-example/"))

    assert missing.status_code == 404 and 'class="top"' in missing.content.decode()
    assert "No query &#x27;no-such-query&#x27; in this collection." in missing.content.decode()
    assert broken.status_code == 500
    assert b"Something went wrong on the server" in broken.content
    assert b'class="top"' in broken.content


def test_a_reviewer_sees_no_link_to_scoring(client, recall_v1):
    """On main the runs page showed "Score it" to reviewers, who got a 403."""
    import_run(collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="ex")
    client.force_login(member(recall_v1.collection, "ana", Role.REVIEWER))

    html = client.get("/c/recall-example/runs/").content.decode()

    assert "/evaluations/new/" not in html
    assert 'href="/c/recall-example/runs/ex/"' in html


# -- item 13: runs ------------------------------------------------------------------------------


def test_a_run_nobody_scored_has_a_page_with_its_ranked_lists(client, recall_v1):
    """On main a run had no page: without an evaluation its lists could not be reached."""
    import_run(collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="ex")
    client.force_login(member(recall_v1.collection, "ana", Role.REVIEWER))

    page = client.get("/c/recall-example/runs/ex/")

    html = page.content.decode()
    assert page.status_code == 200 and "Not scored yet." in html
    for qid in ("A", "B", "C"):
        assert f'href="/c/recall-example/runs/ex/q/{qid}/"' in html
    assert "3 queries" in text(page)


def test_ranked_lists_page_past_rank_200(client, recall_v1, write_file):
    """On main the list stopped at rank 200 ("… and 50 more") with no way to see them."""
    lines = "".join(f"A Q0 x{r:03d} {r} {1000 - r} t\n" for r in range(1, 251))
    import_run(collection=recall_v1.collection, path=write_file("long.trec", lines), name="long")
    client.force_login(member(recall_v1.collection, "ana", Role.REVIEWER))

    first = client.get("/c/recall-example/runs/long/q/A/").content.decode()
    second = client.get("/c/recall-example/runs/long/q/A/?from=201").content.decode()

    assert "ranks 1\u2013200 of 250" in first and 'href="?from=201#stage-1"' in first
    ranks = re.findall(r'<td class="num rank">(\d+)</td>', second)
    assert ranks[0] == "201" and ranks[-1] == "250" and len(ranks) == 50
    assert 'data-item="x250"' in second and 'href="?from=1#stage-1"' in second


def test_surfaced_by_a_run_that_is_not_stored_says_so(client, recall_v1):
    """On main "surfaced by run bm25" named a run the runs page did not list."""
    collection = recall_v1.collection
    query = make_query(collection, external_id="D", text="new query")
    item = make_item(collection, external_id="z")
    queue_unjudged(collection=collection, pairs=[(query.pk, item.pk, 1)], source="run bm25")
    client.force_login(member(collection, "ana", Role.REVIEWER))

    html = client.get("/c/recall-example/q/D/").content.decode()

    assert "run bm25 (named by imported labels; no such run is stored here), rank 1" in html


# -- item 12: forms -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "data"),
    [
        ("/c/recall-example/evaluations/new/", {"stage": "ex/default", "snapshot": 1, "ks": "0"}),
        ("/c/recall-example/runs/", {"name": "bad name!", "order": "score", "dedup": "error"}),
    ],
    ids=["scoring", "upload"],
)
def test_forms_describe_fields_by_ids_that_exist_and_summarise_errors(client, recall_v1, url, data):
    """On main aria-describedby named <id>_helptext ids the page lacked, and errors had no
    id and no summary to move the focus to."""
    import_run(collection=recall_v1.collection, path=RECALL_EXAMPLE / "run.trec", name="ex")
    client.force_login(member(recall_v1.collection, "eve", Role.EVALUATOR))

    blank = ids_of(client.get(url).content.decode())
    if "runs" in url:
        data = {**data, "file": SimpleUploadedFile("mine.trec", b"A Q0 a 1 1 t\n")}
    refused = client.post(url, data)
    after = ids_of(refused.content.decode())

    assert blank.described and set(blank.described) <= blank.ids
    assert refused.status_code == 400
    assert set(after.described) <= after.ids
    assert any(i.endswith("_error1") for i in after.described)
    html = refused.content.decode()
    assert "{#" not in html  # no template comment shown as text
    assert (
        'id="error-summary"' in html
        and "data-autofocus" in html.split('id="error-summary"')[1][:80]
    )


def test_the_upload_form_names_the_file_chosen_and_the_name_rule_up_front(client, recall_v1):
    """On main the chosen file was forgotten silently, and the name rule was stated only
    in the error once broken."""
    client.force_login(member(recall_v1.collection, "eve", Role.EVALUATOR))

    blank = text(client.get("/c/recall-example/runs/"))
    refused = upload(client, "bad name!", filename="my-run.trec")

    assert "1 to 100 letters, digits, '-' or '_'" in blank
    assert "You chose my-run.trec (" in text(refused)
    assert "choose it again" in text(refused)


# -- item 14: wording ---------------------------------------------------------------------------


def test_one_plural_rule():
    assert [plural_of(w) for w in ("query", "day", "match", "unit", "box")] == [
        "queries",
        "days",
        "matches",
        "units",
        "boxes",
    ]
    assert counted(1, "query") == "1 query" and counted(0, "query") == "0 queries"
    assert counted(1200, "shared unit") == "1,200 shared units"
    assert counted(1, "person,people") == "1 person" and counted(2, "person,people") == "2 people"


def test_a_refused_binary_upload_says_it_is_not_text_and_that_more_problems_follow(tmp_path):
    """On main a 3 MB binary file listed 25 problems, nothing more."""
    path = tmp_path / "photo.trec"
    path.write_bytes(bytes(range(256)) * 100)
    error = RunImportError(
        f"{path}: 25 problems", [f"{path} line {n}: invalid UTF-8" for n in range(1, 26)]
    )

    detail, errors = error.as_client_sees_it(path)

    assert detail.startswith("photo.trec is not a text file (it holds NUL bytes)")
    assert len(errors) == 26 and errors[-1].startswith("… and more: reading stopped at the 25th")


def test_a_refusal_on_the_form_names_the_forms_labels_not_api_parameters(tmp_path):
    """On main the upload form's job said 'send ignore_unknown_queries=true'."""
    path = tmp_path / "run.trec"
    path.write_text("Z Q0 a 1 1 t\n")
    error = RunImportError("1 line names a query; pass --ignore-unknown-queries to store it")

    form, _ = error.as_client_sees_it(path, via="form")
    api, _ = error.as_client_sees_it(path)

    assert "tick “Skip the lines of queries this collection lacks”" in form
    assert "ignore_unknown_queries" not in form
    assert "send ignore_unknown_queries=true" in api


def test_a_failed_job_links_back_to_its_form_and_a_queued_one_waits_for_a_worker(client, recall_v1):
    """On main a failed job had no way back to its form, and a running job with no phase
    yet read "State: running … waiting for a worker"."""
    eve = member(recall_v1.collection, "eve", Role.EVALUATOR)
    client.force_login(eve)
    made = {}
    for state in (JobState.FAILED, JobState.RUNNING, JobState.QUEUED):
        made[state] = Job.objects.create(
            kind=JobKind.RUN_IMPORT,
            state=state,
            collection=recall_v1.collection,
            created_by=eve,
            label="Import run 'x'",
            task_path="scoring.tasks.import_run_task",
            error="refused" if state == JobState.FAILED else "",
        )

    failed = client.get(f"/jobs/{made[JobState.FAILED].pk}/").content.decode()
    running = text(client.get(f"/jobs/{made[JobState.RUNNING].pk}/"))
    queued = text(client.get(f"/jobs/{made[JobState.QUEUED].pk}/"))

    assert 'href="/c/recall-example/runs/#upload-title" id="back-to-form"' in failed
    assert "Back to the upload form" in failed
    assert "State: running" in running and "waiting for a worker" not in running
    assert "State: queued" in queued and "waiting for a worker" in queued


def test_import_trec_on_an_existing_slug_says_what_to_do(recall_v1, tmp_path):
    """On main it said "drop --create", an option import_trec does not have."""
    qrels, topics = tmp_path / "qrels.txt", tmp_path / "topics.tsv"
    qrels.write_text("A 0 a 1\n")
    topics.write_text("A\tHow do I reset my password?\n")

    with pytest.raises(CommandError) as refused:
        call_command(
            "import_trec",
            "recall-example",
            *("--qrels", str(qrels), "--topics", str(topics)),
            stdout=io.StringIO(),
        )

    assert "--create" not in str(refused.value)
    assert "import_collection --collection recall-example --qrels" in str(refused.value)


def test_the_demo_banner_prints_the_port_make_run_serves(settings, monkeypatch, db):
    """On main it printed port 8000 under `make run PORT=8101`."""
    settings.DEBUG = True
    monkeypatch.setenv("PORT", "8101")
    out = io.StringIO()

    call_command("create_demo_users", stdout=out)

    assert "Demo logins at http://127.0.0.1:8101/" in out.getvalue()
