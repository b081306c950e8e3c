"""The adversarial access test: every URL pattern of the project, every kind of caller,
an explicit expectation for each (issue 27's acceptance, the product's "access is
checked at every door, every time", issue 25's "a removed member loses access at once").

The URL patterns come from the URLconf itself (``django.urls.get_resolver``): a pattern
without a row in ``TABLE`` fails ``test_each_door_answers_each_caller_as_the_table_says``
(its message shows what each caller gets now, as a row to judge and paste), so a new page,
API, export or download cannot be added without deciding who may reach it. Django's own
admin is one row (``ADMIN_SITE``): every pattern under ``admin/`` answers the same rule.

The world (built once for the module, rolled back at its end; each request runs in a
savepoint that is rolled back too, so every caller sees the same world): two collections
built alike, ``alpha`` (several assessors per item: blind) and ``beta`` (one assessor),
each with two snapshots, two runs, two evaluations, a judge with a proposal, review
tasks, and jobs (a finished qrels export with its file, a failed freeze, a queued one).

Callers (the columns of ``TABLE``); each requests ``alpha``'s URLs but ``reviewer``, who
requests ``beta``'s (a plain reviewer where labels are not blind):

- ``anon``: no credentials. Pages redirect to the login (``login``), the API says 401.
- ``outsider``: signed in, member of nothing: 404, never 403 (existence is not leaked).
- ``stranger``: admin of ``beta`` only: 404 on ``alpha``.
- ``reviewer`` (rita, in ``beta``), ``blind`` (ana, reviewer of ``alpha``, whose labels
  are blind), ``evaluator``, ``admin``, ``superuser``.
- ``removed``: rex, an evaluator of ``alpha`` who signed in and started a job, and whose
  membership was then deleted: 404 everywhere in ``alpha``, his own job included.

Statuses: an int is the exact status (a POST sends no form, so where access lets it in
it gets the form's 400, the state's 409 or 428, or its redirect); ``login`` a redirect
to the login page.

Every answer, refused or not, is read for what its caller may not learn: API token keys,
the OIDC client secret, a judge's API key, ``SECRET_KEY``, the names and texts of a
collection the caller is not a member of, and for ``blind`` the other assessors' notes,
grades, names and resolved labels (``tests/judgments/test_blind_doors.blind_leaks``).
Every 200 to a signed-in caller is ``Cache-Control: private``.

Then API tokens on every API row (``TOKEN_CALLERS``): expired and revoked (401), a
``read`` token doing a ``judge`` or ``admin`` operation and a ``judge`` token doing an
``admin`` one (403), a token limited to ``beta`` used on ``alpha`` (403), and the token
of the removed member (404, as his session). Objects of ``beta`` named through
``alpha``'s URLs answer 404 (``test_another_collections_objects_through_this_ones_urls``).
Jobs: one whose requester was removed or demoted after starting it neither runs under
the old role (the worker checks when it starts it, and again in the transaction that
stores what it made) nor hands its result or file to them; an export's file is for who
may read it now. A deactivated admin's session and token open nothing; a sign-in whose
code exchange fails shows no client secret.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import transaction
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from django.utils.module_loading import import_string

import verity_eval as engine
from jobs.models import Job, JobKind, JobState
from judges.models import JudgeConfig, ProposalDecision
from judgments.models import (
    ApiToken,
    Collection,
    Item,
    Judgment,
    Membership,
    ReviewTask,
    Role,
    Snapshot,
    TokenScope,
)
from judgments.services import (
    create_api_token,
    freeze_snapshot,
    record_assessment,
    record_judgment,
    revoke_api_token,
    set_membership,
    update_collection_settings,
)
from judgments.sso import config as sso_config
from scoring.services import import_run, score_run_stage
from tests.factories import make_collection, make_item, make_proposal, make_query, make_user
from tests.judgments.test_blind_doors import SECRETS, blind_leaks

# The module's world is set up once (``world``); each test's own transaction is a savepoint
# in it, and so is each request.
pytestmark = pytest.mark.django_db

OIDC_SECRET = "OIDC-CLIENT-SECRET-d41d8cd98f"
JUDGE_KEY_ENV = "VERITY_JUDGE_KEY_ADVERSARIAL"  # a name the operator's rule allows
JUDGE_KEY = "sk-JUDGE-KEY-8f14e45fceea167a"
ISSUER = "https://idp.example.invalid/realms/verity"
# alpha's other assessors: names a blind reviewer (ana) never reads.
BEN, CID = "assessor-ben", "assessor-cid"

# What each collection holds that only its members (and superusers) may read.
MARKERS = {
    "alpha": ("Alpha Confidential Corpus", "ALPHA-QUERY-TEXT", "ALPHA-ITEM-TEXT"),
    "beta": ("Beta Confidential Corpus", "BETA-QUERY-TEXT", "BETA-ITEM-TEXT"),
}

CALLERS = (
    "anon",
    "outsider",
    "stranger",
    "reviewer",
    "blind",
    "evaluator",
    "admin",
    "superuser",
    "removed",
)
# Who each caller is (a username), and the collection whose URLs they request.
WHO = {
    "anon": None,
    "outsider": "olga",
    "stranger": "bob",
    "reviewer": "rita",
    "blind": "ana",
    "evaluator": "eve",
    "admin": "ada",
    "superuser": "root",
    "removed": "rex",
}
TARGET = {caller: "beta" if caller == "reviewer" else "alpha" for caller in CALLERS}
# The collections each caller may read the names and texts of.
READS = {
    "anon": (),
    "outsider": (),
    "stranger": ("beta",),
    "reviewer": ("beta",),
    "blind": ("alpha",),
    "evaluator": ("alpha",),
    "admin": ("alpha",),
    "superuser": ("alpha", "beta"),
    "removed": (),
}

RUN = "q1 Q0 i1 1 2.0 sys\nq1 Q0 i2 2 1.0 sys\n"
ALT_RUN = "q1 Q0 i2 1 2.0 alt\nq1 Q0 i1 2 1.0 alt\n"


@dataclass
class Home:
    """One collection's objects, by the URL kwarg (or role) that names them."""

    slug: str
    evaluation: int
    other_evaluation: int
    judgment: int
    task: int
    export_job: int  # done, with its file (the evaluator's)
    failed_job: int  # the evaluator's, retryable
    queued_job: int  # the evaluator's, cancellable
    member: str  # a member's username for /members/<username>/


@dataclass
class World:
    homes: dict[str, Home]
    users: dict[str, Any]
    sessions: dict[str, Client]
    keys: dict[str, str]  # every token's key, by name
    token_pk: int  # the evaluator's own token
    rex_job: int  # the job rex started, before his membership was deleted
    rex_done_job: int  # rex's finished export, with its file
    secrets: list[str] = field(default_factory=list)


