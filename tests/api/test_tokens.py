"""API tokens (issue 27 item 2): stored hashed, shown once, named, expiring, scoped,
optionally limited to one collection, last use recorded, revocable from the page, the
API and the command; DRF's plain keys converted by a migration.

Every refusal names its reason: 401 for an unknown, revoked or expired key, 403 for a
request beyond the token's scope or outside its collection, and the user's roles still
apply on top of any scope.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import logging
from datetime import timedelta

import pytest
from django.apps import apps as django_apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from judgments.models import ApiToken, Membership
from judgments.services import (
    InvariantError,
    create_api_token,
    revoke_api_token,
    rotate_api_token,
)


def client_for(key: str, **extra: str) -> APIClient:
    client = APIClient(**extra)
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def issue(world, role: str, **options):
    return create_api_token(user=world.users[role], name=f"{role} test", **options)


# -- stored hashed, shown once --------------------------------------------------------------


def test_only_the_keys_hash_and_prefix_are_stored(api_world):
    issued = issue(api_world, "reviewer", scope="read")
    token = ApiToken.objects.get(pk=issued.token.pk)
    assert issued.key.startswith("vt_") and len(issued.key) == 3 + 8 + 1 + 43
    assert token.key_hash == hashlib.sha256(issued.key.encode()).hexdigest()
    assert token.prefix == issued.key[:11]
    assert issued.key not in repr(issued)  # a stray print or traceback shows the prefix only
    assert client_for(issued.key).get("/api/collections/").status_code == 200


def all_text_in_the_database() -> str:
    """Every value of every column of every table, as text (a poor man's dump)."""
    chunks = []
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {quote(table)}")
            for row in cursor.fetchall():
                chunks.extend(
                    v.hex()
                    if isinstance(v, bytes | memoryview) and not isinstance(v, str)
                    else str(v)
                    for v in row
                )
    return "\n".join(chunks)


def test_a_secret_is_nowhere_in_the_database_sql_or_logs(api_world, caplog):
    caplog.set_level(logging.DEBUG)
    page = Client()
    page.force_login(api_world.users["reviewer"])
    made = page.post(
        "/accounts/tokens/", {"action": "create", "name": "ci", "scope": "judge", "days": "30"}
    )
    token = ApiToken.objects.get(user=api_world.users["reviewer"], name="ci")
    key = made.content.decode().split('id="new-key" type="text" value="')[1].split('"')[0]
    assert key.startswith(token.prefix)
    client = client_for(key)
    with CaptureQueriesContext(connection) as sql:
        assert client.get("/api/collections/").status_code == 200
        assert client.post(f"/api/collections/{api_world.slug}/tasks/claim/").status_code == 200
        assert client.post(f"/api/collections/{api_world.slug}/snapshots/").status_code == 403
        assert client_for(key + "x").get("/api/collections/").status_code == 401
    call_command("api_token", "list", stdout=(listing := io.StringIO()))
    call_command("dumpdata", stdout=(dump := io.StringIO()))

    secret = key[len(token.prefix) + 1 :]
    assert token.last_used_at is not None or ApiToken.objects.get(pk=token.pk).last_used_at
    for where, text in [
        ("a table", all_text_in_the_database()),
        ("dumpdata", dump.getvalue()),
        ("the SQL sent", "\n".join(q["sql"] for q in sql.captured_queries)),
        ("the logs", caplog.text + "\n".join(str(r.args) for r in caplog.records)),
        ("api_token list", listing.getvalue()),
        ("the page", page.get("/accounts/tokens/").content.decode()),
    ]:
        assert secret not in text, where
        assert key not in text, where
    assert token.prefix in listing.getvalue()


# -- expiry ---------------------------------------------------------------------------------


def test_a_token_expires_after_90_days_by_default_and_then_gets_401(api_world):
    issued = issue(api_world, "reviewer")
    token = issued.token
    assert token.expires_at - token.created_at == timedelta(days=90)
    ApiToken.objects.filter(pk=token.pk).update(
        created_at=timezone.now() - timedelta(days=91),
        expires_at=timezone.now() - timedelta(seconds=1),
    )
    response = client_for(issued.key).get("/api/collections/")
    assert response.status_code == 401
    assert f"Token 'reviewer test' ({token.prefix}…) expired on" in response.json()["detail"]


def test_the_lifetime_is_capped_by_the_setting(api_world, settings):
    settings.VERITY_TOKEN_MAX_DAYS = 30
    assert issue(api_world, "reviewer", days=30).token.expires_at > timezone.now()
    before = ApiToken.objects.count()
    for days in (31, 0, -1):
        with pytest.raises(InvariantError, match="1 to 30 days"):
            issue(api_world, "reviewer", days=days)
    assert ApiToken.objects.count() == before


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"name": ""}, "needs a name"),
        ({"name": "x" * 101}, "needs a name"),
        ({"name": "ok", "scope": "root"}, "unknown scope 'root'"),
    ],
)
def test_bad_token_options_are_refused_and_nothing_is_made(api_world, options, message):
    before = ApiToken.objects.count()
    with pytest.raises(InvariantError, match=message):
        create_api_token(user=api_world.users["reviewer"], **options)
    assert ApiToken.objects.count() == before


