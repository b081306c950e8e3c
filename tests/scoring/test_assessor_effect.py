"""What disagreement does to the numbers: two runs scored against each assessor's frozen
labels; expected values by hand beside the data."""

from __future__ import annotations

import pytest

import verity_eval as engine
from judgments.services import (
    freeze_snapshot,
    record_assessment,
    set_query_status,
    update_collection_settings,
)
from scoring.reports import compare_evaluations
from scoring.services import import_run, score_run_stage
from tests.factories import make_collection, make_item, make_query, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def split_labels(tmp_path):
    """alice finds item a relevant for both queries, bob item b; policy single keeps
    alice's (the first) as the resolved labels. Run one ranks a first, run two b."""
    collection = make_collection(slug="split")
    update_collection_settings(collection=collection, assessors_per_item=2)
    alice, bob = make_user("alice"), make_user("bob")
    a, b = make_item(collection, external_id="a"), make_item(collection, external_id="b")
    for qid in ("q1", "q2"):
        query = make_query(collection, external_id=qid)
        for who, grades in ((alice, {a: 2, b: 0}), (bob, {a: 0, b: 3})):
            for item, grade in grades.items():
                record_assessment(query=query, item=item, grade=grade, assessor=who)
        set_query_status(query=query, status="relevant", by=alice)
    snapshot, _ = freeze_snapshot(collection=collection, by=None)
    evaluations = []
    for name, first, second in (("one", "a", "b"), ("two", "b", "a")):
        path = tmp_path / f"{name}.trec"
        path.write_text(
            "".join(
                f"{q} Q0 {first} 1 2.0 {name}\n{q} Q0 {second} 2 1.0 {name}\n" for q in ("q1", "q2")
            )
        )
        run = import_run(collection=collection, path=path, name=name).run
        evaluation, _ = score_run_stage(
            run=run,
            stage=run.stages.get(),
            snapshot=snapshot,
            params=engine.EvalParams(ks=(1,), measures=("P@1",), rel_level=2),
        )
        evaluations.append(evaluation)
    return evaluations


def test_each_assessors_labels_order_the_runs_and_tau_compares_the_orderings(split_labels):
    one, two = split_labels
    effect = compare_evaluations(one, two)["assessors"]
    assert effect["measure"] == "P@1" and effect["runs"] == ["one/default", "two/default"]
    rows = {r["labels"]: r for r in effect["rows"]}
    assert list(rows) == ["resolved", "alice", "bob"]
    # resolved = alice's: run one puts a (relevant) first in both queries: P@1 1 vs 0.
    assert rows["resolved"]["scores"] == [1.0, 0.0]
    assert rows["alice"]["scores"] == [1.0, 0.0]
    assert rows["bob"]["scores"] == [0.0, 1.0]  # under bob, b is relevant: two wins
    assert rows["bob"]["order"] == ["two/default", "one/default"]
    assert rows["alice"]["tau"] == pytest.approx(1.0)
    assert rows["bob"]["tau"] == pytest.approx(-1.0)  # the ordering flips


def test_the_compare_page_shows_the_orderings(split_labels, client):
    one, two = split_labels
    admin = make_user("root", is_superuser=True)
    client.force_login(admin)
    page = client.get(f"/c/split/compare/?a={one.pk}&b={two.pk}").content.decode()
    assert "under each assessor&#x27;s labels" in page or "under each assessor's labels" in page
    section = page[page.index('id="assessor-effect"') :]
    bob = section[section.index('data-labels="bob"') :]
    assert "two/default > one/default" in bob[: bob.index("</tr>")]
    assert "-1.000" in bob[: bob.index("</tr>")]


def test_a_reviewer_sees_no_scores_under_each_assessors_labels(split_labels, client):
    """Issue 22 item 2 (fails on main): the comparison's per-assessor scores tell a
    reviewer who knows their own grades another assessor's; page and API leave them out
    for reviewers (``may_see_assessments``) and keep them for evaluators."""
    from rest_framework.test import APIClient

    from judgments.services import set_membership

    one, two = split_labels
    collection = one.collection
    carl, eve = make_user("carl"), make_user("eve")
    set_membership(collection=collection, user=carl, role="reviewer")
    set_membership(collection=collection, user=eve, role="evaluator")
    url = f"/c/split/compare/?a={one.pk}&b={two.pk}"
    client.force_login(carl)
    # with several assessors per item a plain reviewer sees no scores at all: they are
    # derived from the resolved labels (``may_see_labels``, the blind doors)
    page = client.get(url)
    assert page.status_code == 403 and 'id="assessor-effect"' not in page.content.decode()
    assert client.get(url + "&format=json").status_code == 403
    api = APIClient()
    api.force_authenticate(carl)
    answer = api.get(f"/api/collections/split/compare/?a={one.pk}&b={two.pk}")
    assert answer.status_code == 403 and "assessors" not in answer.json()
    api.force_authenticate(eve)
    answer = api.get(f"/api/collections/split/compare/?a={one.pk}&b={two.pk}")
    assert [r["labels"] for r in answer.json()["assessors"]["rows"]] == [
        "resolved",
        "alice",
        "bob",
    ]
    client.force_login(eve)
    assert 'id="assessor-effect"' in client.get(url).content.decode()