def build_home(
    slug: str, roles: dict[str, str], users: dict[str, Any], tmp: Path, *, blind: bool
) -> Home:
    name, query_text, item_text = MARKERS[slug]
    collection = make_collection(slug=slug, name=name)
    for username, role in roles.items():
        set_membership(collection=collection, user=users[username], role=role)
    if blind:
        collection = update_collection_settings(
            collection=collection, assessors_per_item=2, resolution_policy="median"
        )
    query = make_query(collection, external_id="q1", text=f"{query_text} one")
    i1 = make_item(collection, external_id="i1", title="first item", text=item_text)
    i2 = make_item(collection, external_id="i2", title="second item", text=item_text)
    evaluator = users["eve"]
    runs = []
    for run_name, text in (("sys", RUN), ("alt", ALT_RUN)):
        path = tmp / f"{slug}-{run_name}.trec"
        path.write_text(text)
        runs.append(import_run(collection=collection, path=path, name=run_name, by=evaluator).run)
    if blind:
        # As tests/judgments/test_blind_doors.py: ana gave 3 where ben gave 0 (resolved
        # 0), and never assessed (q1, i2), which ben and cid gave 2.
        record_assessment(query=query, item=i1, grade=3, assessor=users["ana"], note="ana-own")
        record_assessment(query=query, item=i1, grade=0, assessor=users[BEN], note=SECRETS[0])
        freeze_snapshot(collection=collection, by=evaluator)
        record_assessment(query=query, item=i2, grade=2, assessor=users[BEN], note=SECRETS[0])
        record_assessment(query=query, item=i2, grade=2, assessor=users[CID], note=SECRETS[1])
    else:
        record_judgment(
            query=query, item=i1, grade=3, reviewer=users["rita"], expected_version=None
        )
        freeze_snapshot(collection=collection, by=evaluator)
        record_judgment(
            query=query, item=i2, grade=2, reviewer=users["rita"], expected_version=None
        )
    snapshot, _ = freeze_snapshot(collection=collection, by=evaluator)
    params = engine.EvalParams(ks=(1,), rel_level=1)
    evaluations = [
        score_run_stage(run=run, stage=run.stages.get(), snapshot=snapshot, params=params)[0]
        for run in runs
    ]
    JudgeConfig.objects.create(
        collection=collection, name="local-baseline", api_key_env=JUDGE_KEY_ENV
    )
    proposal = make_proposal(query=query, item=i1, grade=3)
    make_proposal(query=query, item=i2, grade=2)  # the resolved label of (q1, i2)
    if blind:
        # A decision made while the collection still had one assessor per item (its
        # judgments became assessments): ben overrode the model's 3 with his 0.
        ProposalDecision.objects.create(
            proposal=proposal, user=users[BEN], outcome="overridden", grade=0, judgment_version=1
        )
    i3 = make_item(collection, external_id="i3", title="third item", text=item_text)
    task = ReviewTask.objects.create(collection=collection, query=query, item=i3, source="run x")
    if blind:  # a task ben holds now: whose it is is no business of ana's
        i4 = make_item(collection, external_id="i4", title="fourth item", text=item_text)
        ReviewTask.objects.create(
            collection=collection,
            query=query,
            item=i4,
            source="run x",
            status="claimed",
            claimed_by=users[BEN],
            lease_expires_at=timezone.now() + timedelta(hours=1),
        )

    def job(state: str, kind: str = JobKind.SNAPSHOT_FREEZE, by: Any = evaluator) -> Job:
        return Job.objects.create(
            kind=kind,
            state=state,
            collection=collection,
            created_by=by,
            label=f"{slug} {kind}",
            task_path="judgments.tasks.freeze_task",
        )

    export_job = job(JobState.DONE, JobKind.QRELS_EXPORT)
    attach_file(export_job, b"q1 0 i1 0\nq1 0 i2 2\n")
    return Home(
        slug=slug,
        evaluation=evaluations[0].pk,
        other_evaluation=evaluations[1].pk,
        judgment=Judgment.objects.get(query=query, item=i1).pk,
        task=task.pk,
        export_job=export_job.pk,
        failed_job=job(JobState.FAILED).pk,
        queued_job=job(JobState.QUEUED).pk,
        member=BEN if blind else "rita",
    )


def attach_file(job: Job, content: bytes) -> None:
    name = storages["jobs"].save(f"outputs/{job.key}/v2.qrels", ContentFile(content))
    job.result = {"file": name, "content_type": "text/plain; charset=utf-8"}
    job.save()


ALPHA_ROLES = {
    "ana": Role.REVIEWER,
    BEN: Role.REVIEWER,
    CID: Role.REVIEWER,
    "eve": Role.EVALUATOR,
    "ada": Role.ADMIN,
    "rex": Role.EVALUATOR,  # removed once he has a session and a job
}
BETA_ROLES = {"bob": Role.ADMIN, "rita": Role.REVIEWER}


def build_world(tmp: Path) -> World:
    names = ("olga", "bob", "rita", "ana", BEN, CID, "eve", "ada", "rex")
    users = {name: make_user(name) for name in names}
    users["root"] = get_user_model().objects.create_superuser("root")
    homes = {
        "alpha": build_home("alpha", ALPHA_ROLES, users, tmp, blind=True),
        "beta": build_home("beta", BETA_ROLES, users, tmp, blind=False),
    }
    return _finish_world(homes, users)