def test_a_token_for_a_collection_the_user_is_not_in_is_refused(api_world):
    before = ApiToken.objects.count()
    with pytest.raises(
        InvariantError, match="'reviewer' is not a member of collection 'elsewhere'"
    ):
        issue(api_world, "reviewer", collection=api_world.elsewhere)
    assert ApiToken.objects.count() == before
    assert issue(api_world, "superuser", collection=api_world.elsewhere).token.collection_id


# -- revocation -----------------------------------------------------------------------------


def test_a_revoked_token_gets_401_saying_revoked(api_world):
    issued = issue(api_world, "reviewer")
    assert revoke_api_token(token=issued.token) is True
    assert revoke_api_token(token=issued.token) is False
    response = client_for(issued.key).get("/api/collections/")
    assert response.status_code == 401
    assert "was revoked on" in response.json()["detail"]
    assert response["WWW-Authenticate"] == "Token"


def test_an_unknown_key_gets_401_saying_so(api_world):
    response = client_for("vt_abcdefgh_" + "A" * 43).get("/api/collections/")
    assert response.status_code == 401
    assert response.json()["detail"].startswith("Invalid token: no such key")


def test_rotating_revokes_the_old_key_and_keeps_name_scope_and_collection(api_world):
    old = issue(api_world, "reviewer", scope="judge", collection=api_world.collection)
    new = rotate_api_token(token=old.token)
    assert (new.token.name, new.token.scope, new.token.collection) == (
        "reviewer test",
        "judge",
        api_world.collection,
    )
    assert client_for(old.key).get("/api/collections/").status_code == 401
    assert client_for(new.key).get("/api/collections/").status_code == 200
    with pytest.raises(InvariantError, match="revoked already"):
        rotate_api_token(token=old.token)


def test_the_api_revokes_a_token_and_a_weak_token_only_itself(api_world):
    read = issue(api_world, "reviewer", scope="read")
    other = issue(api_world, "reviewer", scope="judge")
    admin = issue(api_world, "reviewer", scope="admin")
    stranger = issue(api_world, "stranger", scope="admin")

    listed = client_for(read.key).get("/api/tokens/")
    assert listed.status_code == 200
    assert {t["prefix"] for t in listed.json()} >= {read.token.prefix, other.token.prefix}
    assert all("key" not in t and "key_hash" not in t for t in listed.json())

    refused = client_for(read.key).delete(f"/api/tokens/{other.token.pk}/")
    assert refused.status_code == 403 and "may revoke itself only" in refused.json()["detail"]
    assert client_for(admin.key).delete(f"/api/tokens/{stranger.token.pk}/").status_code == 404
    done = client_for(admin.key).delete(f"/api/tokens/{other.token.pk}/")
    assert done.status_code == 200 and done.json()["state"] == "revoked"
    assert client_for(other.key).get("/api/collections/").status_code == 401
    assert client_for(read.key).delete(f"/api/tokens/{read.token.pk}/").status_code == 200
    assert client_for(read.key).get("/api/tokens/").status_code == 401
    assert ApiToken.objects.get(pk=stranger.token.pk).revoked_at is None


