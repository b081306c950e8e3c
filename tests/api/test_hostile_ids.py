"""A NUL, or any id the one id rule (``verity_limits.id_problem``) refuses, in a URL path
or a query parameter answers 404 or 400, never 500 (issue 23, item 10). On PostgreSQL a
NUL reaching a lookup raised ``ValueError`` in psycopg: a 500 on every endpoint below.
"""

from __future__ import annotations

from django.test import Client

from judgments.models import JudgmentChange, Query, ReviewTask

NUL = "%00"


def _gets(world) -> list[tuple[str, int]]:
    api = f"/api/collections/{world.slug}"
    site = f"/c/{world.slug}"
    run, ev = world.run.name, world.evaluation.pk
    return [
        (f"{api}/queries/{NUL}/", 404),
        (f"{api}/queries/A{NUL}B/", 404),
        (f"{api}/queries/a%E2%80%AEb/", 404),  # right-to-left override
        (f"{api}/queries/a%E2%80%8Bb/", 404),  # zero-width space
        (f"{api}/items/{NUL}/", 404),
        (f"{api}/members/{NUL}/", 404),
        (f"{api}/queries/?tag={NUL}", 400),
        (f"{api}/queries/?status={NUL}", 400),
        (f"{api}/judgments/?query={NUL}", 400),
        (f"{api}/judgments/?item={NUL}", 400),
        (f"{api}/judgments/?reviewer={NUL}", 400),
        (f"{api}/tasks/?query={NUL}", 400),
        (f"{api}/snapshots/{world.v1.number}/qrels?assessor={NUL}", 400),
        (f"{api}/agreement/?snapshot={NUL}", 400),
        (f"{api}/evaluations/{ev}/report/?format={NUL}", 400),
        (f"{api}/queries/?{NUL}=1", 400),
        (f"{site}/q/{NUL}/", 404),
        (f"{site}/q/A{NUL}/", 404),
        (f"{site}/runs/{run}/q/{NUL}/", 404),
        (f"{site}/review/?query={NUL}", 400),
        (f"{site}/review/?tag={NUL}", 400),
        (f"{site}/?search={NUL}", 400),
        (f"{site}/?tag={NUL}", 400),
        (f"/api/jobs/{world.job.pk}/?x={NUL}", 400),
    ]


def test_every_get_with_a_nul_or_an_invisible_id_answers_404_or_400(api_world, api_client):
    api = api_client("superuser")
    site = Client()
    site.force_login(api_world.users["superuser"])
    for url, expected in _gets(api_world):
        client = api if url.startswith("/api/") else site
        response = client.get(url)
        assert response.status_code == expected, (url, response.status_code)
        if url.startswith("/api/"):
            assert response["Content-Type"] == "application/json", url
        if expected == 400:
            assert "NUL character" in response.content.decode(), url


def test_writes_with_a_nul_parameter_answer_400_and_change_nothing(api_world, api_client):
    api = api_client("superuser")
    site = Client()
    site.force_login(api_world.users["superuser"])
    before = (JudgmentChange.objects.count(), list(ReviewTask.objects.values_list("status")))
    claim = api.post(f"/api/collections/{api_world.slug}/tasks/claim/?query={NUL}")
    assert claim.status_code == 400
    assert claim.json()["errors"][0]["field"] == "query"
    tagged = api.post(f"/api/collections/{api_world.slug}/tasks/claim/?tag={NUL}")
    assert tagged.status_code == 400
    form = site.post(
        f"/c/{api_world.slug}/review/claim/",
        "query=A%00&tag=",
        content_type="application/x-www-form-urlencoded",
    )
    assert form.status_code == 400
    assert "NUL character" in form.content.decode()
    assert before == (
        JudgmentChange.objects.count(),
        list(ReviewTask.objects.values_list("status")),
    )


def test_an_ordinary_id_still_resolves(api_world, api_client):
    response = api_client("superuser").get(f"/api/collections/{api_world.slug}/queries/A/")
    assert response.status_code == 200
    assert response.json()["id"] == "A"
    assert Query.objects.filter(collection=api_world.collection, external_id="A").exists()
