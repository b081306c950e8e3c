"""Issue 22, item 5: one upload limit, VERITY_MAX_UPLOAD_BYTES, on every path. With the
limit at 1,000 bytes the API answered 413 to a larger run but the page form accepted and
imported it (fails on main). Now the page answers with a form error naming the size and
the limit, nothing is stored and no job starts; the API still answers 413; every file
field of every page form carries the validator."""

from __future__ import annotations

import importlib
import re
from html import unescape

import pytest
from django import forms
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from jobs.models import Job
from judgments.models import Role
from judgments.uploads import within_upload_limit
from scoring.models import Run
from tests.scoring.conftest import RECALL_EXAMPLE
from tests.scoring.report_helpers import member

pytestmark = pytest.mark.django_db

RUN = (RECALL_EXAMPLE / "run.trec").read_bytes()
BIG = b"".join(b"A Q0 x%06d %d %d.0 big\n" % (n, n + 1, 9000 - n) for n in range(200))


def text(response) -> str:
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode())))


def post_run(client, name: str, content: bytes):
    return client.post(
        "/c/recall-example/runs/",
        {
            "file": SimpleUploadedFile("run.trec", content),
            "name": name,
            "order": "score",
            "dedup": "error",
            "pool_depth": 10,
        },
    )


def test_the_run_form_refuses_a_file_over_the_limit_with_a_form_error(
    client,
    recall_v1,
    settings,
    jobs_inline,
):
    settings.VERITY_MAX_UPLOAD_BYTES = 2_000
    assert len(BIG) > 2_000 > len(RUN) + 1_000  # the small run's body fits, the big one not
    client.force_login(member(recall_v1.collection, "eve", Role.EVALUATOR))

    with jobs_inline():
        refused = post_run(client, "big", BIG)
    shown = text(refused)

    assert refused.status_code == 400
    assert "this server accepts uploads of at most 2,000 bytes (VERITY_MAX_UPLOAD_BYTES)" in shown
    assert "Nothing was stored" in shown
    assert 'value="big"' in refused.content.decode()  # the other fields came through
    assert not Job.objects.exists() and not Run.objects.exists()

    with jobs_inline():
        accepted = post_run(client, "small", RUN)
    assert accepted.status_code == 302
    assert Run.objects.get().name == "small"


def test_the_api_answers_413_under_the_same_setting(recall_v1, settings):
    settings.VERITY_MAX_UPLOAD_BYTES = 2_000
    api = APIClient()
    api.force_authenticate(member(recall_v1.collection, "eve", Role.EVALUATOR))
    data = {"file": SimpleUploadedFile("run.trec", BIG), "name": "big"}
    answer = api.post("/api/collections/recall-example/runs/", data, format="multipart")
    assert answer.status_code == 413
    assert "at most 2000 bytes (VERITY_MAX_UPLOAD_BYTES)" in answer.json()["detail"]
    assert not Run.objects.exists()


def _forms_in(module_name: str) -> list[type[forms.BaseForm]]:
    module = importlib.import_module(module_name)
    return [
        v for v in vars(module).values() if isinstance(v, type) and issubclass(v, forms.BaseForm)
    ]


@pytest.mark.parametrize(
    "module", ["judgments.forms", "scoring.forms", "scoring.upload_options", "judges.views"]
)
def test_every_page_file_field_carries_the_limit(module):
    for form in _forms_in(module):
        for name, field in form.base_fields.items():
            if isinstance(field, forms.FileField):
                assert within_upload_limit in field.validators, f"{form.__name__}.{name}"
