"""Uploading a run made for another collection (the case in issue 13): refused with line
numbers and nothing written; with ``ignore_unknown_queries`` stored without those lines,
and the answer counts them."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from judgments.models import Item, ReviewTask
from scoring.models import Run


def upload(client, slug: str, text: str, name: str, **extra):
    return client.post(
        f"/api/collections/{slug}/runs/",
        {"file": SimpleUploadedFile("run.trec", text.encode()), "name": name, **extra},
        format="multipart",
    )


def test_a_run_for_another_collection_is_refused_over_the_api(api_world, api_client):
    client = api_client("evaluator")
    refused = upload(client, api_world.slug, "Z Q0 zzz 1 1.0 t\n", "wrong")
    assert refused.status_code == 400
    data = refused.json()
    assert "send ignore_unknown_queries=true" in data["detail"]
    assert [e["message"] for e in data["errors"]] == [
        f"run.trec line 1: query 'Z' is not in collection '{api_world.slug}'"
    ]
    assert not Run.objects.filter(name="wrong").exists()
    assert not Item.objects.filter(external_id="zzz").exists()
    assert not ReviewTask.objects.filter(item__external_id="zzz").exists()

    mixed = "A Q0 a 1 2.0 t\nZ Q0 zzz 1 1.0 t\n"
    stored = upload(client, api_world.slug, mixed, "mixed", ignore_unknown_queries="true")
    assert stored.status_code == 201, stored.json()
    report = stored.json()["import_report"]
    assert (report["unknown_query_ids"], report["unknown_query_lines_skipped"]) == (1, 1)
    assert report["queries_not_in_collection"] == ["Z"]
    assert report["unknown_item_ids"] == 0
    assert report["unknown_ids"].startswith("1 unknown query id: their 1 line was skipped")
    assert stored.json()["stages"][0]["n_queries"] == 1
    assert not Item.objects.filter(external_id="zzz").exists()
