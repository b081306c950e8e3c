"""Several assessors per item: slots in the queue, blind claims, resolution by policy,
adjudication, and what a snapshot freezes."""

from __future__ import annotations

import json

import pytest

from judgments.models import (
    AdjudicationStatus,
    AdjudicationTask,
    Assessment,
    AssessmentChange,
    ChangeSource,
    Judgment,
    JudgmentChange,
    ReviewTask,
    TaskStatus,
)
from judgments.selectors import snapshot_canonical_lines
from judgments.selectors.snapshots import rendered_canonical_lines
from judgments.services import (
    InvariantError,
    adjudicate,
    assess_task,
    claim_next_task,
    freeze_snapshot,
    queue_unjudged,
    record_assessment,
    update_collection_settings,
)
from judgments.snapshots import content_hash
from tests.factories import make_collection, make_item, make_query, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def overlap():
    """A graded collection asking two assessors per item, adjudicating any disagreement."""
    collection = make_collection(slug="overlap")
    return update_collection_settings(
        collection=collection,
        assessors_per_item=2,
        resolution_policy="adjudicate",
        adjudicate_distance=0,
    )


def _queue(collection, query, items):
    queue_unjudged(
        collection=collection,
        pairs=[(query.pk, item.pk, rank) for rank, item in enumerate(items, 1)],
        source="run bm25",
    )


def test_each_pooled_pair_gets_one_slot_per_assessor(overlap):
    query = make_query(overlap, external_id="q1")
    items = [make_item(overlap) for _ in range(3)]
    _queue(overlap, query, items)
    slots = sorted(ReviewTask.objects.values_list("item__external_id", "slot", "priority"))
    assert len(slots) == 6
    for item in items:
        mine = [s for s in slots if s[0] == item.external_id]
        assert [s[1] for s in mine] == [1, 2]
        assert mine[0][2] == mine[1][2]  # slot 2 serves in slot 1's order


def test_raising_assessors_per_item_gives_every_open_pair_its_new_slots():
    collection = make_collection(slug="later")
    query = make_query(collection, external_id="q1")
    items = [make_item(collection) for _ in range(2)]
    _queue(collection, query, items)
    done = ReviewTask.objects.get(item=items[1])
    ReviewTask.objects.filter(pk=done.pk).update(status=TaskStatus.DONE)

    update_collection_settings(collection=collection, assessors_per_item=3)

    first = ReviewTask.objects.get(item=items[0], slot=1)
    rows = sorted(
        ReviewTask.objects.values_list(
            "item_id", "slot", "status", "source", "best_rank", "priority"
        )
    )
    assert rows == [
        (items[0].pk, 1, TaskStatus.PENDING, "run bm25", 1, first.priority),
        (items[0].pk, 2, TaskStatus.PENDING, "run bm25", 1, first.priority),
        (items[0].pk, 3, TaskStatus.PENDING, "run bm25", 1, first.priority),
        (items[1].pk, 1, TaskStatus.DONE, "run bm25", 2, done.priority),
    ]


def test_a_reviewer_never_gets_a_pair_twice_and_two_agreeing_assessments_resolve(overlap):
    ana, ben = make_user("ana"), make_user("ben")
    query = make_query(overlap, external_id="q1")
    item = make_item(overlap, external_id="d1")
    _queue(overlap, query, [item])
    task = claim_next_task(reviewer=ana, collection=overlap)
    assert (task.item_id, task.slot) == (item.pk, 1)
    assess_task(task=task, reviewer=ana, grade=2)
    assert not Judgment.objects.exists()  # one of two: not resolved yet
    assert claim_next_task(reviewer=ana, collection=overlap) is None  # ana assessed it
    second = claim_next_task(reviewer=ben, collection=overlap)
    assert (second.item_id, second.slot) == (item.pk, 2)
    assess_task(task=second, reviewer=ben, grade=2)
    judgment = Judgment.objects.get()
    assert (judgment.grade, judgment.reviewer) == (2, None)
    assert JudgmentChange.objects.get().source == ChangeSource.RESOLUTION
    assert set(ReviewTask.objects.values_list("status", flat=True)) == {TaskStatus.DONE}
    assert sorted(AssessmentChange.objects.values_list("assessor_name", "new_grade")) == [
        ("ana", 2),
        ("ben", 2),
    ]


