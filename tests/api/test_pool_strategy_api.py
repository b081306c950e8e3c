"""Pooling strategies over the API (issue 28): the collection's setting and a run's option."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from judgments.models import ApiToken, PoolArm
from judgments.services import create_api_token, set_membership, update_collection_settings
from scoring.services import import_run
from tests.api.conftest import OTHER_RUN
from tests.api.test_statement_counts import JUDGE_MAX
from tests.factories import make_collection, make_query, make_user


def test_an_admin_sets_the_strategy_and_a_run_names_its_own(api_world, api_client):
    url = f"/api/collections/{api_world.slug}/"
    refused = api_client("admin").patch(url, {"pool_floor": 3}, format="json")
    assert refused.status_code == 409, refused.json()
    assert "goes with mtf or bandit" in str(refused.json())
    changed = api_client("admin").patch(
        url, {"pool_strategy": "bandit", "pool_floor": 2}, format="json"
    )
    assert changed.status_code == 200, changed.json()
    assert (changed.json()["pool_strategy"], changed.json()["pool_floor"]) == ("bandit", 2)
    upload = SimpleUploadedFile("other.trec", OTHER_RUN, content_type="text/plain")
    made = api_client("evaluator").post(
        f"{url}runs/",
        {"file": upload, "name": "other-mtf", "pool_strategy": "depth 1 + mtf"},
        format="multipart",
    )
    assert made.status_code == 201, made.json()
    arms = PoolArm.objects.filter(label="run other-mtf")
    assert arms.exists() and set(arms.values_list("strategy", flat=True)) == {"mtf"}


def test_an_unknown_strategy_is_a_400_naming_the_choices(api_world, api_client):
    upload = SimpleUploadedFile("other.trec", OTHER_RUN, content_type="text/plain")
    response = api_client("evaluator").post(
        f"/api/collections/{api_world.slug}/runs/",
        {"file": upload, "name": "other-x", "pool_strategy": "bandit"},
        format="multipart",
    )
    assert response.status_code == 400
    assert "pools by depth; set its pool_strategy" in str(response.json())


@pytest.mark.skipif(connection.vendor != "postgresql", reason="statement counts are PG's")
def test_a_bandit_judge_request_takes_two_statements_more(
    db, tmp_path, django_assert_max_num_queries
):
    collection = make_collection(slug="hot-bandit")
    update_collection_settings(collection=collection, pool_strategy="bandit")
    make_query(collection, external_id="q0")
    path = tmp_path / "run.trec"
    path.write_text("".join(f"q0 Q0 d{n} {n} {100 - n} r\n" for n in range(1, 21)))
    import_run(collection=collection, path=path, name="bm25")
    user = make_user("ana")
    set_membership(collection=collection, user=user, role="reviewer")
    client = APIClient()
    issued = create_api_token(user=user)
    ApiToken.objects.filter(pk=issued.token.pk).update(last_used_at=timezone.now())
    client.credentials(HTTP_AUTHORIZATION=f"Token {issued.key}")
    base = f"/api/collections/{collection.slug}"
    task = client.post(f"{base}/tasks/claim/").json()
    with django_assert_max_num_queries(JUDGE_MAX + 2):
        judged = client.post(f"{base}/tasks/{task['id']}/judge/", {"grade": 2}, format="json")
    assert judged.status_code == 201, judged.content
    arm = PoolArm.objects.get(query__external_id="q0")
    assert (arm.judged, arm.relevant, arm.position) == (1, 1, 1)