# -- scope, collection, roles ---------------------------------------------------------------

CLAIM = "tasks/claim/"
FREEZE = "snapshots/"
MEMBERS = "members/"


@pytest.mark.parametrize(
    ("role", "scope", "method", "path", "status", "message"),
    [
        ("reviewer", "read", "get", "queries/", 200, None),
        ("reviewer", "read", "post", CLAIM, 403, "has the 'read' scope; POST"),
        ("reviewer", "judge", "post", CLAIM, 200, None),
        ("evaluator", "read", "post", FREEZE, 403, "needs 'admin'"),
        ("evaluator", "judge", "post", FREEZE, 403, "has the 'judge' scope"),
        ("evaluator", "admin", "post", FREEZE, 201, None),
        # The scope never adds to the roles: an admin-scope token of a reviewer is a reviewer.
        ("reviewer", "admin", "post", FREEZE, 403, "needs the evaluator role"),
        ("reviewer", "admin", "get", MEMBERS, 403, "needs the admin role"),
        ("evaluator", "read", "post", "snapshots/1/exports/", 202, None),  # reading qrels
        ("evaluator", "read", "get", "snapshots/1/qrels", 200, None),
    ],
)
def test_the_scope_and_the_roles_both_apply(api_world, role, scope, method, path, status, message):
    client = client_for(issue(api_world, role, scope=scope).key)
    response = getattr(client, method)(f"/api/collections/{api_world.slug}/{path}")
    assert response.status_code == status, response.content
    if message:
        assert message in response.json()["detail"]


def test_a_judge_token_edits_judgments_but_not_members(api_world):
    client = client_for(issue(api_world, "admin", scope="judge").key)
    url = f"/api/collections/{api_world.slug}/judgments/{api_world.judgment.pk}/"
    etag = client.get(url)["ETag"]
    assert client.patch(url, {"grade": 1}, HTTP_IF_MATCH=etag).status_code == 200
    refused = client.post(
        f"/api/collections/{api_world.slug}/{MEMBERS}", {"username": "newbie", "role": "reviewer"}
    )
    assert refused.status_code == 403 and "needs 'admin'" in refused.json()["detail"]
    assert not Membership.objects.filter(user__username="newbie").exists()


def test_a_token_follows_the_users_current_roles(api_world):
    issued = issue(api_world, "evaluator", scope="admin")
    client = client_for(issued.key)
    url = f"/api/collections/{api_world.slug}/snapshots/1/qrels"
    assert client.get(url).status_code == 200
    Membership.objects.filter(user=api_world.users["evaluator"]).update(role="reviewer")
    assert client.get(url).status_code == 403
    Membership.objects.filter(user=api_world.users["evaluator"]).delete()
    assert client.get(url).status_code == 404  # not a member: the collection is not there


def test_a_collection_token_works_in_its_collection_only(api_world):
    issued = issue(api_world, "superuser", scope="admin", collection=api_world.collection)
    client = client_for(issued.key)
    assert client.get(f"/api/collections/{api_world.slug}/queries/").status_code == 200
    listed = client.get("/api/collections/").json()
    assert [c["slug"] for c in listed["results"]] == [api_world.slug]
    refused = client.get("/api/collections/elsewhere/queries/")
    assert refused.status_code == 403
    assert (
        f"is limited to collection '{api_world.slug}'; it cannot be used for collection "
        "'elsewhere'" in refused.json()["detail"]
    )
    assert client.get(f"/api/jobs/{api_world.job.pk}/").status_code == 200
    api_world.job.collection = api_world.elsewhere
    api_world.job.save()
    assert client.get(f"/api/jobs/{api_world.job.pk}/").status_code == 403