def _finish_world(homes: dict[str, Home], users: dict[str, Any]) -> World:
    alpha, beta = (Collection.objects.get(slug=s) for s in ("alpha", "beta"))
    keys = {
        "admin": create_api_token(user=users["ada"], name="full").key,
        "read": create_api_token(user=users["ada"], name="read", scope=TokenScope.READ).key,
        "judge": create_api_token(user=users["ada"], name="judge", scope=TokenScope.JUDGE).key,
        "expired": create_api_token(user=users["ada"], name="expired").key,
        "revoked": create_api_token(user=users["ada"], name="revoked").key,
        "beta_only": create_api_token(user=users["root"], name="beta", collection=beta).key,
        "removed": create_api_token(user=users["rex"], name="rex").key,
        "evaluator": create_api_token(user=users["eve"], name="eve").key,
    }
    tokens = {t.name: t for t in ApiToken.objects.all()}
    ApiToken.objects.filter(pk=tokens["expired"].pk).update(
        created_at=timezone.now() - timedelta(days=2),
        expires_at=timezone.now() - timedelta(minutes=1),
    )
    revoke_api_token(token=tokens["revoked"])

    sessions = {}
    for caller, username in WHO.items():
        client = Client()
        if username is not None:
            client.force_login(users[username])
        sessions[caller] = client

    # rex signed in (above) and started a job, and only then was removed.
    started = sessions["removed"].post(
        "/api/collections/alpha/snapshots/2/exports/",
        data=json.dumps({"format": "trec"}),
        content_type="application/json",
    )
    assert started.status_code == 202, started.content
    rex_job = started.json()["id"]
    rex_done = Job.objects.create(
        kind=JobKind.QRELS_EXPORT,
        state=JobState.DONE,
        collection=alpha,
        created_by=users["rex"],
        label="rex's export",
        task_path="judgments.tasks.qrels_export_task",
    )
    attach_file(rex_done, b"q1 0 i1 0\n")
    set_membership(collection=alpha, user=users["rex"], role=None)
    assert not Membership.objects.filter(user=users["rex"]).exists()

    return World(
        homes=homes,
        users=users,
        sessions=sessions,
        keys=keys,
        token_pk=tokens["eve"].pk,
        rex_job=rex_job,
        rex_done_job=rex_done.pk,
        secrets=[*keys.values(), OIDC_SECRET, JUDGE_KEY, settings.SECRET_KEY],
    )


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("adversarial")
    jobs = root / "jobs"
    overrides = override_settings(
        STORAGES={
            **settings.STORAGES,
            "jobs": {
                "BACKEND": "django.core.files.storage.FileSystemStorage",
                "OPTIONS": {"location": str(jobs / "files")},
            },
        },
        CACHES={
            **settings.CACHES,
            "jobs": {
                "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                "LOCATION": str(jobs / "progress"),
            },
        },
        VERITY_JOB_DIR=jobs,
        # Jobs are queued, never run, unless a test says otherwise.
        TASKS={"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}},
        # Single sign-on on, with a provider whose metadata is known (no network).
        VERITY_OIDC_ISSUER=ISSUER,
        VERITY_OIDC_CLIENT_ID="verity-adversarial",
        VERITY_OIDC_CLIENT_SECRET=OIDC_SECRET,
        OIDC_RP_CLIENT_ID="verity-adversarial",
        OIDC_RP_CLIENT_SECRET=OIDC_SECRET,
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
    )
    metadata = sso_config.ProviderMetadata(
        issuer=ISSUER,
        authorization_endpoint=f"{ISSUER}/auth",
        token_endpoint=f"{ISSUER}/token",
        userinfo_endpoint=f"{ISSUER}/userinfo",
        jwks_uri=f"{ISSUER}/certs",
    )
    kept_env = os.environ.get(JUDGE_KEY_ENV)
    os.environ[JUDGE_KEY_ENV] = JUDGE_KEY
    sso_config._metadata[ISSUER] = (time.monotonic(), metadata)
    try:
        with overrides, django_db_blocker.unblock(), transaction.atomic():
            yield build_world(root)
            transaction.set_rollback(True)
    finally:
        sso_config._metadata.pop(ISSUER, None)
        if kept_env is None:
            os.environ.pop(JUDGE_KEY_ENV, None)
        else:
            os.environ[JUDGE_KEY_ENV] = kept_env


# -- the URL patterns and how to fill them --------------------------------------------------

ADMIN_SITE = "admin/…"  # the one row for Django's admin site (every pattern under it)


def url_patterns(entries: list[Any] | None = None, prefix: str = "") -> list[tuple[str, list[str]]]:
    """(route, parameter names) of every pattern of the URLconf; Django's admin site as
    the one row ``ADMIN_SITE``. Two patterns with one route (ours before Django's own,
    e.g. the login) are one row: the first answers."""
    found: list[tuple[str, list[str]]] = []
    for entry in get_resolver().url_patterns if entries is None else entries:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if entry.namespace == "admin":
                found.append((ADMIN_SITE, []))
                continue
            found += url_patterns(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            params = list(
                getattr(entry.pattern, "converters", {}) or entry.pattern.regex.groupindex
            )
            found.append((route, params))
    unique: dict[str, list[str]] = {}
    for route, params in found:
        unique.setdefault(route, params)
    return list(unique.items())


def fill(route: str, home: Home, world: World) -> str:
    """A URL of ``route`` naming real objects of ``home``'s collection."""
    if route == ADMIN_SITE:
        return "/admin/"
    if route == "^api/":
        return "/api/no-such-thing/"
    pk = home.evaluation
    if route.startswith("api/jobs/") or route.startswith("jobs/"):
        pk = home.export_job
        if "retry" in route:
            pk = home.failed_job
        elif "cancel" in route:
            pk = home.queued_job
    elif "judgments/" in route:
        pk = home.judgment
    elif "tasks/" in route:
        pk = home.task
    elif route.startswith("api/tokens/"):
        pk = world.token_pk
    values = {
        "slug": home.slug,
        "number": 2,
        "other": 1,
        "a": 1,
        "b": 2,
        "pk": pk,
        "name": "sys",
        "qid": "q1",
        "external_id": "q1",
        "item_id": "i1",
        "username": home.member,
        "judge": "local-baseline",
        "uidb64": "MQ",
        "token": "set-password",
    }
    url = "/" + route
    for param in values:
        for converter in ("slug", "int", "str", "external_id", ""):
            tag = f"<{converter}:{param}>" if converter else f"<{param}>"
            url = url.replace(tag, str(values[param]))
    assert "<" not in url, f"no value for a parameter of {route}"
    if "compare" in route:
        url += f"?a={home.evaluation}&b={home.other_evaluation}"
    return url


# -- requests and what their answers may not say ---------------------------------------------


@dataclass
class Answer:
    status: int
    location: str
    body: str
    content_type: str
    cache_control: str = ""


def request(client: Client, method: str, url: str, data: Any = None, **headers: Any) -> Answer:
    """One request in a savepoint that is rolled back: every caller sees the same world."""
    kwargs: dict[str, Any] = dict(headers)
    if method != "GET":
        if url.startswith("/api/"):
            kwargs |= {"data": json.dumps(data or {}), "content_type": "application/json"}
        else:
            kwargs["data"] = data or {}
    cookies = SimpleCookie(client.cookies)  # a logout or a login changes them: not kept
    with transaction.atomic():
        response = getattr(client, method.lower())(url, **kwargs)
        if getattr(response, "streaming", False):
            content = b"".join(response.streaming_content)
        else:
            content = response.content
        transaction.set_rollback(True)
    client.cookies = cookies
    return Answer(
        status=response.status_code,
        location=response.get("Location", ""),
        body=content.decode("utf-8", "replace"),
        content_type=response.get("Content-Type", ""),
        cache_control=response.get("Cache-Control", ""),
    )


def outcome(answer: Answer) -> int | str:
    """``login`` for a redirect to a login page, else the status."""
    if answer.status == 302 and "/login/" in answer.location:
        return "login"
    return answer.status


def matches(expected: int | str, answer: Answer) -> bool:
    return outcome(answer) == expected


def what_leaks(caller: str, url: str, answer: Answer, world: World) -> list[str]:
    """What the answer tells ``caller`` that it may not know."""
    found = what_leaks_to(READS[caller], url, answer, world)
    if caller == "blind":
        found += blind_leaks(url, answer.content_type, answer.body)
        found += [f"the name of {name}" for name in (BEN, CID) if name in answer.body]
    return found


def what_leaks_to(reads: tuple[str, ...], url: str, answer: Answer, world: World) -> list[str]:
    """Secrets, and the names and texts of collections other than ``reads``."""
    text = answer.body + "\n" + answer.location
    found = [f"a secret ({s[:6]}…)" for s in world.secrets if s and s in text]
    for slug, markers in MARKERS.items():
        if slug not in reads:
            found += [f"{slug}'s {m!r}" for m in markers if m in text]
    return found


# -- the table ------------------------------------------------------------------------------

login = "login"
# fmt: off
# route: {method: (anon, outsider, stranger, reviewer, blind, evaluator, admin, superuser, removed)}
TABLE: dict[str, dict[str, tuple[int | str, ...]]] = {
    "admin/login/": {
        "GET": (200, 200, 200, 200, 200, 200, 200, 302, 200),
        "POST": (200, 200, 200, 200, 200, 200, 200, 200, 200),
    },
    "admin/…": {
        "GET": (login, login, login, login, login, login, login, 200, login),
        "POST": (login, login, login, login, login, login, login, 200, login),
    },
    "oidc/login/": {
        "GET": (302, 302, 302, 302, 302, 302, 302, 302, 302),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "oidc/callback/": {
        "GET": (400, 400, 400, 400, 400, 400, 400, 400, 400),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "accounts/tokens/": {
        "GET": (login, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (login, 302, 302, 302, 302, 302, 302, 302, 302),
    },
    "accounts/password_reset/": {
        "GET": (200, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (200, 200, 200, 200, 200, 200, 200, 200, 200),
    },
    "accounts/password_reset/done/": {
        "GET": (200, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "accounts/login/": {
        "GET": (200, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (200, 200, 200, 200, 200, 200, 200, 200, 200),
    },
    "accounts/logout/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, login, login, login, login, login, login, login, login),
    },
    "accounts/password_change/": {
        "GET": (login, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (login, 200, 200, 200, 200, 200, 200, 200, 200),
    },
    "accounts/password_change/done/": {
        "GET": (login, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (login, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "accounts/reset/<uidb64>/<token>/": {
        "GET": (200, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (200, 200, 200, 200, 200, 200, 200, 200, 200),
    },
    "accounts/reset/done/": {
        "GET": (200, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "healthz": {
        "GET": (200, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (200, 200, 200, 200, 200, 200, 200, 200, 200),
    },
    "api/schema/": {
        "GET": (200, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "api/docs/": {
        "GET": (200, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "api/redoc/": {
        "GET": (200, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "api/redoc/redoc.standalone.js": {
        "GET": (200, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "api/collections/": {
        "GET": (401, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (401, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "api/collections/<slug:slug>/": {
        "GET": (401, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
        "PATCH": (401, 404, 404, 403, 403, 403, 200, 200, 404),
    },
    "api/collections/<slug:slug>/members/": {
        "GET": (401, 404, 404, 403, 403, 403, 200, 200, 404),
        "POST": (401, 404, 404, 403, 403, 403, 400, 400, 404),
    },
    "api/collections/<slug:slug>/members/<str:username>/": {
        "GET": (401, 404, 404, 403, 403, 403, 200, 200, 404),
        "POST": (401, 404, 404, 403, 403, 403, 405, 405, 404),
        "PATCH": (401, 404, 404, 403, 403, 403, 400, 400, 404),
        "DELETE": (401, 404, 404, 403, 403, 403, 204, 204, 404),
    },
    "api/collections/<slug:slug>/queries/": {
        "GET": (401, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/queries/<external_id:qid>/": {
        "GET": (401, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
        "PATCH": (401, 404, 404, 400, 403, 400, 400, 400, 404),
    },
    "api/collections/<slug:slug>/items/": {
        "GET": (401, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/items/<external_id:item_id>/": {
        "GET": (401, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/judgments/": {
        "GET": (401, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 400, 403, 400, 400, 400, 404),
    },
    "api/collections/<slug:slug>/judgments/<int:pk>/": {
        "GET": (401, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 403, 405, 405, 405, 404),
        "PATCH": (401, 404, 404, 428, 403, 428, 428, 428, 404),
        "DELETE": (401, 404, 404, 428, 403, 428, 428, 428, 404),
    },
    "api/collections/<slug:slug>/tasks/": {
        "GET": (401, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/tasks/claim/": {
        "GET": (401, 404, 404, 405, 405, 405, 405, 405, 404),
        "POST": (401, 404, 404, 200, 200, 200, 200, 200, 404),
    },
    "api/collections/<slug:slug>/tasks/<int:pk>/": {
        "GET": (401, 404, 404, 200, 404, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/tasks/<int:pk>/skip/": {
        "GET": (401, 404, 404, 405, 405, 405, 405, 405, 404),
        "POST": (401, 404, 404, 409, 409, 409, 409, 409, 404),
    },
    "api/collections/<slug:slug>/tasks/<int:pk>/judge/": {
        "GET": (401, 404, 404, 405, 405, 405, 405, 405, 404),
        "POST": (401, 404, 404, 400, 400, 400, 400, 400, 404),
    },
    "api/collections/<slug:slug>/snapshots/": {
        "GET": (401, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (401, 404, 404, 403, 403, 201, 201, 201, 404),
    },
    "api/collections/<slug:slug>/snapshots/<int:number>/": {
        "GET": (401, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/snapshots/<int:number>/diff/<int:other>/": {
        "GET": (401, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/snapshots/<int:number>/exports/": {
        "GET": (401, 404, 404, 405, 405, 405, 405, 405, 404),
        "POST": (401, 404, 404, 403, 403, 202, 202, 202, 404),
    },
    "api/collections/<slug:slug>/imports/": {
        "GET": (401, 404, 404, 405, 405, 405, 405, 405, 404),
        "POST": (401, 404, 404, 403, 403, 403, 415, 415, 404),
    },
    "api/collections/<slug:slug>/agreement/": {
        "GET": (401, 404, 404, 403, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/snapshots/<int:number>/qrels": {
        "GET": (401, 404, 404, 403, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/runs/": {
        "GET": (401, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (401, 404, 404, 403, 403, 415, 415, 415, 404),
    },
    "api/collections/<slug:slug>/runs/<slug:name>/": {
        "GET": (401, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/mappings/": {
        "GET": (401, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (401, 404, 404, 403, 403, 415, 415, 415, 404),
    },
    "api/collections/<slug:slug>/mappings/<int:number>/": {
        "GET": (401, 404, 404, 404, 404, 404, 404, 404, 404),
        "POST": (401, 404, 404, 405, 405, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/evaluations/": {
        "GET": (401, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 403, 403, 400, 400, 400, 404),
    },
    "api/collections/<slug:slug>/evaluations/<int:pk>/": {
        "GET": (401, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 403, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/evaluations/<int:pk>/queries/": {
        "GET": (401, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 403, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/evaluations/<int:pk>/report/": {
        "GET": (401, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 403, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/runs/<slug:name>/diagnosis/": {
        "GET": (401, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 403, 403, 202, 202, 202, 404),
    },
    "api/collections/<slug:slug>/compare/": {
        "GET": (401, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 403, 405, 405, 405, 404),
    },
    "api/collections/<slug:slug>/compare/focus/": {
        "GET": (401, 404, 404, 405, 403, 405, 405, 405, 404),
        "POST": (401, 404, 404, 403, 403, 200, 200, 200, 404),
    },
    "api/jobs/<int:pk>/": {
        "GET": (401, 404, 404, 404, 404, 200, 200, 200, 404),
        "POST": (401, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "api/jobs/<int:pk>/retry/": {
        "GET": (401, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (401, 404, 404, 404, 404, 202, 403, 202, 404),
    },
    "api/jobs/<int:pk>/cancel/": {
        "GET": (401, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (401, 404, 404, 404, 404, 200, 403, 200, 404),
    },
    "api/jobs/<int:pk>/file": {
        "GET": (401, 404, 404, 404, 404, 200, 403, 200, 404),
        "POST": (401, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "api/collections/<slug:slug>/judges/<slug:judge>/proposals/": {
        "GET": (401, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 403, 403, 202, 202, 202, 404),
    },
    "api/collections/<slug:slug>/judges/<slug:judge>/calibration/": {
        "GET": (401, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (401, 404, 404, 405, 403, 405, 405, 405, 404),
    },
    "api/tokens/": {
        "GET": (401, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (401, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "api/tokens/<int:pk>/": {
        "GET": (401, 404, 404, 404, 404, 200, 404, 404, 404),
        "POST": (401, 405, 405, 405, 405, 405, 405, 405, 405),
        "DELETE": (401, 404, 404, 404, 404, 200, 404, 404, 404),
    },
    "^api/": {
        "GET": (404, 404, 404, 404, 404, 404, 404, 404, 404),
        "POST": (404, 404, 404, 404, 404, 404, 404, 404, 404),
    },
    "": {
        "GET": (login, 200, 200, 200, 200, 200, 200, 200, 200),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/new/": {
        "GET": (login, 403, 403, 403, 403, 403, 403, 200, 403),
        "POST": (login, 403, 403, 403, 403, 403, 403, 200, 403),
    },
    "c/<slug:slug>/": {
        "GET": (login, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/settings/": {
        "GET": (login, 404, 404, 403, 403, 403, 200, 200, 404),
        "POST": (login, 404, 404, 403, 403, 403, 400, 400, 404),
    },
    "c/<slug:slug>/members/": {
        "GET": (login, 404, 404, 403, 403, 403, 200, 200, 404),
        "POST": (login, 404, 404, 403, 403, 403, 302, 302, 404),
    },
    "c/<slug:slug>/review/": {
        "GET": (login, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/review/claim/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 303, 303, 303, 303, 303, 404),
    },
    "c/<slug:slug>/review/judge/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 400, 400, 400, 400, 400, 404),
    },
    "c/<slug:slug>/review/skip/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 400, 400, 400, 400, 400, 404),
    },
    "c/<slug:slug>/review/undo/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 302, 302, 302, 302, 302, 404),
    },
    "c/<slug:slug>/review/status/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 400, 403, 400, 400, 400, 404),
    },
    "c/<slug:slug>/adjudicate/": {
        "GET": (login, 404, 404, 403, 403, 403, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/adjudicate/decide/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 403, 403, 403, 400, 400, 404),
    },
    "c/<slug:slug>/agreement/": {
        "GET": (login, 404, 404, 403, 403, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/reviewers/": {
        "GET": (login, 404, 404, 403, 403, 403, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/audit/": {
        "GET": (login, 404, 404, 403, 403, 403, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "audit/": {
        "GET": (login, 403, 403, 403, 403, 403, 403, 200, 403),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/status/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 400, 403, 400, 400, 400, 404),
    },
    "c/<slug:slug>/bundle/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 403, 403, 403, 302, 302, 404),
    },
    "c/<slug:slug>/snapshots/": {
        "GET": (login, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/snapshots/<int:number>/download/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 403, 403, 200, 200, 200, 404),
    },
    "c/<slug:slug>/snapshots/freeze/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 403, 403, 302, 302, 302, 404),
    },
    "c/<slug:slug>/snapshots/diff/": {
        "GET": (login, 404, 404, 302, 302, 302, 302, 302, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/snapshots/<int:a>/diff/<int:b>/": {
        "GET": (login, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/q/<external_id:external_id>/": {
        "GET": (login, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (login, 404, 404, 400, 400, 400, 400, 400, 404),
    },
    "c/<slug:slug>/evaluations/": {
        "GET": (login, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/evaluations/new/": {
        "GET": (login, 404, 404, 403, 403, 200, 200, 200, 404),
        "POST": (login, 404, 404, 403, 403, 400, 400, 400, 404),
    },
    "c/<slug:slug>/evaluations/<int:pk>/": {
        "GET": (login, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/runs/": {
        "GET": (login, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (login, 404, 404, 403, 403, 400, 400, 400, 404),
    },
    "c/<slug:slug>/runs/<slug:name>/": {
        "GET": (login, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/runs/<slug:name>/q/<external_id:qid>/": {
        "GET": (login, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/runs/<slug:name>/diagnosis/": {
        "GET": (login, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/runs/<slug:name>/diagnosis/score/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 403, 403, 302, 302, 302, 404),
    },
    "c/<slug:slug>/compare/score/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 403, 403, 400, 400, 400, 404),
    },
    "c/<slug:slug>/compare/focus/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 403, 403, 404, 404, 404, 404),
    },
    "c/<slug:slug>/compare/latest/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 403, 403, 404, 404, 404, 404),
    },
    "c/<slug:slug>/compare/": {
        "GET": (login, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "jobs/<int:pk>/": {
        "GET": (login, 404, 404, 404, 404, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "jobs/<int:pk>/retry/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 404, 404, 302, 302, 302, 404),
    },
    "jobs/<int:pk>/cancel/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 404, 404, 302, 302, 302, 404),
    },
    "c/<slug:slug>/judges/": {
        "GET": (login, 404, 404, 200, 200, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/judges/policy/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 403, 403, 403, 302, 302, 404),
    },
    "c/<slug:slug>/judges/new/": {
        "GET": (login, 404, 404, 403, 403, 403, 200, 200, 404),
        "POST": (login, 404, 404, 403, 403, 403, 200, 200, 404),
    },
    "c/<slug:slug>/judges/<slug:judge>/edit/": {
        "GET": (login, 404, 404, 403, 403, 403, 200, 200, 404),
        "POST": (login, 404, 404, 403, 403, 403, 200, 200, 404),
    },
    "c/<slug:slug>/judges/<slug:judge>/start/": {
        "GET": (405, 405, 405, 405, 405, 405, 405, 405, 405),
        "POST": (login, 404, 404, 403, 403, 302, 302, 302, 404),
    },
    "c/<slug:slug>/judges/<slug:judge>/proposals/": {
        "GET": (login, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
    "c/<slug:slug>/judges/<slug:judge>/calibration/": {
        "GET": (login, 404, 404, 200, 403, 200, 200, 200, 404),
        "POST": (405, 405, 405, 405, 405, 405, 405, 405, 405),
    },
}
# fmt: on

# What a POST (or PATCH, DELETE) sends: enough to pass the form where access allows it.
BODIES: dict[tuple[str, str], dict[str, Any]] = {}

# The Django admin site: a few of its pages stand for all of them.
ADMIN_URLS = ("/admin/", "/admin/judgments/apitoken/", "/admin/auth/user/", "/admin/jobs/job/")

ROUTES = url_patterns()


def observed_row(route: str, world: World, methods: tuple[str, ...] = ("GET", "POST")) -> str:
    """What each caller gets now, as a row to paste into TABLE once it is judged right."""
    lines = [f'    "{route}": {{']
    for method in methods:
        got = []
        for caller in CALLERS:
            url = fill(route, world.homes[TARGET[caller]], world)
            answer = request(world.sessions[caller], method, url, BODIES.get((method, route)))
            got.append(repr(outcome(answer)))
        lines.append(f'        "{method}": ({", ".join(got)}),')
    return "\n".join([*lines, "    },"])


def urls_for(route: str, home: Home, world: World) -> list[str]:
    return list(ADMIN_URLS) if route == ADMIN_SITE else [fill(route, home, world)]


@pytest.mark.parametrize("route", [route for route, _ in ROUTES])
def test_each_door_answers_each_caller_as_the_table_says(route, world):
    if route not in TABLE:
        pytest.fail(
            f"URL pattern {route!r} has no row in TABLE (tests/hardening/"
            "test_adversarial_access.py): decide who may reach it. What each caller gets "
            f"now:\n{observed_row(route, world)}"
        )
    wrong, leaked = [], []
    for method, expected in TABLE[route].items():
        assert len(expected) == len(CALLERS), route
        for caller, want in zip(CALLERS, expected, strict=True):
            for url in urls_for(route, world.homes[TARGET[caller]], world):
                answer = request(world.sessions[caller], method, url, BODIES.get((method, route)))
                if not matches(want, answer):
                    wrong.append(
                        f"  {caller:<9} {method} {url}: expected {want}, got "
                        f"{outcome(answer)}: {answer.body[:200]}"
                    )
                leaked += [
                    f"  {caller:<9} {method} {url}: {w}"
                    for w in what_leaks(caller, url, answer, world)
                ]
                if (
                    caller != "anon"
                    and answer.status == 200
                    and "private" not in (answer.cache_control)
                ):
                    leaked.append(f"  {caller:<9} {method} {url}: kept by shared caches")
    assert not wrong, f"{route}\n" + "\n".join(wrong)
    assert not leaked, f"{route}: answers tell callers what they may not know\n" + "\n".join(leaked)


def test_every_row_of_the_table_is_a_pattern():
    stale = sorted(set(TABLE) - {route for route, _ in ROUTES})
    assert not stale, f"rows for URL patterns the project no longer has: {stale}"


# -- API tokens -----------------------------------------------------------------------------

# The token callers: (key name in World.keys, the collections its answers may name).
TOKEN_CALLERS = {
    "expired": ("alpha",),  # ada's, admin scope: expired a minute ago
    "revoked": ("alpha",),  # ada's, admin scope, revoked
    "read": ("alpha",),  # ada's (admin of alpha), read scope
    "judge": ("alpha",),  # ada's, judge scope
    "beta_only": ("beta",),  # the superuser's, limited to beta, used on alpha
    "removed": (),  # rex's, admin scope, made before his membership was deleted
}
# Operations whose token scope is not the method's default (read for GET, admin for the
# rest): ``judgments.api.auth.scope_needed`` and each view's ``token_scopes``.
JUDGE_SCOPE = {
    "PATCH api/collections/<slug:slug>/queries/<external_id:qid>/",
    "POST api/collections/<slug:slug>/judgments/",
    "PATCH api/collections/<slug:slug>/judgments/<int:pk>/",
    "DELETE api/collections/<slug:slug>/judgments/<int:pk>/",
    "POST api/collections/<slug:slug>/tasks/claim/",
    "POST api/collections/<slug:slug>/tasks/<int:pk>/skip/",
    "POST api/collections/<slug:slug>/tasks/<int:pk>/judge/",
}
READ_SCOPE_WRITES = {
    "POST api/collections/<slug:slug>/snapshots/<int:number>/exports/",  # reading qrels
    "DELETE api/tokens/<int:pk>/",  # a leaked token can always be revoked with itself
}
# Not the API's: no token is read there (anyone may read the schema and its docs).
# The schema and its docs are public and hold no data; a bad token sent there is the
# client's own mistake (401 or 403 from DRF's schema view, as anywhere in the API).
PUBLIC = {"api/schema/", "api/docs/", "api/redoc/", "api/redoc/redoc.standalone.js", "^api/"}
SCOPE_RANK = {"read": 1, "judge": 2, "admin": 3}


def scope_of(method: str, route: str) -> str:
    operation = f"{method} {route}"
    if operation in JUDGE_SCOPE:
        return "judge"
    if operation in READ_SCOPE_WRITES or method == "GET":
        return "read"
    return "admin"


def token_expectation(token: str, method: str, route: str) -> int | str:
    """What ``token`` gets for ``method route`` of alpha, from the session table's row."""
    row = dict(zip(CALLERS, TABLE[route][method], strict=True))
    if route in PUBLIC:
        return row["anon"]
    if token in ("expired", "revoked"):
        return 401
    if token in ("read", "judge"):
        return row["admin"] if SCOPE_RANK[token] >= SCOPE_RANK[scope_of(method, route)] else 403
    if token == "removed":
        return row["removed"]
    if "<slug:slug>" not in route and row["admin"] == 405:
        return 405  # no collection named: the method is refused first
    return BETA_ONLY.get(f"{method} {route}", 403)  # beta_only


# The token limited to beta, used where no collection is named: its own tokens and the
# collection list (narrowed to beta) answer; alpha's jobs do not (403: the token says).
BETA_ONLY = {
    "GET api/collections/": 200,
    "GET api/tokens/": 200,
    "GET api/tokens/<int:pk>/": 404,  # the evaluator's token: not the token owner's
    "DELETE api/tokens/<int:pk>/": 404,
}

API_ROUTES = [route for route, _ in ROUTES if route.startswith("api/") and route not in PUBLIC]


@pytest.mark.parametrize("route", API_ROUTES)
def test_each_api_token_gets_what_its_scope_and_its_users_roles_allow(route, world):
    wrong, leaked = [], []
    url = fill(route, world.homes["alpha"], world)
    for method in TABLE[route]:
        for token, reads in TOKEN_CALLERS.items():
            client = Client(HTTP_AUTHORIZATION=f"Token {world.keys[token]}")
            answer = request(client, method, url, BODIES.get((method, route)))
            want = token_expectation(token, method, route)
            if not matches(want, answer):
                wrong.append(
                    f"  {token:<9} {method} {url}: expected {want}, got {outcome(answer)}: "
                    f"{answer.body[:200]}"
                )
            if answer.status in (401, 403) and not answer.body.startswith('{"detail":'):
                wrong.append(f"  {token:<9} {method} {url}: a refusal without a reason")
            leaked += [
                f"  {token:<9} {method} {url}: {w}"
                for w in what_leaks_to(reads, url, answer, world)
            ]
    assert not wrong, f"{route}\n" + "\n".join(wrong)
    assert not leaked, f"{route}: answers tell tokens what they may not know\n" + "\n".join(leaked)


# -- another collection's objects through this one's URLs -----------------------------------


def crossed_requests(world: World) -> list[tuple[str, str, dict[str, Any] | None]]:
    """alpha's URLs naming beta's objects: in the path (ids of evaluations, judgments,
    tasks), in the query string, in a form."""
    alpha, beta = world.homes["alpha"], world.homes["beta"]
    crossed = []
    for route, methods in TABLE.items():
        if "<slug:slug>" not in route or "<int:pk>" not in route:
            continue
        url = fill(route, alpha, world)
        for kind, pk in (
            ("evaluations", (alpha.evaluation, beta.evaluation)),
            ("judgments", (alpha.judgment, beta.judgment)),
            ("tasks", (alpha.task, beta.task)),
        ):
            if f"{kind}/<int:pk>" in route:
                url = url.replace(f"/{kind}/{pk[0]}/", f"/{kind}/{pk[1]}/")
        crossed += [(method, url, None) for method in methods if methods[method][6] != 405]
    pair = {"a": beta.evaluation, "b": beta.other_evaluation}
    query = f"?a={beta.evaluation}&b={beta.other_evaluation}"
    crossed += [
        ("GET", f"/c/alpha/compare/{query}", None),
        ("GET", f"/api/collections/alpha/compare/{query}", None),
        ("GET", f"/api/collections/alpha/compare/{query}&format=csv", None),
        ("POST", "/api/collections/alpha/compare/focus/", pair),
        ("POST", "/c/alpha/compare/focus/", pair),
        ("POST", "/c/alpha/compare/latest/", pair),
        ("POST", "/c/alpha/compare/score/", {"a": beta.evaluation, "stage": "alt/"}),
        ("POST", "/c/alpha/review/judge/", {"task": beta.task, "grade": 1}),
        ("POST", "/c/alpha/review/skip/", {"task": beta.task}),
    ]
    return crossed


@pytest.mark.parametrize("caller", ["admin", "superuser"])
def test_another_collections_objects_through_this_ones_urls(world, caller):
    """alpha's admin, and a superuser (who may read beta), name beta's objects through
    alpha's URLs: 404 (or the form's 400), never beta's object, nothing changed."""
    crossed = crossed_requests(world)
    beta = world.homes["beta"]
    for pk in (beta.evaluation, beta.judgment, beta.task):
        assert any(f"/{pk}/" in url for _, url, _ in crossed), pk
    wrong = []
    for method, url, data in crossed:
        answer = request(world.sessions[caller], method, url, data)
        if answer.status not in (400, 404):
            wrong.append(f"  {method} {url} {data or ''}: {outcome(answer)} {answer.body[:160]}")
        wrong += [f"  {method} {url}: {w}" for w in what_leaks_to(("alpha",), url, answer, world)]
    assert not wrong, f"{caller} reached beta through alpha:\n" + "\n".join(wrong)


# -- jobs: the role is the one held now -----------------------------------------------------

# How each kind of job is started by a member holding the role it needs: (username, the
# role to demote them to, method, URL, form or JSON). The worker runs them after the change.
STARTS = {
    "qrels export (API)": ("eve", Role.REVIEWER, "/api/collections/alpha/snapshots/2/exports/"),
    "diagnosis (API)": ("eve", Role.REVIEWER, "/api/collections/alpha/runs/sys/diagnosis/"),
    "judging (API)": (
        "eve",
        Role.REVIEWER,
        "/api/collections/alpha/judges/local-baseline/proposals/",
    ),
    "bundle export (page)": ("ada", Role.EVALUATOR, "/c/alpha/bundle/"),
}


def job_doors(job: int) -> dict[str, str]:
    return {
        "page": f"/jobs/{job}/",
        "api": f"/api/jobs/{job}/",
        "file": f"/api/jobs/{job}/file",
    }


@pytest.mark.parametrize("change", ["removed", "demoted"])
@pytest.mark.parametrize("start", list(STARTS))
def test_a_job_does_not_run_under_a_role_its_requester_lost_since(world, start, change):
    username, lower, url = STARTS[start]
    user = world.users[username]
    client = Client()
    client.force_login(user)
    last = Job.objects.order_by("-pk").values_list("pk", flat=True).first()
    kwargs = {"data": {}}
    if url.startswith("/api/"):
        kwargs = {"data": "{}", "content_type": "application/json", "HTTP_PREFER": "respond-async"}
    started = client.post(url, **kwargs)
    assert started.status_code in (202, 302), started.content[:300]
    job = Job.objects.filter(pk__gt=last, created_by=user).get()
    alpha = Collection.objects.get(slug="alpha")
    set_membership(collection=alpha, user=user, role=None if change == "removed" else lower)

    import_string(job.task_path).call(job.pk)  # the worker takes it now

    job.refresh_from_db()
    assert job.state == JobState.FAILED, (job.state, job.result)
    assert job.error.startswith(f"Not run: {username} does not hold the"), job.error
    assert not job.result.get("file")
    for door, where in job_doors(job.pk).items():
        assert client.get(where).status_code == 404, door


def test_the_removed_members_jobs_are_neither_run_nor_read_by_him(world):
    rex = world.sessions["removed"]
    for job in (world.rex_job, world.rex_done_job):
        for door, where in job_doors(job).items():
            answer = request(rex, "GET", where)
            assert answer.status == 404, (job, door, answer.status)
            assert "q1 0 i1" not in answer.body
        for action in ("retry", "cancel"):
            assert request(rex, "POST", f"/jobs/{job}/{action}/").status == 404
            assert request(rex, "POST", f"/api/jobs/{job}/{action}/").status == 404
    queued = Job.objects.get(pk=world.rex_job)
    assert queued.state == JobState.QUEUED
    import_string(queued.task_path).call(queued.pk)
    queued.refresh_from_db()
    assert queued.state == JobState.FAILED
    assert queued.error.startswith("Not run: rex does not hold the evaluator role")
    assert not queued.result.get("file")


def test_an_export_file_is_downloaded_only_by_who_may_read_it_now(world):
    """The evaluator's finished qrels export: its author and superusers; not another
    collection's people, not the collection's reviewers; and not its author once demoted."""
    export = f"/api/jobs/{world.homes['alpha'].export_job}/file"
    expected = {
        "anon": 401,
        "outsider": 404,
        "stranger": 404,
        "reviewer": 404,
        "blind": 404,
        "evaluator": 200,
        "admin": 403,  # may read the qrels, but the file is its author's
        "superuser": 200,
        "removed": 404,
    }
    got = {caller: request(world.sessions[caller], "GET", export).status for caller in CALLERS}
    assert got == expected
    alpha = Collection.objects.get(slug="alpha")
    set_membership(collection=alpha, user=world.users["eve"], role=Role.REVIEWER)
    assert request(world.sessions["evaluator"], "GET", export).status == 404


@pytest.mark.parametrize("change", [None, "removed", "demoted"], ids=["kept", "removed", "demoted"])
def test_a_job_whose_requester_loses_the_role_while_it_runs_stores_nothing(
    world, monkeypatch, change
):
    """The evaluator's freeze starts while she holds the role; she is removed (or made a
    reviewer) while it freezes: no v3 is stored, the job fails saying why."""
    import judgments.tasks

    alpha = Collection.objects.get(slug="alpha")
    eve = world.users["eve"]
    record_assessment(  # a change since v2: a freeze makes v3
        query=alpha.queries.get(),
        item=Item.objects.get(collection=alpha, external_id="i3"),
        grade=1,
        assessor=world.users["ana"],
    )
    job = Job.objects.create(
        kind=JobKind.SNAPSHOT_FREEZE,
        state=JobState.QUEUED,
        collection=alpha,
        created_by=eve,
        label="Freeze",
        task_path="judgments.tasks.freeze_task",
    )
    freeze = judgments.tasks.freeze_snapshot

    def meanwhile(**kwargs: Any) -> Any:
        if change is not None:
            role = None if change == "removed" else Role.REVIEWER
            set_membership(collection=alpha, user=eve, role=role)
        return freeze(**kwargs)

    monkeypatch.setattr(judgments.tasks, "freeze_snapshot", meanwhile)
    judgments.tasks.freeze_task.call(job.pk)

    job.refresh_from_db()
    made = Snapshot.objects.filter(collection=alpha, number=3).exists()
    if change is None:
        assert (job.state, made) == (JobState.DONE, True), job.error
        return
    assert (job.state, made) == (JobState.FAILED, False)
    assert job.error.startswith(
        "Not completed: eve lost the evaluator role in collection 'alpha' while this job ran"
    ), job.error


def test_an_export_whose_requester_is_removed_while_it_writes_keeps_no_file(world, monkeypatch):
    """The evaluator's qrels export writes its file; she is removed before it completes:
    the job fails saying why, and the file it wrote is deleted, not only unreachable."""
    from django.core.files.storage import storages

    import judgments.tasks

    alpha = Collection.objects.get(slug="alpha")
    eve = world.users["eve"]
    job = Job.objects.create(
        kind=JobKind.QRELS_EXPORT,
        state=JobState.QUEUED,
        collection=alpha,
        created_by=eve,
        label="Export",
        params={"snapshot": 1, "format": "trec"},
        task_path="judgments.tasks.qrels_export_task",
    )
    lines = judgments.tasks.snapshot_trec_lines

    def meanwhile(*args: Any, **kwargs: Any) -> Any:
        yield from lines(*args, **kwargs)
        set_membership(collection=alpha, user=eve, role=None)

    monkeypatch.setattr(judgments.tasks, "snapshot_trec_lines", meanwhile)
    judgments.tasks.qrels_export_task.call(job.pk)

    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert job.error.startswith("Not completed: eve lost the evaluator role"), job.error
    assert not job.result.get("file")
    folder = f"outputs/{job.key}"
    storage = storages["jobs"]
    assert not storage.exists(folder) or storage.listdir(folder) == ([], [])


def test_a_sign_in_the_provider_cannot_finish_says_so_without_the_client_secret(world):
    """The callback of a sign-in started here, whose code exchange fails (the token
    endpoint does not answer): a refusal page, and no client secret in it or its headers."""
    browser = Client()
    started = browser.get("/oidc/login/")
    assert started.status_code == 302 and started["Location"].startswith(f"{ISSUER}/auth")
    state = parse_qs(urlsplit(started["Location"]).query)["state"][0]
    answer = browser.get("/oidc/callback/", {"code": "a-code", "state": state})
    assert answer.status_code == 502, answer.status_code  # the provider did not answer
    shown = answer.content.decode() + str(answer.headers) + started["Location"]
    assert OIDC_SECRET not in shown
    assert not what_leaks(
        "anon",
        "/oidc/callback/",
        Answer(answer.status_code, answer.get("Location", ""), shown, answer["Content-Type"]),
        world,
    )


def test_a_deactivated_admin_is_let_in_nowhere(world):
    """An admin of alpha signed in, with a token, then deactivated: every door an admin
    opens answers as to an anonymous caller (the token: 401 saying why)."""
    dee = make_user("dee")
    set_membership(collection=Collection.objects.get(slug="alpha"), user=dee, role=Role.ADMIN)
    session = Client()
    session.force_login(dee)
    token = Client(HTTP_AUTHORIZATION=f"Token {create_api_token(user=dee, name='dee').key}")
    type(dee).objects.filter(pk=dee.pk).update(is_active=False)
    wrong = []
    for route, methods in TABLE.items():
        row = dict(zip(CALLERS, methods.get("GET", ()), strict=False))
        if row.get("admin") != 200 or row.get("anon") == 200:
            continue
        url = fill(route, world.homes["alpha"], world)
        got = request(session, "GET", url)
        if not matches(row["anon"], got):
            wrong.append(f"  session GET {url}: {outcome(got)}")
        if route.startswith("api/"):
            got = request(token, "GET", url)
            if got.status != 401 or "deactivated" not in got.body:
                wrong.append(f"  token GET {url}: {outcome(got)} {got.body[:120]}")
    assert not wrong, "a deactivated admin was let in:\n" + "\n".join(wrong)
