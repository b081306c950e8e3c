"""Run and unit-mapping uploads: streamed to disk, bounded, refused with file:line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile, TemporaryUploadedFile
from rest_framework.test import APIClient

from judgments.api import uploads
from judgments.api.errors import PayloadTooLarge
from scoring.api import views as scoring_views
from scoring.models import Run, UnitMapping
from tests.api.conftest import RECALL_EXAMPLE


def runs_url(world) -> str:
    return f"/api/collections/{world.slug}/runs/"


def trec(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode("utf-8"), content_type="text/plain")


def test_an_upload_goes_to_disk_under_its_own_name_and_is_removed(
    api_world, api_client, monkeypatch
):
    seen: dict[str, object] = {}
    real_staged, real_import = uploads.staged_upload, scoring_views.import_run

    def staged(upload):
        seen["upload"] = type(upload)
        return real_staged(upload)

    def import_run(*, path: Path, **kwargs):
        seen["path"], seen["existed"] = path, path.is_file()
        return real_import(path=path, **kwargs)

    monkeypatch.setattr(scoring_views, "staged_upload", staged)
    monkeypatch.setattr(scoring_views, "import_run", import_run)
    response = api_client("evaluator").post(
        runs_url(api_world),
        {"file": trec("run.trec", (RECALL_EXAMPLE / "run.trec").read_text()), "name": "bm25"},
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    assert seen["upload"] is TemporaryUploadedFile  # even a small file: never in memory
    assert seen["existed"] and seen["path"].name == "run.trec"
    assert seen["path"].parent.name.startswith("verity-upload-")
    assert not seen["path"].exists()  # removed after the import
    data = response.json()
    assert data["source_filename"] == "run.trec"
    assert data["stages"] == [
        {"name": "default", "position": 0, "depth": 4, "n_queries": 3, "n_rows": 8}
    ]
    assert data["import_report"]["unjudged_found"] == 1  # y for C (B's y was judged since)


def test_a_refused_run_lists_each_problem_with_file_and_line(api_world, api_client):
    bad = "A Q0 a 1 4.0 t\nA Q0 b one 3.0 t\nB Q0\nA Q0 a 3 2.0 t\n"
    response = api_client("evaluator").post(
        runs_url(api_world), {"file": trec("bad.trec", bad), "name": "bad"}, format="multipart"
    )
    assert response.status_code == 400
    data = response.json()
    assert data["detail"] == "bad.trec: the run was refused; nothing was imported."
    messages = [e["message"] for e in data["errors"]]
    assert all(e["field"] == "file" for e in data["errors"])
    assert any(m.startswith("bad.trec line 2: rank 'one'") for m in messages)
    assert any(m.startswith("bad.trec line 3: expected 6 fields") for m in messages)
    assert not Run.objects.filter(name="bad").exists()


def test_duplicates_are_refused_unless_dedup_first(api_world, api_client):
    dup = "A Q0 a 1 4.0 t\nA Q0 a 2 3.0 t\n"
    client = api_client("evaluator")
    refused = client.post(
        runs_url(api_world), {"file": trec("d.trec", dup), "name": "dup"}, format="multipart"
    )
    assert refused.status_code == 400
    assert "send dedup=first" in refused.json()["errors"][0]["message"]
    kept = client.post(
        runs_url(api_world),
        {"file": trec("d.trec", dup), "name": "dup", "dedup": "first"},
        format="multipart",
    )
    assert kept.status_code == 201
    assert (kept.json()["dedup"], kept.json()["duplicates_dropped"]) == ("first", 1)


def test_a_taken_run_name_is_409(api_world, api_client):
    response = api_client("evaluator").post(
        runs_url(api_world),
        {"file": trec("r.trec", "A Q0 a 1 1.0 t\n"), "name": api_world.run.name},
        format="multipart",
    )
    assert response.status_code == 409
    assert response.json()["errors"] == [{"field": "name", "message": "taken"}]


def test_a_request_over_the_limit_is_413_before_it_is_read(api_world, api_client, settings):
    settings.VERITY_MAX_UPLOAD_BYTES = 300
    body = (RECALL_EXAMPLE / "run.trec").read_text() * 3
    response = api_client("evaluator").post(
        runs_url(api_world), {"file": trec("big.trec", body), "name": "big"}, format="multipart"
    )
    assert response.status_code == 413
    assert "at most 300 bytes" in response.json()["detail"]
    assert not Run.objects.filter(name="big").exists()


def test_the_limit_holds_for_a_session_upload_whose_csrf_check_reads_the_body(api_world, settings):
    settings.VERITY_MAX_UPLOAD_BYTES = 300
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(api_world.users["evaluator"])
    client.cookies["csrftoken"] = "a" * 32  # with a cookie, the check reads the form field
    body = (RECALL_EXAMPLE / "run.trec").read_text() * 3
    response = client.post(
        runs_url(api_world), {"file": trec("big.trec", body), "name": "big"}, format="multipart"
    )
    assert response.status_code == 413


def test_a_body_longer_than_declared_is_cut_at_the_limit():
    handler = uploads.LimitedTemporaryFileUploadHandler(limit=10)
    handler.handle_raw_input(None, {}, 0, b"--x")  # no Content-Length declared
    handler.new_file("file", "run.trec", "text/plain", None)
    handler.receive_data_chunk(b"12345", 0)
    path = handler.file.temporary_file_path()
    with pytest.raises(PayloadTooLarge):
        handler.receive_data_chunk(b"678901", 5)
    assert not Path(path).exists()  # the partial file is gone


def test_a_unit_mapping_uploads_once_per_content(api_world, api_client, jobs_inline):
    url = f"/api/collections/{api_world.slug}/mappings/"
    client = api_client("evaluator")

    def upload():
        mapping = SimpleUploadedFile("m.tsv", b"c#1\tc\nc#2\tc\n")
        with jobs_inline():
            accepted = client.post(url, {"file": mapping, "note": "c chunks"}, format="multipart")
        assert accepted.status_code == 202, accepted.content
        return client.get(accepted["Location"]).json()

    first, again = upload(), upload()
    assert (first["state"], again["state"]) == ("done", "done")
    assert first["result"]["mapping"] == again["result"]["mapping"] == 2
    assert (first["result"]["created"], again["result"]["created"]) == (True, False)
    assert first["result"]["api_url"] == f"{url}2/"
    assert UnitMapping.objects.filter(collection=api_world.collection).count() == 2


def test_a_refused_mapping_names_the_line(api_world, api_client, jobs_inline):
    client = api_client("evaluator")
    with jobs_inline():
        response = client.post(
            f"/api/collections/{api_world.slug}/mappings/",
            {"file": SimpleUploadedFile("m.tsv", b"c#1 c\n")},
            format="multipart",
        )
    assert response.status_code == 202
    job = client.get(response["Location"]).json()
    assert job["state"] == "failed"
    assert job["errors"][0].startswith("m.tsv line 1:")