def test_the_session_is_not_limited_by_any_token(api_world):
    client = APIClient()
    client.force_login(api_world.users["evaluator"])
    assert client.post(f"/api/collections/{api_world.slug}/snapshots/").status_code == 201


# -- last use -------------------------------------------------------------------------------


def test_last_use_is_written_at_most_once_a_minute_with_the_address(api_world):
    issued = issue(api_world, "reviewer", scope="read")
    client = client_for(issued.key)
    assert issued.token.last_used_at is None
    with CaptureQueriesContext(connection) as first:
        client.get("/api/collections/", REMOTE_ADDR="10.1.2.3")
    token = ApiToken.objects.get(pk=issued.token.pk)
    assert token.last_used_ip == "10.1.2.3" and token.last_used_at is not None
    with CaptureQueriesContext(connection) as second:
        client.get("/api/collections/", REMOTE_ADDR="10.9.9.9")
    assert ApiToken.objects.get(pk=token.pk).last_used_ip == "10.1.2.3"
    assert len(second.captured_queries) == len(first.captured_queries) - 1  # no UPDATE
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now() - timedelta(seconds=61))
    client.get("/api/collections/", REMOTE_ADDR="10.9.9.9")
    assert ApiToken.objects.get(pk=token.pk).last_used_ip == "10.9.9.9"


def test_authentication_is_one_indexed_lookup(api_world):
    issued = issue(api_world, "reviewer", scope="read")
    ApiToken.objects.filter(pk=issued.token.pk).update(last_used_at=timezone.now())
    with CaptureQueriesContext(connection) as sql:
        client_for(issued.key).get("/api/tokens/")
    # the token joined to its user and collection, then the view's own list
    token_reads = [q for q in sql.captured_queries if '."key_hash" = ' in q["sql"]]
    assert len(token_reads) == 1
    assert len(sql.captured_queries) == 2


# -- the page and the command ---------------------------------------------------------------


def test_the_tokens_page_creates_lists_rotates_and_revokes(api_world):
    user = api_world.users["reviewer"]
    ApiToken.objects.filter(user=user).delete()  # the fixture's
    page = Client()
    page.force_login(user)
    empty = page.get("/accounts/tokens/")
    assert b"You have no token." in empty.content and "no-store" in empty["Cache-Control"]
    made = page.post(
        "/accounts/tokens/",
        {"action": "create", "name": "nightly", "scope": "read", "collection": api_world.slug},
    )
    token = ApiToken.objects.get(user=user, name="nightly")
    assert (token.scope, token.collection, token.expires_at - token.created_at) == (
        "read",
        api_world.collection,
        timedelta(days=90),
    )
    body = made.content.decode()
    key = body.split('id="new-key" type="text" value="')[1].split('"')[0]
    assert token.key_hash == hashlib.sha256(key.encode()).hexdigest()
    listing = page.get("/accounts/tokens/").content.decode()
    assert key not in listing and f"{token.prefix}…" in listing and "nightly" in listing

    rotated = page.post("/accounts/tokens/", {"action": "rotate", "token": token.pk})
    new = ApiToken.objects.get(user=user, name="nightly", revoked_at__isnull=True)
    assert new.pk != token.pk and new.prefix in rotated.content.decode()
    assert client_for(key).get("/api/collections/").status_code == 401

    page.post("/accounts/tokens/", {"action": "revoke", "token": new.pk})
    assert ApiToken.objects.get(pk=new.pk).revoked_at is not None


@pytest.mark.parametrize(
    ("post", "message"),
    [
        ({"action": "create", "name": "x", "days": "9999"}, "1 to 365 days"),
        ({"action": "create", "name": "x", "collection": "elsewhere"}, "no collection"),
        ({"action": "create", "name": ""}, "needs a name"),
        ({"action": "revoke", "token": "999999"}, "No such token of yours"),
    ],
)
def test_the_tokens_page_refuses_bad_input_and_changes_nothing(api_world, post, message):
    page = Client()
    page.force_login(api_world.users["reviewer"])
    before = list(ApiToken.objects.values_list("pk", "revoked_at"))
    response = page.post("/accounts/tokens/", post, follow=True)
    assert message in response.content.decode()
    assert list(ApiToken.objects.values_list("pk", "revoked_at")) == before


