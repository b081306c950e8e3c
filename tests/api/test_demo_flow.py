"""The acceptance flow of scripts/api_demo.sh, with APIClient: a token holder freezes v1,
exports its qrels, uploads the founding text's run, scores it at k=2 and reads
macro R@2 = 4/9 and pooled R@2 = 2/5 (fixtures/recall-example/README.md, by hand)."""

from __future__ import annotations

import io
import math

from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from rest_framework.test import APIClient

from judgments.services import create_api_token, set_membership
from tests.api.conftest import RECALL_EXAMPLE, import_bundle


def client_with_token(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=user).key}")
    return client


def test_freeze_export_upload_score_with_tokens_only(db):
    User = get_user_model()
    collection = import_bundle(RECALL_EXAMPLE / "bundle.jsonl")
    people = {name: User.objects.create_user(name) for name in ("evaluator", "reviewer")}
    for name, user in people.items():
        set_membership(collection=collection, user=user, role=name)
    stranger = User.objects.create_user("stranger")
    evaluator = client_with_token(people["evaluator"])
    c = "/api/collections/recall-example"

    frozen = evaluator.post(f"{c}/snapshots/", {"note": "v1"})
    assert frozen.status_code == 201
    assert (frozen.json()["number"], frozen.json()["created"]) == (1, True)

    qrels = evaluator.get(f"{c}/snapshots/1/qrels")
    exported = b"".join(qrels.streaming_content)
    out = io.StringIO()
    call_command("export_qrels", "recall-example", "--snapshot", "1", stdout=out)
    assert exported == out.getvalue().encode() == (RECALL_EXAMPLE / "qrels.trec").read_bytes()
    assert qrels["ETag"] == f'"sha256:{frozen.json()["content_hash"]}"'

    run = SimpleUploadedFile("run.trec", (RECALL_EXAMPLE / "run.trec").read_bytes())
    uploaded = evaluator.post(f"{c}/runs/", {"file": run, "name": "example"}, format="multipart")
    assert uploaded.status_code == 201

    scored = evaluator.post(f"{c}/evaluations/", {"run": "example", "snapshot": 1, "ks": [2]})
    assert scored.status_code == 201
    report = scored.json()
    recall = report["aggregates"]["R@2"]
    assert math.isclose(recall["macro"], 4 / 9)
    assert math.isclose(recall["pooled"], 2 / 5)
    assert report["snapshot"]["number"] == 1 and report["counts"]["scorable"] == 3
    rows = evaluator.get(report["per_query_url"]).json()["results"]
    assert [(r["query_id"], r["values"]["R@2"]) for r in rows] == [
        ("A", 1 / 3),
        ("B", 1.0),
        ("C", 0.0),
    ]

    again = evaluator.post(f"{c}/evaluations/", {"run": "example", "snapshot": 1, "ks": [2]})
    assert again.status_code == 200 and again.json()["id"] == report["id"]

    reviewer = client_with_token(people["reviewer"])
    run = SimpleUploadedFile("run.trec", (RECALL_EXAMPLE / "run.trec").read_bytes())
    refused = reviewer.post(f"{c}/runs/", {"file": run, "name": "mine"}, format="multipart")
    assert refused.status_code == 403
    assert "needs the evaluator role" in refused.json()["detail"]

    assert client_with_token(stranger).get(f"{c}/").status_code == 404