def test_a_reviewer_holding_one_slot_is_not_offered_the_other(overlap):
    ana = make_user("ana")
    query = make_query(overlap, external_id="q1")
    item = make_item(overlap, external_id="d1")
    _queue(overlap, query, [item])
    held = claim_next_task(reviewer=ana, collection=overlap)
    # Asking again returns the held slot, never the pair's other one.
    assert claim_next_task(reviewer=ana, collection=overlap).pk == held.pk


def test_an_assessor_assesses_a_pair_once(overlap):
    ana = make_user("ana")
    query = make_query(overlap, external_id="q1")
    item = make_item(overlap, external_id="d1")
    record_assessment(query=query, item=item, grade=1, assessor=ana)
    with pytest.raises(InvariantError, match="ana has assessed item 'd1' of query 'q1'"):
        record_assessment(query=query, item=item, grade=3, assessor=ana)
    assert Assessment.objects.get().grade == 1


def test_an_assessor_edits_their_assessment_with_its_version(overlap):
    ana = make_user("ana")
    query = make_query(overlap, external_id="q1")
    item = make_item(overlap, external_id="d1")
    record_assessment(query=query, item=item, grade=1, assessor=ana)

    edited = record_assessment(
        query=query, item=item, grade=2, note="on reflection", assessor=ana, expected_version=1
    )

    stored = Assessment.objects.get()
    assert (edited.grade, edited.note, edited.version) == (2, "on reflection", 2)
    assert (stored.grade, stored.note, stored.version) == (2, "on reflection", 2)
    assert edited.updated_at == stored.updated_at
    assert list(
        AssessmentChange.objects.order_by("pk").values_list("old_grade", "new_grade", "version")
    ) == [(None, 1, 1), (1, 2, 2)]
    with pytest.raises(InvariantError, match="changed since version 1"):
        record_assessment(query=query, item=item, grade=3, assessor=ana, expected_version=1)


def test_a_disagreement_goes_to_the_adjudicator_whose_decision_is_the_label(overlap):
    ana, ben, cleo = make_user("ana"), make_user("ben"), make_user("cleo")
    query = make_query(overlap, external_id="q1")
    item = make_item(overlap, external_id="d1")
    _queue(overlap, query, [item])
    assess_task(task=claim_next_task(reviewer=ana, collection=overlap), reviewer=ana, grade=1)
    assess_task(task=claim_next_task(reviewer=ben, collection=overlap), reviewer=ben, grade=3)
    assert not Judgment.objects.exists()
    task = AdjudicationTask.objects.get()
    assert task.status == AdjudicationStatus.OPEN
    assert task.reason == "adjudicate leaves grades [1, 3] open"

    snapshot, _ = freeze_snapshot(collection=overlap, by=None)
    assert (snapshot.n_judgments, snapshot.n_unresolved, snapshot.n_assessments) == (0, 1, 2)

    judgment = adjudicate(task=task, grade=2, by=cleo)
    assert (judgment.grade, judgment.reviewer) == (2, cleo)
    change = JudgmentChange.objects.get()
    assert (change.changed_by, change.source, change.new_grade) == (
        cleo,
        ChangeSource.ADJUDICATION,
        2,
    )
    task.refresh_from_db()
    assert (task.status, task.grade, task.decided_by) == (AdjudicationStatus.DECIDED, 2, cleo)
    with pytest.raises(InvariantError, match="decided already"):
        adjudicate(task=task, grade=0, by=cleo)

    after, created = freeze_snapshot(collection=overlap, by=None)
    assert created and (after.n_judgments, after.n_unresolved) == (1, 0)
    lines = [json.loads(line) for line in snapshot_canonical_lines(after)]
    assert lines[0] == ["verity-snapshot", 2]
    assert lines[2] == ["resolution", "adjudicate", 2, 0]
    assert ["judgment", "q1", "d1", 2] in lines
    assert [line for line in lines if line[0] == "assessment"] == [
        ["assessment", "q1", "d1", "ana", 1],
        ["assessment", "q1", "d1", "ben", 3],
    ]
    before = [json.loads(line) for line in snapshot_canonical_lines(snapshot)]
    assert ["unresolved", "q1", "d1"] in before
    for frozen in (snapshot, after):
        assert content_hash(snapshot_canonical_lines(frozen)) == frozen.content_hash
        # ... and so do its rows, rendered again (form 2: assessments, unresolved pairs)
        assert content_hash(rendered_canonical_lines(frozen)) == frozen.content_hash


