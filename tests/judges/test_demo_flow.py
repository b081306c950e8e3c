"""Issue 16's acceptance on the demo: the offline baseline judge as a job with progress,
its proposals in the review queue with a one-key accept, the calibration report equal
to the ``krippendorff`` package and scikit-learn on the same pairs, and a freeze that
holds no model label."""

from __future__ import annotations

import io
import json

import krippendorff
import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from sklearn.metrics import cohen_kappa_score

from jobs.models import Job, JobState
from judges.models import Proposal, ProposalState
from judges.selectors import ACCEPTED_MARK
from judges.services import accepted_proposals
from judges.tasks import start_proposals
from judgments.models import (
    Collection,
    Judgment,
    Query,
    ReviewTask,
    SnapshotJudgment,
    TaskStatus,
)
from judgments.services import freeze_snapshot


@pytest.fixture
def demo(settings, job_dir):
    settings.DEBUG = True  # load_demo's users need it
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("load_demo", stdout=io.StringIO())
    return Collection.objects.get(slug="demo-handbook")


def calibration_json(slug: str, judge: str = "local-baseline") -> dict:
    out = io.StringIO()
    call_command("calibration", slug, "--judge", judge, "--json", stdout=out)
    return json.loads(out.getvalue())


def reference_orderings(collection: Collection) -> dict:
    """The orderings recomputed from the rows with trec_eval's nDCG@10 (pytrec_eval)."""
    import pytrec_eval
    from scipy.stats import kendalltau

    from scoring.models import RankedList, Run

    relevant = set(
        Query.objects.filter(collection=collection, status="relevant").values_list(
            "external_id", flat=True
        )
    )
    human: dict[str, dict[str, int]] = {}
    for q, i, g in Judgment.objects.filter(query__collection=collection).values_list(
        "query__external_id", "item__external_id", "grade"
    ):
        human.setdefault(q, {})[i] = g
    model: dict[str, dict[str, int]] = {}
    for p in Proposal.objects.filter(collection=collection, state="ok").order_by(
        "created_at", "pk"
    ):
        model.setdefault(p.query.external_id, {})[p.item.external_id] = p.grade
    rel = collection.relevant_grade
    shared = sorted(
        q
        for q in relevant
        if max(human.get(q, {0: 0}).values()) >= rel and max(model.get(q, {0: 0}).values()) >= rel
    )
    scores: dict[str, dict[str, float]] = {}
    for run in Run.objects.filter(collection=collection):
        final = run.stages.order_by("-position").first()
        ranked = dict(RankedList.objects.filter(stage=final).values_list("query_id", "items"))
        trec_run = {
            q: {item: float(len(items) - r) for r, item in enumerate(items)}
            for q, items in ranked.items()
            if q in shared
        }
        scores[run.name] = {}
        for name, qrels in (("human", human), ("model", model)):
            per_query = pytrec_eval.RelevanceEvaluator(
                {q: qrels[q] for q in shared}, {"ndcg_cut.10"}
            ).evaluate(trec_run)
            # A shared query the run lacks scores 0 (as trec_eval -c).
            total = sum(per_query.get(q, {}).get("ndcg_cut_10", 0.0) for q in shared)
            scores[run.name][name] = total / len(shared)
    names = sorted(scores)
    orders = tuple(
        [n for n in sorted(names, key=lambda n: (-scores[n][labels], n))]
        for labels in ("human", "model")
    )
    tau = kendalltau([scores[n]["human"] for n in names], [scores[n]["model"] for n in names])
    return {"queries": len(shared), "scores": scores, "orders": orders, "tau": tau.statistic}


