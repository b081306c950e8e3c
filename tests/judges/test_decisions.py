"""What a reviewer did with a proposal shown in the queue (accepted or overridden) is
stored with the judgment, in its transaction; calibration counts it; Kendall's tau
between run orderings is checked against hand calculations; judges are configured by
the collection's admins."""

from __future__ import annotations

import math

import pytest
from django.test import Client

from judges.calibration import run_orderings
from judges.models import DecisionOutcome, JudgeConfig, Proposal, ProposalDecision, Provider
from judges.selectors import ACCEPTED_MARK, calibration_of
from judgments import extensions
from judgments.models import Judgment, ReviewTask, TaskStatus
from judgments.services import set_membership
from tests.factories import make_item, make_proposal, make_query, make_user


@pytest.fixture
def queue(collection_graded):
    """Three open pairs, each with a proposal of grade 2; a reviewer on the queue."""
    reviewer = make_user("rev")
    set_membership(collection=collection_graded, user=reviewer, role="reviewer")
    shown = []
    for n in range(3):
        q = make_query(collection_graded, external_id=f"q{n}")
        i = make_item(collection_graded, external_id=f"d{n}")
        ReviewTask.objects.create(collection=collection_graded, query=q, item=i, source="run")
        shown.append(make_proposal(query=q, item=i, grade=2))
    client = Client()
    client.force_login(reviewer)
    return collection_graded, reviewer, client, shown


def claim(client: Client, collection) -> tuple[ReviewTask, str]:
    assert client.post(f"/c/{collection.slug}/review/claim/").status_code == 303
    page = client.get(f"/c/{collection.slug}/review/").content.decode()
    task = ReviewTask.objects.get(collection=collection, status=TaskStatus.CLAIMED)
    return task, page


def judge(client: Client, collection, **data):
    return client.post(f"/c/{collection.slug}/review/judge/", data, HTTP_ACCEPT="application/json")


@pytest.mark.django_db
def test_accepting_and_overriding_are_both_recorded(queue):
    collection, reviewer, client, _ = queue
    # Accepted with "a": the accept form posts the proposal's grade, note and id.
    task, page = claim(client, collection)
    shown = Proposal.objects.get(query=task.query, item=task.item)
    assert f'<input type="hidden" name="proposal" value="{shown.pk}" form="grade-form">' in page
    assert 'id="grade-form"' in page
    answer = judge(
        client,
        collection,
        task=task.pk,
        grade=2,
        note=f"{ACCEPTED_MARK}{shown.pk}",
        proposal=shown.pk,
    )
    assert answer.status_code == 200
    accepted = ProposalDecision.objects.get(proposal=shown)
    assert (accepted.outcome, accepted.grade, accepted.user, accepted.judgment_version) == (
        DecisionOutcome.ACCEPTED,
        2,
        reviewer,
        1,
    )
    # Overridden: another grade's key; the grade form carries the shown proposal's id.
    task, _ = claim(client, collection)
    other = Proposal.objects.get(query=task.query, item=task.item)
    assert judge(client, collection, task=task.pk, grade=0, proposal=other.pk).status_code == 200
    overridden = ProposalDecision.objects.get(proposal=other)
    assert (overridden.outcome, overridden.grade) == (DecisionOutcome.OVERRIDDEN, 0)
    assert Judgment.objects.get(query=task.query, item=task.item).grade == 0
    # A proposal id of another pair records nothing; the grade stands on its own.
    task, _ = claim(client, collection)
    assert judge(client, collection, task=task.pk, grade=1, proposal=shown.pk).status_code == 200
    assert ProposalDecision.objects.count() == 2
    assert Judgment.objects.filter(query=task.query, item=task.item, grade=1).exists()

    report = calibration_of(collection, "local-baseline", resamples=0)
    assert report["decisions"] == {"accepted": 1, "overridden": 1, "acceptance_rate": 0.5}
    # The accepted label is the judge's own: out of its calibration; the override and
    # the third pair (graded 1 beside a proposal of 2) are in.
    assert report["left_out_accepted"] == 1 and report["pairs"] == 2

    html = client.get(f"/c/{collection.slug}/judges/local-baseline/proposals/").content.decode()
    assert "overridden → 0 by rev" in html and "accepted by rev" in html


