"""The API's claim, query at a time: scoped to one query or one tag, or staying on the
query the client is working on."""

from __future__ import annotations


def claim_url(world, params: str = "") -> str:
    return f"/api/collections/{world.slug}/tasks/claim/{params}"


def test_claim_scoped_to_a_query_or_a_tag(api_world, api_client):
    reviewer = api_client("reviewer")
    # The one open task is (C, y): a scope without it is empty, with it serves it.
    assert reviewer.post(claim_url(api_world, "?query=A")).status_code == 204
    assert reviewer.post(claim_url(api_world, "?tag=no-such-tag")).status_code == 204
    claimed = reviewer.post(claim_url(api_world, "?query=C"))
    assert claimed.status_code == 200
    assert (claimed.json()["query"], claimed.json()["item"]) == ("C", "y")
    again = reviewer.post(claim_url(api_world, "?current=C"))
    assert again.json()["id"] == claimed.json()["id"]  # the held task comes back
    missing = reviewer.post(claim_url(api_world, "?query=nope"))
    assert missing.status_code == 404
    assert "no query 'nope'" in missing.json()["detail"]
