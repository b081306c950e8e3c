"""No GET writes: every GET URL of the URLconf, walked as an evaluator and as a reviewer on
the demo, with real arguments, leaves every table exactly as it was: not only its row
count, but every value of every row.

The URL list is built from the URLconf itself (so a new page is walked without anyone
adding it here); each pattern's arguments come from the demo that ``load_demo`` makes,
plus one finished job. Pages that also answer ``?format=json`` / ``csv`` are walked in
those forms too. Only Django's own admin is left out: for an evaluator (not staff) each
of its pages is a redirect to the login.

The reviewer's walk adds the review queue in every scope (all queries, ``?query=``,
``?tag=``), as a page and as the JSON its script asks for, first with nothing held, then
holding a task, in its scope and out of it: a GET shows the task held, and never claims,
extends or releases one (claiming is ``POST /c/<slug>/review/claim/``).

The fingerprint of the database is taken after the logins (which write a session row and
``last_login``), so nothing is excluded from it but one kind of row: a download of data
(qrels, a report as CSV or JSON) appends its ``export.*`` row to the audit log, as a
server's access log records a GET (RFC 9110 9.2.1); any other row added, and any row of
the log changed or removed, is a write. Reading the audit log itself appends nothing.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection, models
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from audit.models import AuditEvent
from jobs.models import Job, JobKind, JobState
from judgments.models import Collection, ReviewTask, TaskStatus
from scoring.models import Evaluation

pytestmark = pytest.mark.django_db

JSON = {"HTTP_ACCEPT": "application/json"}
Rows = dict[str, dict[Any, tuple[Any, ...]]]


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


def every_get_url(demo: dict[str, Any]) -> list[str]:
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
    return urls


def managed_models() -> list[type[models.Model]]:
    """Every table Django manages, the many-to-many link tables included."""
    return [
        m
        for m in apps.get_models(include_auto_created=True)
        if m._meta.managed and not m._meta.proxy
    ]


def database_rows() -> Rows:
    """Every row of every managed table, by primary key: all its columns' stored values
    (plain SQL: this runs twice per GET, and the ORM's conversions would triple its cost)."""
    rows: Rows = {}
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for model in managed_models():
            meta = model._meta
            columns = [f.column for f in meta.concrete_fields]
            at = columns.index(meta.pk.column)
            cursor.execute(
                f"SELECT {', '.join(map(quote, columns))} FROM {quote(meta.db_table)} "
                f"ORDER BY {quote(meta.pk.column)}"
            )
            rows[meta.label] = {row[at]: row for row in cursor.fetchall()}
    return rows


def differences(before: Rows, after: Rows) -> list[str]:
    """What changed, table by table: rows added, removed, and changed values (a few)."""
    found = []
    for label, old in before.items():
        new = after[label]
        if old == new:
            continue
        added, removed = new.keys() - old.keys(), old.keys() - new.keys()
        changed = [pk for pk in old.keys() & new.keys() if old[pk] != new[pk]]
        columns = [f.column for f in apps.get_model(label)._meta.concrete_fields]
        if label == "audit.AuditEvent":  # a download's own audit row is no write
            action = columns.index("action")
            added = {pk for pk in added if not new[pk][action].startswith("export.")}
            if not (added or removed or changed):
                continue
        samples = [
            f"pk {pk}: "
            + ", ".join(
                f"{c} {a!r} -> {b!r}"
                for c, a, b in zip(columns, old[pk], new[pk], strict=True)
                if a != b
            )
            for pk in sorted(changed)[:3]
        ]
        found.append(
            f"{label}: {len(added)} added, {len(removed)} removed, {len(changed)} changed"
            + (f" ({'; '.join(samples)})" if samples else "")
        )
    return found


class Walk:
    """GET each URL in turn as one client, and record any GET that changed the database.

    The rows read after one GET are the rows before the next: walks that share ``seen``
    must ``look()`` again after anything else writes (a POST, a login)."""

    def __init__(self, client: Client, who: str, seen: dict[str, Rows]) -> None:
        self.client, self.who, self.seen = client, who, seen
        self.statuses: dict[str, int] = {}
        self.writes: list[str] = []

    def look(self) -> None:
        self.seen["rows"] = database_rows()

    def get(self, url: str, **headers: Any) -> Any:
        response = self.client.get(url, **headers)
        if getattr(response, "streaming", False):
            b"".join(response.streaming_content)
        key = f"{url} [json]" if headers else url
        self.statuses[key] = response.status_code
        before = self.seen["rows"]
        self.look()
        changed = differences(before, self.seen["rows"])
        if changed:
            self.writes.append(
                f"{self.who}: GET {key} ({response.status_code}) " + "; ".join(changed)
            )
        return response

    def ok(self) -> set[str]:
        return {u for u, s in self.statuses.items() if s == 200}


@pytest.fixture
def demo(settings, job_dir) -> dict[str, Any]:
    settings.DEBUG = True  # load_demo's users need it
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("load_demo", stdout=io.StringIO())
    collection = Collection.objects.get(slug="demo-handbook")
    users = get_user_model().objects.in_bulk(["evaluator", "reviewer"], field_name="username")
    job = Job.objects.create(
        kind=JobKind.SNAPSHOT_FREEZE,
        state=JobState.DONE,
        collection=collection,
        created_by=users["evaluator"],
        label="Freeze",
        task_path="judgments.tasks.freeze_task",
        result={"summary": "Nothing changed since v1.", "url": "/c/demo-handbook/snapshots/"},
    )
    evaluation = Evaluation.objects.filter(run__name="pipeline").order_by("pk").last()
    a, b = (Evaluation.objects.get(run__name=n).pk for n in ("lexical", "titles"))
    return {
        **users,
        "collection": collection,
        "job": job.pk,
        "evaluation": evaluation.pk,
        "pair": (a, b),
    }


def assert_wrote_nothing(*walks: Walk) -> None:
    writes = [w for walk in walks for w in walk.writes]
    assert not writes, "GET requests wrote to the database:\n" + "\n".join(writes)


def logged_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_every_get_url_writes_nothing(demo):
    urls = every_get_url(demo)
    assert len(urls) > 60 and "/c/demo-handbook/runs/pipeline/diagnosis/" in urls
    review = reverse("judgments:review", args=["demo-handbook"])
    open_tasks = ReviewTask.objects.filter(
        collection=demo["collection"], status=TaskStatus.PENDING
    ).select_related("query")
    first = open_tasks.order_by("-priority", "pk").first()
    assert first is not None, "the demo has open review tasks to claim"
    tag = first.query.tags[0]
    scopes = ["", f"?query={first.query.external_id}", f"?tag={tag}"]

    seen: dict[str, Rows] = {}
    evaluator = Walk(logged_in(demo["evaluator"]), "evaluator", seen)
    reviewer = Walk(logged_in(demo["reviewer"]), "reviewer", seen)
    evaluator.look()  # after both logins
    audited_before = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    for walk in (evaluator, reviewer):
        for url in urls:
            walk.get(url)
    # The queue in each scope, as a page and as its script's JSON, nothing held yet.
    for scope in scopes:
        reviewer.get(review + scope)
        reviewer.get(review + scope, **JSON)
    assert_wrote_nothing(evaluator, reviewer)
    assert not ReviewTask.objects.filter(claimed_by=demo["reviewer"]).exists()

    # Now holding a task (claimed by POST): a GET shows it in its scope, and out of its
    # scope (another query) neither releases it nor claims another.
    claimed = reviewer.client.post(reverse("judgments:review-claim", args=["demo-handbook"]))
    reviewer.look()
    held = ReviewTask.objects.get(claimed_by=demo["reviewer"], status=TaskStatus.CLAIMED)
    other = open_tasks.exclude(query=held.query).first()
    shown = {}
    for scope in [*scopes, f"?query={other.query.external_id}"]:
        shown[scope] = reviewer.get(review + scope).context["task"]
        reviewer.get(review + scope, **JSON)

    assert_wrote_nothing(evaluator, reviewer)
    assert claimed.status_code == 303 and claimed["Location"] == review
    assert held.pk == first.pk  # the queue's first task
    assert [t.pk if t else None for t in shown.values()] == [held.pk, held.pk, held.pk, None]
    held.refresh_from_db()
    assert (held.status, held.claimed_by) == (TaskStatus.CLAIMED, demo["reviewer"])

    # The downloads were audited (the one row a GET may add), and nothing else was.
    exported = set(
        AuditEvent.objects.filter(id__gt=audited_before).values_list("action", flat=True)
    )
    assert {"export.qrels", "export.report"} <= exported, exported
    assert all(action.startswith("export.") for action in exported), exported

    # The walks reached the pages, not a wall of errors.
    for walk in (evaluator, reviewer):
        assert not [u for u, s in walk.statuses.items() if s >= 500], walk.who
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
        assert page in evaluator.ok(), (page, evaluator.statuses.get(page))
    for page in (
        "/c/demo-handbook/",
        "/c/demo-handbook/q/q001/",
        "/api/collections/demo-handbook/tasks/",
        *(review + scope for scope in scopes),
        *(f"{review}{scope} [json]" for scope in scopes),
    ):
        assert page in reviewer.ok(), (page, reviewer.statuses.get(page))


def test_the_set_up_pages_write_nothing_on_get(demo):
    """Issue 25's pages, as the demo's admin (a superuser, so /c/new/ opens too): the
    settings page's GET never previews into the database; query strings change nothing."""
    admin = get_user_model().objects.get(username="admin")
    seen: dict[str, Rows] = {}
    walk = Walk(logged_in(admin), "admin", seen)
    walk.look()
    pages = [
        "/c/new/",
        "/c/new/?start=trec",
        "/c/demo-handbook/settings/",
        "/c/demo-handbook/settings/?step=apply&assessors_per_item=3",
        "/c/demo-handbook/members/",
        "/c/demo-handbook/members/?action=remove&username=reviewer",
    ]
    for url in pages:
        walk.get(url)
    assert_wrote_nothing(walk)
    assert walk.ok() == set(pages)
