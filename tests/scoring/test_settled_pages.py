"""The compare page, its JSON and the API say whether a comparison is settled, and
queue the pairs that could change it (issue 28, item 3), with the roles that may."""

from __future__ import annotations

import pytest
from django.urls import reverse

from judgments.models import FocusSet, ReviewTask, Role
from judgments.services import freeze_snapshot, set_membership
from judgments.services.pooling import URGENT_PRIORITY
from tests.factories import make_user
from tests.scoring.settle_helpers import build, judge_settling_pairs

pytestmark = pytest.mark.django_db


@pytest.fixture
def example(tmp_path):
    ex = build(tmp_path)
    users = {}
    for role in (Role.REVIEWER, Role.EVALUATOR):
        users[role] = make_user(f"settle-{role}")
        set_membership(collection=ex["collection"], user=users[role], role=role)
    ex["users"] = users
    return ex


def compare_url(ex, a="run-a", b="run-b", **extra):
    a_id, b_id = ex["ev"][a].pk, ex["ev"][b].pk
    query = f"?a={a_id}&b={b_id}" + "".join(f"&{k}={v}" for k, v in extra.items())
    return reverse("scoring:compare", args=["settle"]) + query


def test_compare_json_has_the_settlement(client, example):
    client.force_login(example["users"][Role.REVIEWER])
    data = client.get(compare_url(example, format="json")).json()
    st = data["settlement"]
    assert st["applies"] and not st["settled"]
    assert st["pairs"] == {"count": 3, "rows": [["q1", "u1"], ["q2", "u2"], ["q2", "u3"]]}
    assert st["focus_state"] is None and st["newer"] is None
    assert st["review_url"] == f"/c/settle/review/?scope={st['focus']}"


def test_the_page_says_not_settled_and_only_an_evaluator_gets_the_button(client, example):
    client.force_login(example["users"][Role.REVIEWER])
    page = client.get(compare_url(example)).content.decode()
    assert 'data-settled="false"' in page
    assert "3 unjudged pairs could change the sign" in page
    assert "q2 · u3" in page
    assert 'id="queue-focus"' not in page
    # a reviewer's POST is refused (403) and queues nothing
    a, b = example["ev"]["run-a"].pk, example["ev"]["run-b"].pk
    refused = client.post(reverse("scoring:compare-focus", args=["settle"]), {"a": a, "b": b})
    assert refused.status_code == 403
    assert not FocusSet.objects.exists()
    client.force_login(example["users"][Role.EVALUATOR])
    assert 'id="queue-focus"' in client.get(compare_url(example)).content.decode()
    settled = client.get(compare_url(example, "run-c", "run-d")).content.decode()
    assert 'data-settled="true"' in settled and 'id="queue-focus"' not in settled


def test_queueing_then_judging_then_freezing_reads_settled_on_the_new_snapshot(
    client, example, jobs_inline
):
    ev = example["users"][Role.EVALUATOR]
    client.force_login(ev)
    a, b = example["ev"]["run-a"], example["ev"]["run-b"]
    response = client.post(
        reverse("scoring:compare-focus", args=["settle"]), {"a": a.pk, "b": b.pk}
    )
    assert response.status_code == 302
    name = f"compare-{a.pk}-{b.pk}"
    urgent = ReviewTask.objects.filter(priority=URGENT_PRIORITY)
    assert sorted(urgent.values_list("query__external_id", "item__external_id")) == [
        ("q1", "u1"),
        ("q2", "u2"),
        ("q2", "u3"),
    ]
    page = client.get(compare_url(example)).content.decode()
    assert f'href="/c/settle/review/?scope={name}"' in page and "0 of 3 pairs judged" in page
    judge_settling_pairs(example["collection"], ev)
    freeze_snapshot(collection=example["collection"], by=ev)
    page = client.get(compare_url(example)).content.decode()
    assert "3 of 3 pairs judged" in page and 'id="compare-latest"' in page
    with jobs_inline():
        job = client.post(
            reverse("scoring:compare-latest", args=["settle"]), {"a": a.pk, "b": b.pk}
        )
    assert job.status_code == 302
    data = client.get(compare_url(example, format="json")).json()["settlement"]["newer"]
    assert data["snapshot"] == 2 and data["a"] and data["b"]
    on_v2 = client.get(
        reverse("scoring:compare", args=["settle"]) + f"?a={data['a']}&b={data['b']}"
    ).content.decode()
    assert 'data-settled="true"' in on_v2
    assert "settled: a is better whatever the unjudged items are" in on_v2


