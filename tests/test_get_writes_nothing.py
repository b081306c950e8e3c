"""No GET writes: every GET URL of the URLconf, as an evaluator on the demo, with real
arguments, leaves every table's row count as it was.

The URL list is built from the URLconf itself (so a new page is walked without anyone
adding it here); each pattern's arguments come from the demo that ``load_demo`` makes,
plus one finished job. Pages that also answer ``?format=json`` / ``csv`` are walked in
those forms too. Only Django's own admin is left out: for an evaluator (not staff) each
of its pages is a redirect to the login.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from jobs.models import Job, JobKind, JobState
from judgments.models import Collection
from scoring.models import Evaluation

pytestmark = pytest.mark.django_db


def named_patterns(
    resolvers: list[Any], namespace: str = "", prefix: str = ""
) -> list[tuple[str, str, list[str]]]:
    """(name for reverse, route, parameter names) of every named pattern."""
    found = []
    for entry in resolvers:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if entry.namespace == "admin":
                continue
            ns = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            found += named_patterns(entry.url_patterns, ns, route)
        elif isinstance(entry, URLPattern) and entry.name:
            params = list(
                getattr(entry.pattern, "converters", {}) or entry.pattern.regex.groupindex
            )
            found.append((namespace + entry.name, route, params))
    return found


def arguments(route: str, params: list[str], demo: dict[str, Any]) -> dict[str, Any]:
    kinds = {"evaluations": demo["evaluation"], "jobs": demo["job"]}
    pk = next((v for k, v in kinds.items() if k in route), demo["evaluation"])
    values = {
        "slug": "demo-handbook",
        "name": "pipeline",
        "judge": "local-baseline",
        "pk": pk,
        "number": 1,
        "other": 1,
        "a": 1,
        "b": 1,
        "external_id": "q001",
        "qid": "q001",
        "item_id": "d0001",
        "username": "evaluator",
        "uidb64": "MQ",
        "token": "set-password",
    }
    return {p: values[p] for p in params}


def row_counts() -> dict[str, int]:
    return {
        m._meta.label: m._default_manager.count()
        for m in apps.get_models()
        if m._meta.managed and not m._meta.proxy
    }


@pytest.fixture
def demo(settings, job_dir) -> dict[str, Any]:
    settings.DEBUG = True  # load_demo's users need it
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("load_demo", stdout=io.StringIO())
    collection = Collection.objects.get(slug="demo-handbook")
    evaluator = get_user_model().objects.get(username="evaluator")
    job = Job.objects.create(
        kind=JobKind.SNAPSHOT_FREEZE,
        state=JobState.DONE,
        collection=collection,
        created_by=evaluator,
        label="Freeze",
        task_path="judgments.tasks.freeze_task",
        result={"summary": "Nothing changed since v1.", "url": "/c/demo-handbook/snapshots/"},
    )
    evaluation = Evaluation.objects.filter(run__name="pipeline").order_by("pk").last()
    a, b = (Evaluation.objects.get(run__name=n).pk for n in ("lexical", "titles"))
    return {"evaluator": evaluator, "job": job.pk, "evaluation": evaluation.pk, "pair": (a, b)}


def test_every_get_url_writes_nothing(client, demo):
    client.force_login(demo["evaluator"])
    urls = []
    for name, route, params in named_patterns(get_resolver().url_patterns):
        url = reverse(name, kwargs=arguments(route, params, demo))
        if "compare" in name:
            url += "?a={}&b={}".format(*demo["pair"])
        urls.append(url)
        if name.startswith("scoring:") or any(
            w in name for w in ("report", "diagnosis", "compare")
        ):
            urls += [f"{url}{'&' if '?' in url else '?'}format={f}" for f in ("json", "csv")]
    assert len(urls) > 60 and "/c/demo-handbook/runs/pipeline/diagnosis/" in urls
    statuses = {}
    before = row_counts()

    for url in urls:
        response = client.get(url)
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)
        statuses[url] = response.status_code
        after = row_counts()
        changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
        assert not changed, f"GET {url} ({response.status_code}) changed row counts: {changed}"

    # The walk reached the pages, not a wall of errors.
    assert not [u for u, s in statuses.items() if s >= 500]
    ok = [u for u, s in statuses.items() if s == 200]
    a, b = demo["pair"]
    for page in (
        "/c/demo-handbook/",
        "/c/demo-handbook/runs/",
        "/c/demo-handbook/snapshots/",
        "/c/demo-handbook/evaluations/new/",
        "/c/demo-handbook/runs/pipeline/q/q001/",
        "/c/demo-handbook/runs/pipeline/diagnosis/",
        f"/jobs/{demo['job']}/",
        f"/api/jobs/{demo['job']}/",
        f"/c/demo-handbook/compare/?a={a}&b={b}",
        f"/api/collections/demo-handbook/compare/?a={a}&b={b}&format=csv",
    ):
        assert page in ok, (page, statuses.get(page))
