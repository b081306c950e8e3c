"""Issue 16's accepting policy: a collection's ``model_labels`` setting names a judge
whose current proposals label, at freeze, the pairs no person judged or assessed.

The expected canonical forms are written by hand from ``judgments/snapshots.py`` (on the
tiny collection of ``tests/judgments/test_snapshots.py``), and the expected scores by
hand from the scoring rules; nothing expected is read back from the code under test.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from judgments.models import Snapshot, SnapshotJudgment, SnapshotUnjudged
from judgments.selectors import snapshot_canonical_lines
from judgments.selectors.snapshots import rendered_canonical_lines
from judgments.services import (
    InvariantError,
    freeze_snapshot,
    queue_unjudged,
    record_judgment,
    set_membership,
    update_collection_settings,
)
from tests.factories import make_proposal, make_user
from tests.judgments.test_snapshots import Tiny, canonical_text, edited, fill, sha256

pytestmark = pytest.mark.django_db

JUDGE = "local-baseline"
LAST_JUDGMENT = '["judgment","q-vaccines","Ärzteblatt-42",2]'
UNJUDGED = '["unjudged","q-zinc","forum-4411"]'


def propose(tiny: Tiny, qid: str, item: str, grade: int | None) -> None:
    make_proposal(query=tiny.queries[qid], item=tiny.items[item], grade=grade)


@pytest.fixture
def proposed(collection_graded) -> Tiny:
    """The tiny collection with the judge's proposals: on the one open pair (an older
    0, then a 2: the current one is 2), on a judged pair (people's label wins), on a
    pair of the no-answer query (people decided it), and a failed one."""
    tiny = fill(collection_graded)
    propose(tiny, "q-zinc", "forum-4411", 0)
    propose(tiny, "q-zinc", "forum-4411", 2)
    propose(tiny, "q-vaccines", "cdc-mrna-faq", 0)
    propose(tiny, "q-measles", "cdc-mrna-faq", 3)
    propose(tiny, "q-zinc", "NHS-mmr", None)
    return tiny


@pytest.fixture
def run_command():
    """Run a management command; return (stdout, stderr)."""

    def run(name: str, *args: object) -> tuple[str, str]:
        out, err = io.StringIO(), io.StringIO()
        call_command(name, *[str(a) for a in args], stdout=out, stderr=err)
        return out.getvalue(), err.getvalue()

    return run


def accept(tiny: Tiny, judge: str = JUDGE) -> None:
    update_collection_settings(collection=tiny.collection, model_labels=judge)


def test_default_policy_freezes_no_model_label_and_the_unchanged_hash(proposed):
    snapshot, created = freeze_snapshot(collection=proposed.collection, by=None)
    assert created and proposed.collection.model_labels == ""
    assert snapshot.content_hash == sha256(canonical_text())  # form 1, byte for byte
    assert snapshot.model_labels == {} and snapshot.n_judgments == 5
    assert not SnapshotJudgment.objects.of(snapshot).exclude(source="").exists()
    assert snapshot.label_sources == "all 5 by people"


def test_accepting_policy_freezes_the_judges_label_where_no_person_assessed(proposed):
    accept(proposed)
    snapshot, created = freeze_snapshot(collection=proposed.collection, by=None)
    expected = edited(
        canonical_text(),
        {UNJUDGED: '["model-judgment","q-zinc","forum-4411","local-baseline",2]'},
    )
    assert created and snapshot.content_hash == sha256(expected)
    assert b"".join(snapshot_canonical_lines(snapshot)).decode() == expected
    # The rows, rendered again (how a version frozen before blocks carried bytes is
    # exported), give the same bytes.
    assert b"".join(rendered_canonical_lines(snapshot)).decode() == expected
    assert (snapshot.n_judgments, snapshot.n_unjudged) == (6, 0)
    assert snapshot.model_labels == {JUDGE: 1} and snapshot.n_human_labels == 5
    rows = {
        (q, i): (g, src)
        for q, i, g, src in SnapshotJudgment.objects.of(snapshot).values_list(
            "query__external_id", "item__external_id", "grade", "source"
        )
    }
    assert rows[("q-zinc", "forum-4411")] == (2, JUDGE)
    assert rows[("q-vaccines", "cdc-mrna-faq")] == (3, "")  # people's 3, not the judge's 0
    assert ("q-measles", "cdc-mrna-faq") not in rows  # confirmed no answer
    assert sum(1 for g, src in rows.values() if src == "") == 5
    assert not SnapshotUnjudged.objects.of(snapshot).exists()
    assert snapshot.label_sources == (
        "5 by people, 1 by model judge local-baseline "
        "(accepted where no person assessed the pair); 6 in all"
    )
    # Turning the policy off again gives v1's content, and so v1's hash.
    update_collection_settings(collection=proposed.collection, model_labels="")
    v2, created = freeze_snapshot(collection=proposed.collection, by=None)
    assert created and v2.content_hash == sha256(canonical_text()) and v2.model_labels == {}


def test_a_model_label_hashes_apart_from_a_persons_label_of_the_same_grade(proposed):
    accept(proposed)
    by_model, _ = freeze_snapshot(collection=proposed.collection, by=None)
    record_judgment(
        query=proposed.queries["q-zinc"],
        item=proposed.items["forum-4411"],
        grade=2,
        reviewer=None,
        expected_version=None,
    )
    by_person, created = freeze_snapshot(collection=proposed.collection, by=None)
    expected = edited(
        canonical_text(),
        {LAST_JUDGMENT: LAST_JUDGMENT + '\n["judgment","q-zinc","forum-4411",2]', UNJUDGED: ""},
    )
    assert created and by_person.content_hash == sha256(expected) != by_model.content_hash
    assert by_person.model_labels == {}  # the person's label displaced the judge's


def test_qrels_exports_carry_the_model_labels_and_say_who_made_them(proposed, run_command):
    accept(proposed)
    evaluator = make_user("eva")
    set_membership(collection=proposed.collection, user=evaluator, role="evaluator")
    api = APIClient()
    api.force_authenticate(evaluator)
    # Frozen over the API: every path goes through the service, which asks the judges app.
    frozen = api.post("/api/collections/health-graded/snapshots/", {"note": ""}, format="json")
    assert frozen.status_code == 201 and frozen.json()["model_labels"] == {JUDGE: 1}
    snapshot = Snapshot.objects.get(number=1)
    out, err = run_command("export_qrels", "health-graded", "--snapshot", "1")
    assert out == (
        "q-measles 0 NHS-mmr 0\n"
        "q-measles 0 forum-4411 0\n"
        "q-vaccines 0 cdc-mrna-faq 3\n"
        "q-vaccines 0 who-vaccines-qa 1\n"
        "q-vaccines 0 Ärzteblatt-42 2\n"
        "q-zinc 0 forum-4411 2\n"
    )
    assert "people=5, model:local-baseline=1" in err
    with_unjudged, _ = run_command(
        "export_qrels", "health-graded", "--snapshot", "1", "--with-unjudged"
    )
    assert with_unjudged == out  # the labelled pair is no longer unjudged
    jsonl, _ = run_command("export_qrels", "health-graded", "--snapshot", "1", "--format", "jsonl")
    assert hashlib.sha256(jsonl.encode()).hexdigest() == snapshot.content_hash

    answer = api.get("/api/collections/health-graded/snapshots/1/qrels")
    assert b"".join(answer.streaming_content).decode() == out
    assert answer["Verity-Label-Sources"] == "people=5, model:local-baseline=1"
    body = api.get("/api/collections/health-graded/snapshots/1/").json()
    assert (body["n_judgments"], body["n_human_labels"], body["model_labels"]) == (
        6,
        5,
        {JUDGE: 1},
    )


def test_a_report_scored_against_the_snapshot_counts_labels_by_judge(
    proposed, run_command, tmp_path: Path
):
    # One more open pair of the scorable query, which the judge grades 3 (relevant).
    queue_unjudged(
        collection=proposed.collection,
        pairs=[(proposed.queries["q-vaccines"].pk, proposed.items["NHS-mmr"].pk, 3)],
        source="run bm25",
    )
    propose(proposed, "q-vaccines", "NHS-mmr", 3)
    accept(proposed)
    snapshot, _ = freeze_snapshot(collection=proposed.collection, by=None)
    assert snapshot.model_labels == {JUDGE: 2}
    run = tmp_path / "run.trec"
    run.write_text("q-vaccines Q0 NHS-mmr 1 2.0 r\nq-vaccines Q0 cdc-mrna-faq 2 1.0 r\n")
    run_command("import_run", "health-graded", run, "--name", "r")
    out, _ = run_command("score", "health-graded", "r", "--snapshot", "1", "--k", "2", "--json")
    report = json.loads(out)
    # G = {cdc-mrna-faq 3, Ärzteblatt-42 2, NHS-mmr 3 (the judge's)}: 2 of 3 in the top 2.
    assert report["aggregates"]["R@2"]["macro"] == pytest.approx(2 / 3)
    assert report["snapshot"]["labels"] == {
        "total": 7,
        "human": 5,
        "model": {JUDGE: 2},
        "summary": "5 by people, 2 by model judge local-baseline "
        "(accepted where no person assessed the pair); 7 in all",
    }
    text, _ = run_command("score", "health-graded", "r", "--snapshot", "1", "--k", "2")
    assert "labels: 5 by people, 2 by model judge local-baseline (accepted" in text
    from scoring.models import Evaluation
    from scoring.reports import build_report

    header = {row["key"]: row["value"] for row in build_report(Evaluation.objects.get())["header"]}
    assert header["labels"].startswith("5 by people, 2 by model judge local-baseline")


def test_the_policy_names_a_judge_of_the_collection_or_nothing(proposed):
    with pytest.raises(InvariantError, match="its judges are local-baseline"):
        update_collection_settings(collection=proposed.collection, model_labels="gpt-judge")
    assert proposed.collection.model_labels == ""

    admin, evaluator = make_user("adm"), make_user("eva")
    set_membership(collection=proposed.collection, user=admin, role="admin")
    set_membership(collection=proposed.collection, user=evaluator, role="evaluator")
    api = APIClient()
    api.force_authenticate(admin)
    url = "/api/collections/health-graded/"
    refused = api.patch(url, {"model_labels": "gpt-judge"}, format="json")
    assert refused.status_code == 409 and "gpt-judge" in json.dumps(refused.json())
    answer = api.patch(url, {"model_labels": JUDGE}, format="json")
    assert answer.status_code == 200 and answer.json()["model_labels"] == JUDGE
    api.force_authenticate(evaluator)
    assert api.patch(url, {"model_labels": ""}, format="json").status_code == 403

    from django.test import Client

    page = Client()
    page.force_login(evaluator)
    assert page.post("/c/health-graded/judges/policy/", {"model_labels": ""}).status_code == 403
    page.force_login(admin)
    assert page.post("/c/health-graded/judges/policy/", {"model_labels": ""}).status_code == 302
    proposed.collection.refresh_from_db()
    assert proposed.collection.model_labels == ""
    html = page.get("/c/health-graded/judges/").content.decode()
    assert "Off (the default): no model-made label enters a snapshot." in html


def test_a_policy_naming_a_judge_that_is_gone_refuses_to_freeze(proposed):
    proposed.collection.model_labels = "deleted-judge"  # as if its row were removed since
    proposed.collection.save(update_fields=["model_labels"])
    from judgments.services import VerityError

    with pytest.raises(VerityError, match="deleted-judge"):
        freeze_snapshot(collection=proposed.collection, by=None)
    assert not Snapshot.objects.exists()


def test_a_freeze_job_applies_the_policy_and_its_summary_counts_by_judge(proposed, jobs_inline):
    from jobs.models import Job, JobState
    from judgments.tasks import start_freeze

    accept(proposed)
    with jobs_inline():
        job = start_freeze(collection=proposed.collection, note="job")
    job = Job.objects.get(pk=job.pk)
    assert job.state == JobState.DONE, job.error
    assert job.result["summary"].endswith(
        "Labels: 5 by people, 1 by model judge local-baseline "
        "(accepted where no person assessed the pair); 6 in all."
    )
    assert Snapshot.objects.get().model_labels == {JUDGE: 1}