def test_the_api_queues_the_pairs_for_an_evaluator_only(client, example):
    a, b = example["ev"]["run-a"].pk, example["ev"]["run-b"].pk
    url = reverse("evaluation-compare-focus", args=["settle"])
    client.force_login(example["users"][Role.REVIEWER])
    as_json = {"content_type": "application/json"}
    assert client.post(url, {"a": a, "b": b}, **as_json).status_code == 403
    client.force_login(example["users"][Role.EVALUATOR])
    answer = client.post(url, {"a": a, "b": b}, **as_json)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["focus"] == f"compare-{a}-{b}"
    assert (body["pairs"], body["unjudged"], body["queued"], body["raised"]) == (3, 3, 0, 3)
    assert body["rows"] == [["q1", "u1"], ["q2", "u2"], ["q2", "u3"]]
    assert body["review_url"] == f"/c/settle/review/?scope=compare-{a}-{b}"
    # a settled comparison has nothing to queue
    c, d = example["ev"]["run-c"].pk, example["ev"]["run-d"].pk
    assert client.post(url, {"a": c, "b": d}, **as_json).json()["pairs"] == 0


def test_the_review_queue_serves_the_scope(client, example):
    client.force_login(example["users"][Role.EVALUATOR])
    a, b = example["ev"]["run-a"].pk, example["ev"]["run-b"].pk
    client.post(reverse("scoring:compare-focus", args=["settle"]), {"a": a, "b": b})
    judge_settling_pairs  # noqa: B018 - the pairs are judged from the queue below
    reviewer = example["users"][Role.REVIEWER]
    client.force_login(reviewer)
    scope = f"compare-{a}-{b}"
    page = client.get(f"/c/settle/review/?scope={scope}")
    assert page.status_code == 200 and scope in page.content.decode()
    claimed = client.post(
        f"/c/settle/review/claim/?scope={scope}", HTTP_ACCEPT="application/json"
    ).json()
    assert (claimed["task"]["query"], claimed["task"]["item"]) in {
        ("q1", "u1"),
        ("q2", "u2"),
        ("q2", "u3"),
    }
    assert client.get("/c/settle/review/?scope=no-such-set").status_code == 404


def test_the_comparison_api_has_the_complete_pair_list(client, example):
    client.force_login(example["users"][Role.REVIEWER])
    a, b = example["ev"]["run-a"].pk, example["ev"]["run-b"].pk
    st = client.get(f"/api/collections/settle/compare/?a={a}&b={b}").json()["settlement"]
    assert not st["settled"]
    (entry,) = st["measures"]
    assert (entry["low"], entry["high"], entry["verdict"]) == pytest.approx((-0.5, 0.25, "open"))
    assert st["pairs"]["rows"] == [["q1", "u1"], ["q2", "u2"], ["q2", "u3"]]


def test_one_measures_pairs_can_be_queued_alone(client, example):
    client.force_login(example["users"][Role.EVALUATOR])
    a, b = example["ev"]["run-a"].pk, example["ev"]["run-b"].pk
    url = reverse("evaluation-compare-focus", args=["settle"])
    as_json = {"content_type": "application/json"}
    refused = client.post(url, {"a": a, "b": b, "measure": "nDCG@2"}, **as_json)
    assert refused.status_code == 400
    assert "the comparison has no measure 'nDCG@2'; it has P@2" in refused.json()["detail"]
    assert not FocusSet.objects.exists()
    body = client.post(url, {"a": a, "b": b, "measure": "P@2"}, **as_json).json()
    assert (body["pairs"], body["rows"]) == (3, [["q1", "u1"], ["q2", "u2"], ["q2", "u3"]])
    page = client.get(compare_url(example)).content.decode()
    assert "Queue only the 3 pairs of P@2 first" in page
    # the page's form refuses an unknown measure with a message, queueing nothing more
    response = client.post(
        reverse("scoring:compare-focus", args=["settle"]),
        {"a": a, "b": b, "measure": "AP"},
        follow=True,
    )
    assert "the comparison has no measure &#x27;AP&#x27;" in response.content.decode()
