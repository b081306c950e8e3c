"""Qrels export over HTTP: streamed, byte-identical to ``manage.py export_qrels``."""

from __future__ import annotations

import hashlib
import io

import pytest
from django.core.management import call_command


def export_command(slug: str, *args: str) -> bytes:
    out = io.StringIO()
    call_command("export_qrels", slug, *args, stdout=out)
    return out.getvalue().encode("utf-8")


def body(response) -> bytes:
    assert response.streaming, "the export must be a StreamingHttpResponse"
    return b"".join(response.streaming_content)


@pytest.mark.parametrize(
    ("query", "command_args"),
    [
        ("", ()),
        ("?with_unjudged=1", ("--with-unjudged",)),
        ("?format=jsonl", ("--format", "jsonl")),
    ],
    ids=["trec", "trec-with-unjudged", "jsonl"],
)
def test_export_is_byte_identical_to_the_command(api_world, api_client, query, command_args):
    slug, number = api_world.slug, api_world.v2.number
    response = api_client("evaluator").get(
        f"/api/collections/{slug}/snapshots/{number}/qrels{query}"
    )
    assert response.status_code == 200
    assert body(response) == export_command(slug, "--snapshot", str(number), *command_args)
    assert response["ETag"] == f'"sha256:{api_world.v2.content_hash}"'


def test_trec_export_is_text_and_the_jsonl_export_hashes_to_the_snapshot(api_world, api_client):
    client, slug = api_client("evaluator"), api_world.slug
    trec = client.get(f"/api/collections/{slug}/snapshots/1/qrels")
    assert trec["Content-Type"] == "text/plain; charset=utf-8"
    assert body(trec).decode().splitlines()[:2] == ["A 0 a 1", "A 0 b 1"]
    jsonl = client.get(f"/api/collections/{slug}/snapshots/1/qrels?format=jsonl")
    assert jsonl["Content-Type"] == "application/jsonl"
    assert hashlib.sha256(body(jsonl)).hexdigest() == api_world.v1.content_hash


def test_v2_with_unjudged_lists_the_open_task_as_minus_one(api_world, api_client):
    response = api_client("admin").get(
        f"/api/collections/{api_world.slug}/snapshots/2/qrels?with_unjudged=true"
    )
    assert "C 0 y -1" in body(response).decode().splitlines()


def test_a_matching_if_none_match_answers_304(api_world, api_client):
    url = f"/api/collections/{api_world.slug}/snapshots/1/qrels"
    etag = api_client("evaluator").get(url)["ETag"]
    response = api_client("evaluator").get(url, HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 304
    assert response["ETag"] == etag


@pytest.mark.parametrize(
    ("query", "field"),
    [("?format=csv", "format"), ("?with_unjudged=maybe", "with_unjudged")],
)
def test_unknown_options_are_refused_naming_the_parameter(api_world, api_client, query, field):
    response = api_client("evaluator").get(
        f"/api/collections/{api_world.slug}/snapshots/1/qrels{query}"
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == field


def test_a_missing_snapshot_answers_404_naming_the_versions(api_world, api_client):
    response = api_client("evaluator").get(f"/api/collections/{api_world.slug}/snapshots/9/qrels")
    assert response.status_code == 404
    assert response.json()["detail"].endswith("it has v1, v2")