@pytest.mark.parametrize(
    ("policy", "grades", "resolved"),
    [("majority", [2, 2, 0], 2), ("median", [3, 0, 1], 1), ("min-of-agreeing", [3, 2, 3], 2)],
)
def test_the_nth_assessment_resolves_by_the_collection_policy(policy, grades, resolved):
    collection = make_collection(slug=f"c-{policy}")
    update_collection_settings(
        collection=collection, assessors_per_item=3, resolution_policy=policy
    )
    query = make_query(collection, external_id="q1")
    item = make_item(collection, external_id="d1")
    for n, grade in enumerate(grades):
        assert not Judgment.objects.exists()
        record_assessment(query=query, item=item, grade=grade, assessor=make_user(f"r{n}"))
    assert Judgment.objects.get().grade == resolved
    assert not AdjudicationTask.objects.exists()


def test_a_resolved_grade_the_query_status_refuses_goes_to_adjudication(overlap):
    query = make_query(overlap, external_id="q1", status="no_answer")
    item = make_item(overlap, external_id="d1")
    update_collection_settings(collection=overlap, resolution_policy="median")
    for name in ("ana", "ben"):
        record_assessment(query=query, item=item, grade=3, assessor=make_user(name))
    assert not Judgment.objects.exists()
    assert "refused: query 'q1' is marked 'confirmed no answer'" in (
        AdjudicationTask.objects.get().reason
    )


def test_settings_are_checked(overlap):
    with pytest.raises(InvariantError, match="assessors per item 0"):
        update_collection_settings(collection=overlap, assessors_per_item=0)
    with pytest.raises(InvariantError, match="resolution policy 'vote'"):
        update_collection_settings(collection=overlap, resolution_policy="vote")


def test_reviewer_statistics_for_admins(overlap, client):
    from datetime import timedelta

    from django.utils import timezone

    from judgments.models import TaskSkip
    from judgments.selectors import labels_per_hour, reviewer_stats
    from judgments.services import set_membership, skip_task

    ana, ben = make_user("ana"), make_user("ben")
    query = make_query(overlap, external_id="q1")
    items = [make_item(overlap, external_id=f"d{n}") for n in range(3)]
    _queue(overlap, query, items)
    start = timezone.now() - timedelta(hours=1)
    for n in range(3):
        task = claim_next_task(reviewer=ana, collection=overlap)
        # ana claimed this task 10, 20, 30 seconds before she submitted it
        ReviewTask.objects.filter(pk=task.pk).update(
            claimed_at=timezone.now() - timedelta(seconds=10 * (n + 1))
        )
        assess_task(task=task, reviewer=ana, grade=2)
    skip_task(task=claim_next_task(reviewer=ben, collection=overlap), reviewer=ben)
    assert TaskSkip.objects.count() == 1

    rows = {r["assessor"]: r for r in reviewer_stats(overlap)}
    assert rows["ana"]["labels"] == 3 and rows["ana"]["timed"] == 3
    assert rows["ana"]["median_seconds"] == pytest.approx(20, abs=2)
    assert rows["ana"]["agreement"] is None  # 0 resolved units: undefined, not 0
    assert (rows["ben"]["labels"], rows["ben"]["skips"]) == (0, 1)

    # Two labels 10 min apart, then a 2-hour break, then one 5 min later: 2 labels in
    # 15 minutes of work = 8 per hour.
    times = [start, start + timedelta(minutes=10), start + timedelta(hours=2, minutes=10)]
    times.append(times[-1] + timedelta(minutes=5))
    assert labels_per_hour(times) == pytest.approx(8.0)
    assert labels_per_hour([start]) is None

    set_membership(collection=overlap, user=ana, role="reviewer")
    client.force_login(ana)
    assert client.get("/c/overlap/reviewers/").status_code == 403
    boss = make_user("boss")
    set_membership(collection=overlap, user=boss, role="admin")
    client.force_login(boss)
    page = client.get("/c/overlap/reviewers/").content.decode()
    assert 'data-assessor="ana"' in page and 'data-assessor="ben"' in page


