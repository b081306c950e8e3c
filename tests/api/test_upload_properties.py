"""The API's upload endpoints, given any file and any form values: never a 5xx, always
the JSON error shape (issue 10)."""

from __future__ import annotations

import itertools

from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import given
from hypothesis import strategies as st

from tests.hardening.strategies import DATABASE_PROPERTY, files

_names = itertools.count()
_form_text = st.text(max_size=30) | st.sampled_from(["", "x" * 300, "2147483648", "-1", "\x00"])


def _answer_is_clean(response) -> None:
    assert response.status_code < 500, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    if response.status_code >= 400:
        assert set(response.json()) >= {"detail", "errors"}


@DATABASE_PROPERTY
@given(data=files, filename=st.sampled_from(["run.trec", "run.jsonl", "r", "../../x.trec"]),
       order=_form_text, dedup=_form_text)  # fmt: skip
def test_run_uploads_never_answer_5xx(api_world, api_client, data, filename, order, dedup):
    response = api_client("evaluator").post(
        f"/api/collections/{api_world.slug}/runs/",
        {
            "file": SimpleUploadedFile(filename, data),
            "name": f"p{next(_names)}",
            "order": order or "score",
            "dedup": dedup or "error",
            "ignore_unknown_queries": "true",
        },
        format="multipart",
    )
    _answer_is_clean(response)


@DATABASE_PROPERTY
@given(data=files, name=_form_text)
def test_run_upload_names_never_answer_5xx(api_world, api_client, data, name):
    response = api_client("evaluator").post(
        f"/api/collections/{api_world.slug}/runs/",
        {"file": SimpleUploadedFile("run.trec", data), "name": name},
        format="multipart",
    )
    _answer_is_clean(response)


@DATABASE_PROPERTY
@given(data=files, note=_form_text, from_unit=_form_text)
def test_mapping_uploads_never_answer_5xx(api_world, api_client, data, note, from_unit):
    response = api_client("evaluator").post(
        f"/api/collections/{api_world.slug}/mappings/",
        {"file": SimpleUploadedFile("map.tsv", data), "note": note, "from_unit": from_unit},
        format="multipart",
    )
    _answer_is_clean(response)


@DATABASE_PROPERTY
@given(data=files)
def test_collection_import_jobs_end_done_or_failed_with_a_reason(
    api_world, api_client, jobs_inline, data
):
    from jobs.models import Job

    with jobs_inline():
        response = api_client("admin").post(
            f"/api/collections/{api_world.slug}/imports/",
            {"bundle": SimpleUploadedFile("bundle.jsonl", data)},
            format="multipart",
        )
    _answer_is_clean(response)
    if response.status_code == 202:
        job = Job.objects.get(pk=response.json()["id"])
        assert job.state in ("done", "failed"), job.state
        if job.state == "failed":
            assert job.error and "Traceback" not in job.error