@pytest.mark.django_db(transaction=False)
def test_demo_judge_job_calibration_and_freeze(demo, jobs_inline, client):
    evaluator = get_user_model().objects.get(username="evaluator")
    human_pairs = set(Judgment.objects.filter(query__collection=demo).values_list("query", "item"))
    pooled = set(
        ReviewTask.objects.filter(collection=demo, status=TaskStatus.PENDING).values_list(
            "query", "item"
        )
    )
    assert len(human_pairs) == 317 and len(pooled) == 417

    # A judge job over the pooled pairs and the judged ones, with progress.
    with jobs_inline():
        job = start_proposals(
            collection=demo, judge="local-baseline", include_judged=True, by=evaluator
        )
    job = Job.objects.get(pk=job.pk)
    assert job.state == JobState.DONE, job.error
    assert (job.phase, job.done, job.total) == ("asking local-baseline", 734, 734)
    assert job.result["proposals"] == 734
    assert job.result["summary"] == "local-baseline: 734 proposals stored (734 graded, 0 failed)."
    proposals = Proposal.objects.filter(collection=demo)
    assert proposals.filter(state=ProposalState.OK, job=job).count() == 734
    assert set(proposals.values_list("grade", flat=True)) <= set(demo.grades)
    first = proposals.first()
    assert first.model.startswith("wordllama") and len(first.prompt_hash) == 64
    assert len(first.params["cuts"]) == 3 and "cosine similarity" in first.rationale

    # Calibration equals the reference packages on the same pairs, to 1e-9.
    report = calibration_json(demo.slug)
    assert report["pairs"] == 317
    per_pair = report["per_pair"]
    labels = {
        (j.query.external_id, j.item.external_id): j.grade
        for j in Judgment.objects.filter(query__collection=demo).select_related("query", "item")
    }
    assert {(q, i): h for q, i, _, h in per_pair} == labels
    model = [m for _, _, m, _ in per_pair]
    human = [h for _, _, _, h in per_pair]
    assert report["kappa"] == pytest.approx(
        cohen_kappa_score(human, model, labels=[0, 1, 2, 3]), abs=1e-9
    )
    assert report["kappa_quadratic"] == pytest.approx(
        cohen_kappa_score(human, model, labels=[0, 1, 2, 3], weights="quadratic"), abs=1e-9
    )
    alpha = krippendorff.alpha(
        reliability_data=np.array([model, human], dtype=float),
        value_domain=[0, 1, 2, 3],
        level_of_measurement="ordinal",
    )
    assert report["alpha_ordinal"] == pytest.approx(alpha, abs=1e-9)
    assert sum(map(sum, report["confusion"])) == 317
    one_two = sum(1 for m, h in zip(model, human, strict=True) if (h, m) == (1, 2))
    assert report["confusion"][1][2] == one_two
    lo, hi = report["interval"]["kappa"]
    assert lo < report["kappa"] < hi and report["interval"]["seed"] == 0
    assert calibration_json(demo.slug) == report  # seeded: the same interval again

    # The runs ordered under people's labels and under the judge's, each final stage by
    # nDCG@10 on the queries relevant under both: scores equal trec_eval's (pytrec_eval)
    # on qrels and rankings built here from the rows, tau equals scipy's on those.
    orderings = report["run_orderings"]
    expected = reference_orderings(demo)
    assert orderings["queries"] == expected["queries"] > 0
    for row in orderings["scores"]:
        for labels in ("human", "model"):
            assert row["scores"][labels] == pytest.approx(
                expected["scores"][row["run"]][labels], abs=1e-9
            )
    assert (orderings["human_order"], orderings["model_order"]) == expected["orders"]
    assert orderings["kendall_tau"] == pytest.approx(expected["tau"], abs=1e-12)

    # The default policy: a freeze after the job finds nothing changed since v1.
    snapshot, created = freeze_snapshot(collection=demo, by=evaluator)
    assert (snapshot.number, created) == (1, False)
    frozen = set(SnapshotJudgment.objects.of(snapshot).values_list("query", "item"))
    assert frozen == human_pairs
    # What an accepting policy would add: the proposals of the pooled pairs only, and
    # none on a query people confirmed has no answer.
    no_answer = set(Query.objects.filter(collection=demo, status="no_answer").values_list("pk"))
    accepted = accepted_proposals(demo, "local-baseline")
    assert {(p.query_id, p.item_id) for p in accepted} == {
        (q, i) for q, i in pooled if (q,) not in no_answer
    }

    # The queue shows the proposal of the item on screen; "a" accepts it.
    reviewer = get_user_model().objects.get(username="reviewer")
    client.force_login(reviewer)
    claimed = client.post(f"/c/{demo.slug}/review/claim/")  # claiming is a POST
    assert claimed.status_code == 303
    page = client.get(f"/c/{demo.slug}/review/").content.decode()
    task = ReviewTask.objects.get(collection=demo, status=TaskStatus.CLAIMED, claimed_by=reviewer)
    proposal = Proposal.objects.get(query=task.query, item=task.item)
    assert "Proposed by model judge <code>local-baseline</code>" in page
    assert f'name="grade" value="{proposal.grade}" data-key="a"' in page
    answer = client.post(
        f"/c/{demo.slug}/review/judge/",
        {"task": task.pk, "grade": proposal.grade, "note": f"{ACCEPTED_MARK}{proposal.pk}"},
        HTTP_ACCEPT="application/json",
    )
    assert answer.status_code == 200 and answer.json()["recorded"]["grade"] == proposal.grade
    judgment = Judgment.objects.get(query=task.query, item=task.item)
    assert judgment.note.startswith(ACCEPTED_MARK) and judgment.reviewer == reviewer
    # The accepted label is the judge's own: it does not count for its calibration.
    after = calibration_json(demo.slug)
    assert (after["pairs"], after["left_out_accepted"]) == (317, 1)

    # The calibration page shows the same figures.
    html = client.get(f"/c/{demo.slug}/judges/local-baseline/calibration/").content.decode()
    assert f'data-figure="kappa">{report["kappa"]:.3f}<' in html


@pytest.mark.django_db
def test_hidden_when_blind_or_switched_off(demo, client):
    from judges.models import JudgeConfig, Provider
    from judges.selectors import proposal_for_review

    task = ReviewTask.objects.filter(collection=demo).first()
    Proposal.objects.create(
        collection=demo,
        query=task.query,
        item=task.item,
        judge="local-baseline",
        provider=Provider.LOCAL,
        prompt_version="baseline-v1",
        prompt_hash="0" * 64,
        grade=2,
        state=ProposalState.OK,
    )
    assert proposal_for_review(demo, task.query_id, task.item_id) is not None
    demo.assessors_per_item = 2  # issue 12's field: several assessors assess blind
    assert proposal_for_review(demo, task.query_id, task.item_id) is None
    demo.assessors_per_item = 1
    JudgeConfig.objects.create(
        collection=demo, name="local-baseline", provider=Provider.LOCAL, show_in_queue=False
    )
    assert proposal_for_review(demo, task.query_id, task.item_id) is None