def test_reviewer_statistics_of_a_single_assessor_collection_time_judgments():
    from datetime import timedelta

    from django.utils import timezone

    from judgments.selectors import reviewer_stats
    from judgments.services import judge_task

    collection = make_collection(slug="solo")
    ana = make_user("ana")
    query = make_query(collection, external_id="q1")
    _queue(collection, query, [make_item(collection) for _ in range(2)])
    for seconds in (30, 50):
        task = claim_next_task(reviewer=ana, collection=collection)
        ReviewTask.objects.filter(pk=task.pk).update(
            claimed_at=timezone.now() - timedelta(seconds=seconds)
        )
        judge_task(task=task, reviewer=ana, grade=1)
    (row,) = reviewer_stats(collection)
    assert (row["assessor"], row["labels"], row["timed"]) == ("ana", 2, 2)
    assert row["median_seconds"] == pytest.approx(40, abs=2)


def test_the_query_page_records_an_assessment_not_a_label_with_several_assessors(overlap, client):
    from judgments.services import set_membership

    ana = make_user("ana")
    set_membership(collection=overlap, user=ana, role="reviewer")
    make_query(overlap, external_id="q1")
    make_item(overlap, external_id="d1")
    client.force_login(ana)
    response = client.post("/c/overlap/q/q1/", {"action": "grade", "item": "d1", "grade": 2})
    assert response.status_code == 302
    assert list(Assessment.objects.values_list("assessor__username", "grade")) == [("ana", 2)]
    assert not Judgment.objects.exists()
    again = client.post("/c/overlap/q/q1/", {"action": "grade", "item": "d1", "grade": 3})
    assert again.status_code == 400  # one assessment per assessor: nothing changed
    assert Assessment.objects.get().grade == 2


def test_the_api_judges_a_task_as_a_blind_assessment_with_several_assessors(overlap, client):
    from judgments.services import set_membership

    ana, ben = make_user("ana"), make_user("ben")
    for user in (ana, ben):
        set_membership(collection=overlap, user=user, role="reviewer")
    query = make_query(overlap, external_id="q1")
    _queue(overlap, query, [make_item(overlap, external_id="d1")])
    answers = []
    for user, grade in ((ana, 1), (ben, 1)):
        client.force_login(user)
        task = client.post("/api/collections/overlap/tasks/claim/").json()
        answers.append(
            client.post(
                f"/api/collections/overlap/tasks/{task['id']}/judge/",
                {"grade": grade},
                content_type="application/json",
            )
        )
    assert [a.status_code for a in answers] == [202, 202]
    assert answers[0].json()["resolved_grade"] is None  # one of two: not resolved
    # resolved, but a plain reviewer is not told the label (issue 22 item 2, blind)
    assert answers[1].json() == {
        "query": "q1",
        "item": "d1",
        "assessor": "ben",
        "grade": 1,
        "version": 1,
        "resolved_grade": None,
    }
    assert Judgment.objects.get().grade == 1


def test_the_queue_says_what_is_left_for_the_other_assessors(overlap, client):
    from judgments.services import set_membership

    ana = make_user("ana")
    set_membership(collection=overlap, user=ana, role="reviewer")
    query = make_query(overlap, external_id="q1")
    _queue(overlap, query, [make_item(overlap, external_id="d1")])
    client.force_login(ana)
    client.post("/c/overlap/review/claim/")  # claiming is a POST; the page's GET reads
    task = ReviewTask.objects.get(status=TaskStatus.CLAIMED)
    answer = client.post(
        "/c/overlap/review/judge/",
        {"task": task.pk, "grade": 2},
        HTTP_ACCEPT="application/json",
    ).json()
    assert answer["message"] == (
        "Saved your assessment 2 relevant for item 'd1' of query 'q1'. Query 'q1' has 1 "
        "open assessment left for other reviewers (you assessed, skipped or hold those items)."
    )
    assert answer["assessed"] == {"query": "q1", "item": "d1", "grade": 2}
    assert answer["task"] is None  # nothing else for ana: the other slot is not hers