def test_another_users_token_cannot_be_revoked_from_the_page(api_world):
    theirs = issue(api_world, "stranger")
    page = Client()
    page.force_login(api_world.users["reviewer"])
    page.post("/accounts/tokens/", {"action": "revoke", "token": theirs.token.pk})
    assert ApiToken.objects.get(pk=theirs.token.pk).revoked_at is None


def test_the_command_creates_rotates_lists_and_revokes(api_world):
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "api_token", "create", "reviewer", "--name", "ci", "--collection", api_world.slug,
        stdout=out, stderr=err,
    )  # fmt: skip
    key = out.getvalue().strip()
    token = ApiToken.objects.get(key_hash=hashlib.sha256(key.encode()).hexdigest())
    assert (token.name, token.scope, token.collection) == ("ci", "read", api_world.collection)
    assert "shown once" in err.getvalue() and "scope read" in err.getvalue()
    out = io.StringIO()
    call_command("api_token", "rotate", token.prefix, stdout=out, stderr=io.StringIO())
    new_key = out.getvalue().strip()
    assert new_key != key and client_for(key).get("/api/tokens/").status_code == 401
    listing = io.StringIO()
    call_command("api_token", "list", "reviewer", stdout=listing)
    assert key not in listing.getvalue() and new_key not in listing.getvalue()
    assert "\trevoked\t" in listing.getvalue() and "\tactive\t" in listing.getvalue()
    call_command("api_token", "revoke-all", "reviewer", stdout=(done := io.StringIO()))
    assert done.getvalue().startswith("Revoked ")
    assert not ApiToken.objects.live().filter(user__username="reviewer").exists()
    with pytest.raises(CommandError, match="no token with prefix 'vt_nothere'"):
        call_command("api_token", "revoke", "vt_nothere", stdout=io.StringIO())
    with pytest.raises(CommandError, match="1 to 365 days"):
        call_command(
            "api_token", "create", "reviewer", "--name", "x", "--days", "400",
            stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip


# -- DRF's plain tokens, converted by the migration -----------------------------------------


class _SchemaEditor:
    """What the migration function uses of a schema editor (a real one cannot open
    inside the test's transaction on SQLite)."""

    connection = connection

    def execute(self, sql: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql)


def test_the_migration_turns_plain_keys_into_hashed_tokens_that_keep_working(api_world):
    migration = importlib.import_module("judgments.migrations.0018_convert_plain_api_tokens")
    plain = "0123456789abcdef0123456789abcdef01234567"
    user = api_world.users["evaluator"]
    with connection.cursor() as cursor:
        cursor.execute(
            'CREATE TABLE authtoken_token ("key" varchar(40) PRIMARY KEY, '
            "created timestamp NOT NULL, user_id integer NOT NULL)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token VALUES (%s, %s, %s)", [plain, timezone.now(), user.pk]
        )
    migration.convert_plain_tokens(django_apps, _SchemaEditor())

    assert "authtoken_token" not in connection.introspection.table_names()
    token = ApiToken.objects.get(user=user, name="token made before scopes")
    assert (token.prefix, token.scope) == ("012345", "admin")
    assert token.key_hash == hashlib.sha256(plain.encode()).hexdigest()
    assert timedelta(days=89) < token.expires_at - timezone.now() <= timedelta(days=90)
    client = client_for(plain)
    assert client.post(f"/api/collections/{api_world.slug}/snapshots/").status_code == 201
    assert plain not in all_text_in_the_database()
    migration.convert_plain_tokens(django_apps, _SchemaEditor())  # no table: nothing to do
    assert ApiToken.objects.filter(name="token made before scopes").count() == 1