@pytest.mark.django_db
def test_the_decision_and_the_judgment_are_one_transaction(queue):
    collection, _, client, _ = queue
    task, _ = claim(client, collection)
    shown = Proposal.objects.get(query=task.query, item=task.item)

    def broken(judgment, user, posted):
        raise RuntimeError("the decision could not be stored")

    extensions.register_grade_listener(broken)
    try:
        with pytest.raises(RuntimeError):
            judge(client, collection, task=task.pk, grade=3, proposal=shown.pk)
    finally:
        extensions._grade_listeners.remove(broken)
    assert not Judgment.objects.filter(query=task.query, item=task.item).exists()
    assert not ProposalDecision.objects.exists()


# Kendall's tau-b by hand: over the n(n-1)/2 pairs of runs, (concordant - discordant) /
# sqrt((pairs - ties in x) * (pairs - ties in y)).
TAU_CASES = [
    # human A > B > C > D; judge A > C > B > D: 6 pairs, only (B, C) discordant: 4/6.
    pytest.param(
        [("A", 0.4, 0.35), ("B", 0.3, 0.1), ("C", 0.2, 0.3), ("D", 0.1, 0.05)],
        ["A", "B", "C", "D"],
        ["A", "C", "B", "D"],
        4 / 6,
        id="one-swap",
    ),
    # B and C tie under people: 5 concordant, 0 discordant, 1 tie in x: 5 / sqrt(5 * 6).
    pytest.param(
        [("A", 0.4, 0.4), ("B", 0.3, 0.2), ("C", 0.3, 0.3), ("D", 0.1, 0.1)],
        ["A", "B", "C", "D"],
        ["A", "C", "B", "D"],
        5 / math.sqrt(30),
        id="tie-under-people",
    ),
    # Reversed: every pair of three discordant.
    pytest.param(
        [("x", 0.9, 0.1), ("y", 0.5, 0.5), ("z", 0.1, 0.9)],
        ["x", "y", "z"],
        ["z", "y", "x"],
        -1.0,
        id="reversed",
    ),
]


@pytest.mark.parametrize(("runs", "human", "model", "tau"), TAU_CASES)
def test_kendall_tau_b_of_the_two_orderings(runs, human, model, tau):
    out = run_orderings(runs)
    assert (out["human_order"], out["model_order"]) == (human, model)
    assert out["kendall_tau"] == pytest.approx(tau, abs=1e-12)
    assert "reason" not in out


def test_tau_is_undefined_below_three_runs_or_when_zero_over_zero():
    two = run_orderings([("a", 0.5, 0.4), ("b", 0.4, 0.5)])
    assert two["kendall_tau"] is None and "at least 3" in two["reason"]
    flat = run_orderings([("a", 0.5, 0.4), ("b", 0.5, 0.5), ("c", 0.5, 0.1)])
    assert flat["kendall_tau"] is None and "0/0" in flat["reason"]


@pytest.mark.django_db
def test_collection_admins_add_and_edit_a_judge_on_a_page(collection_graded, settings):
    settings.VERITY_JUDGE_HOSTS = ["127.0.0.1:8080"]
    admin, evaluator = make_user("adm"), make_user("eva")
    set_membership(collection=collection_graded, user=admin, role="admin")
    set_membership(collection=collection_graded, user=evaluator, role="evaluator")
    client = Client()
    client.force_login(evaluator)
    assert client.get(f"/c/{collection_graded.slug}/judges/new/").status_code == 403
    client.force_login(admin)
    data = {
        "name": "vllm-judge",
        "base_url": "http://127.0.0.1:8080/v1",
        "model": "qwen",
        "api_key_env": "VERITY_JUDGE_KEY_VLLM",
        "timeout": 30,
        "retries": 1,
        "concurrency": 2,
        "request_budget": 100,
        "backoff": 0.5,
        "temperature": 0,
        "max_tokens": 256,
        "prompt_version": "umbrela-v1",
        "show_in_queue": "on",
    }
    assert client.post(f"/c/{collection_graded.slug}/judges/new/", data).status_code == 302
    made = JudgeConfig.objects.get(collection=collection_graded, name="vllm-judge")
    assert (made.provider, made.api_key_env, made.concurrency) == (
        Provider.OPENAI,
        "VERITY_JUDGE_KEY_VLLM",
        2,
    )
    url = f"/c/{collection_graded.slug}/judges/vllm-judge/edit/"
    assert client.post(url, {**data, "concurrency": 8}).status_code == 302
    made.refresh_from_db()
    assert made.concurrency == 8
    refused = client.post(
        f"/c/{collection_graded.slug}/judges/new/", {**data, "name": "local-baseline"}
    )
    assert refused.status_code == 200 and "built-in offline judge" in refused.content.decode()
