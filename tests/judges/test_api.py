"""The judges' API: start a judging job (202 + Location), list proposals, calibration."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from judges.models import Proposal
from judgments.models import ReviewTask
from judgments.services import set_membership
from tests.factories import make_item, make_judgment, make_query, make_user


@pytest.fixture
def setup(collection_graded):
    evaluator, reviewer = make_user("eva"), make_user("rev")
    set_membership(collection=collection_graded, user=evaluator, role="evaluator")
    set_membership(collection=collection_graded, user=reviewer, role="reviewer")
    for n in range(3):
        q = make_query(collection_graded, external_id=f"q{n}", text=f"how to reset password {n}")
        i = make_item(collection_graded, external_id=f"d{n}", text="Reset your password here.")
        ReviewTask.objects.create(collection=collection_graded, query=q, item=i, source="run")
        make_judgment(query=q, grade=n % 4, note="")
    return collection_graded, evaluator, reviewer


@pytest.mark.django_db
def test_start_list_and_calibrate_over_the_api(setup, jobs_inline):
    collection, evaluator, reviewer = setup
    api = APIClient()
    url = f"/api/collections/{collection.slug}/judges/local-baseline/proposals/"
    api.force_authenticate(reviewer)
    assert api.post(url, {}, format="json").status_code == 403  # evaluators start judges
    api.force_authenticate(evaluator)
    bad = api.post(url, {"pairs": [["q0", "nope"]]}, format="json")
    assert bad.status_code == 400 and "no item 'nope'" in str(bad.json())
    with jobs_inline():
        answer = api.post(url, {"limit": 2}, format="json")
    assert answer.status_code == 202
    assert answer["Location"] == f"/api/jobs/{answer.json()['id']}/"
    listed = api.get(url).json()
    assert listed["count"] == 2 == Proposal.objects.count()
    row = listed["results"][0]
    assert (
        row["judge"] == "local-baseline"
        and row["state"] == "ok"
        and row["query"]
        in {
            "q0",
            "q1",
        }
    )
    cal = api.get(f"/api/collections/{collection.slug}/judges/local-baseline/calibration/")
    assert cal.status_code == 200 and cal.json()["kappa"] is None
    assert "at least 10 are needed" in cal.json()["reason"]
    missing = api.get(f"/api/collections/{collection.slug}/judges/gpt-9/calibration/")
    assert missing.status_code == 404 and "local-baseline" in str(missing.json())


@pytest.mark.django_db
def test_the_judging_request_is_bounded(setup):
    """limit and pairs have maxima, said as 400s (not a job of a trillion pairs)."""
    collection, evaluator, _ = setup
    api = APIClient()
    api.force_authenticate(evaluator)
    url = f"/api/collections/{collection.slug}/judges/local-baseline/proposals/"
    response = api.post(url, {"limit": 10**12}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"field": "limit", "message": "Ensure this value is less than or equal to 100000."}
    ]
    assert not Proposal.objects.exists()
