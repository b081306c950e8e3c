"""Every API operation, for every role,, against an explicit table of expected statuses.

The operations come from the OpenAPI schema that drf-spectacular generates from the code
(path and method), so a new endpoint without a row in ``MATRIX`` fails here until someone
decides who may call it. Each role's request runs in a savepoint that is rolled back, so
all roles see the same world (``tests/api/conftest.py``).

Anonymous requests get 401 (with ``WWW-Authenticate: Token``), never 403: the token
scheme is the first authenticator. A collection you are not a member of is 404, as if it
did not exist; a role too weak is 403.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from drf_spectacular.generators import SchemaGenerator

from judgments.models import ROLE_RANK, ApiToken, Collection, Membership, Role, hash_key
from judgments.services import claim_next_task
from tests.api.conftest import RECALL_EXAMPLE, ROLES, World


def schema_operations() -> list[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return sorted(
        f"{method.upper()} {path}" for path, item in schema["paths"].items() for method in item
    )


SCHEMA_OPERATIONS = schema_operations()

C = "/api/collections/{slug}"
# fmt: off
# operation                                                anon strangr review evaltr admin super
MATRIX: dict[str, tuple[int, int, int, int, int, int]] = {
    "GET /api/collections/":                                (401, 200, 200, 200, 200, 200),
    f"GET {C}/":                                            (401, 404, 200, 200, 200, 200),
    f"PATCH {C}/":                                          (401, 404, 403, 403, 200, 200),
    f"GET {C}/members/":                                    (401, 404, 403, 403, 200, 200),
    f"POST {C}/members/":                                   (401, 404, 403, 403, 201, 201),
    f"GET {C}/members/{{username}}/":                       (401, 404, 403, 403, 200, 200),
    f"PATCH {C}/members/{{username}}/":                     (401, 404, 403, 403, 200, 200),
    f"DELETE {C}/members/{{username}}/":                    (401, 404, 403, 403, 204, 204),
    f"GET {C}/queries/":                                    (401, 404, 200, 200, 200, 200),
    f"GET {C}/queries/{{qid}}/":                            (401, 404, 200, 200, 200, 200),
    f"PATCH {C}/queries/{{qid}}/":                          (401, 404, 200, 200, 200, 200),
    f"GET {C}/items/":                                      (401, 404, 200, 200, 200, 200),
    f"GET {C}/items/{{item_id}}/":                          (401, 404, 200, 200, 200, 200),
    f"GET {C}/judgments/":                                  (401, 404, 200, 200, 200, 200),
    f"POST {C}/judgments/":                                 (401, 404, 201, 201, 201, 201),
    f"GET {C}/judgments/{{id}}/":                           (401, 404, 200, 200, 200, 200),
    f"PATCH {C}/judgments/{{id}}/":                         (401, 404, 200, 200, 200, 200),
    f"DELETE {C}/judgments/{{id}}/":                        (401, 404, 204, 204, 204, 204),
    f"GET {C}/tasks/":                                      (401, 404, 200, 200, 200, 200),
    f"POST {C}/tasks/claim/":                               (401, 404, 200, 200, 200, 200),
    f"GET {C}/tasks/{{id}}/":                               (401, 404, 200, 200, 200, 200),
    f"POST {C}/tasks/{{id}}/skip/":                         (401, 404, 204, 204, 204, 204),
    f"POST {C}/tasks/{{id}}/judge/":                        (401, 404, 201, 201, 201, 201),
    f"GET {C}/snapshots/":                                  (401, 404, 200, 200, 200, 200),
    f"POST {C}/snapshots/":                                 (401, 404, 403, 201, 201, 201),
    f"GET {C}/snapshots/{{number}}/":                       (401, 404, 200, 200, 200, 200),
    f"GET {C}/snapshots/{{number}}/diff/{{other}}/":        (401, 404, 200, 200, 200, 200),
    f"GET {C}/snapshots/{{number}}/qrels":                  (401, 404, 403, 200, 200, 200),
    f"GET {C}/agreement/":                                  (401, 404, 403, 200, 200, 200),
    f"GET {C}/runs/":                                       (401, 404, 200, 200, 200, 200),
    f"POST {C}/runs/":                                      (401, 404, 403, 201, 201, 201),
    f"GET {C}/runs/{{name}}/":                              (401, 404, 200, 200, 200, 200),
    f"GET {C}/runs/{{name}}/diagnosis/":                    (401, 404, 200, 200, 200, 200),
    f"GET {C}/mappings/":                                   (401, 404, 200, 200, 200, 200),
    f"POST {C}/mappings/":                                  (401, 404, 403, 202, 202, 202),
    f"GET {C}/mappings/{{number}}/":                        (401, 404, 200, 200, 200, 200),
    f"GET {C}/evaluations/":                                (401, 404, 200, 200, 200, 200),
    f"POST {C}/evaluations/":                               (401, 404, 403, 201, 201, 201),
    f"GET {C}/evaluations/{{id}}/":                         (401, 404, 200, 200, 200, 200),
    f"GET {C}/evaluations/{{id}}/queries/":                 (401, 404, 200, 200, 200, 200),
    f"GET {C}/evaluations/{{id}}/report/":                  (401, 404, 200, 200, 200, 200),
    f"GET {C}/compare/":                                    (401, 404, 200, 200, 200, 200),
    f"POST {C}/compare/focus/":                             (401, 404, 403, 200, 200, 200),
    f"POST {C}/runs/{{name}}/diagnosis/":                   (401, 404, 403, 202, 202, 202),
    f"POST {C}/snapshots/{{number}}/exports/":              (401, 404, 403, 202, 202, 202),
    f"POST {C}/imports/":                                   (401, 404, 403, 403, 202, 202),
    f"GET {C}/judges/{{judge}}/proposals/":                 (401, 404, 200, 200, 200, 200),
    f"POST {C}/judges/{{judge}}/proposals/":                (401, 404, 403, 202, 202, 202),
    f"GET {C}/judges/{{judge}}/calibration/":               (401, 404, 200, 200, 200, 200),
    # A job: seen by its author and its collection's members; retried and downloaded by
    # its author (here the evaluator) or a superuser.
    # A job needs, now, the role its kind needs (evaluator): a reviewer is not let in.
    "GET /api/jobs/{id}/":                                  (401, 404, 404, 200, 200, 200),
    "POST /api/jobs/{id}/retry/":                           (401, 404, 404, 202, 403, 202),
    "GET /api/jobs/{id}/file":                              (401, 404, 404, 200, 403, 200),
    # The job is failed: its author and a superuser may cancel, but it has ended (409).
    "POST /api/jobs/{id}/cancel/":                          (401, 404, 404, 409, 403, 409),
    # API tokens: each caller sees and revokes their own only (here the evaluator's).
    "GET /api/tokens/":                                     (401, 200, 200, 200, 200, 200),
    "GET /api/tokens/{id}/":                                (401, 404, 404, 200, 404, 404),
    "DELETE /api/tokens/{id}/":                             (401, 404, 404, 200, 404, 404),
}
# fmt: on


def path_values(path: str, world: World) -> dict[str, Any]:
    """A real object for each path parameter of ``path``."""
    collection_part = path.split("{slug}/", 1)[-1].split("/", 1)[0]
    ids = {
        "judgments": world.judgment.pk,
        "tasks": world.task.pk,
        "evaluations": world.evaluation.pk,
    }
    if path.startswith("/api/jobs/"):
        collection_part = "jobs"
        ids["jobs"] = world.export_job.pk if path.endswith("/file") else world.job.pk
    if path.startswith("/api/tokens/"):
        collection_part = "tokens"
        ids["tokens"] = ApiToken.objects.get(key_hash=hash_key(world.tokens["evaluator"])).pk
    numbers = {"snapshots": world.v1.number, "mappings": world.mapping.number}
    return {
        "slug": world.slug,
        "qid": "C",
        "item_id": "x",
        "username": "reviewer",
        "name": world.run.name,
        "judge": "local-baseline",
        "other": world.v2.number,
        "id": ids.get(collection_part),
        "number": numbers.get(collection_part),
    }


def run_file(name: str = "upload.trec") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (RECALL_EXAMPLE / "run.trec").read_bytes())


def body_for(operation: str, world: World, user: Any) -> dict[str, Any]:
    """What a successful request of ``operation`` sends: data, format, headers."""
    method, path = operation.split(" ", 1)
    tail = path.removeprefix(C)
    if method == "PATCH" and tail == "/":
        return {"data": {"guidelines": "Read the whole passage first."}}
    if tail == "/members/":
        return {"data": {"username": "newbie", "role": "reviewer"}} if method == "POST" else {}
    if tail == "/members/{username}/" and method == "PATCH":
        return {"data": {"role": "evaluator"}}
    if tail == "/queries/{qid}/" and method == "PATCH":
        return {"data": {"status": "unreviewed"}}
    if tail == "/judgments/" and method == "POST":
        return {"data": {"query": "C", "item": "y", "grade": 0}}
    if tail == "/judgments/{id}/" and method in ("PATCH", "DELETE"):
        data = {"grade": 1} if method == "PATCH" else None
        return {"data": data, "HTTP_IF_MATCH": f'"{world.judgment.version}"'}
    if tail == "/tasks/{id}/skip/":
        if user is not None:  # one must hold a task to give it back
            claim_next_task(reviewer=user, collection=world.collection)
        return {}
    if tail == "/tasks/{id}/judge/":
        return {"data": {"grade": 0}}
    if tail == "/snapshots/" and method == "POST":
        return {"data": {"note": "v3"}}
    if tail == "/runs/" and method == "POST":
        return {"data": {"file": run_file(), "name": "uploaded"}, "format": "multipart"}
    if tail == "/mappings/" and method == "POST":
        upload = SimpleUploadedFile("more.tsv", b"b#1\tb\n")
        return {"data": {"file": upload, "note": "more chunks"}, "format": "multipart"}
    if tail == "/evaluations/" and method == "POST":
        return {"data": {"run": world.run.name, "snapshot": world.v1.number, "ks": [3]}}
    if tail == "/imports/":
        bundle = SimpleUploadedFile("more.jsonl", b'{"type": "query", "id": "D", "text": "d"}\n')
        return {"data": {"bundle": bundle}, "format": "multipart"}
    if tail in ("/compare/", "/compare/focus/"):
        return {"data": {"a": world.evaluation.pk, "b": world.other_evaluation.pk}}
    return {}


def call(client: Any, operation: str, world: World, user: Any) -> Any:
    method, path = operation.split(" ", 1)
    url = path.format(**path_values(path, world))
    kwargs = body_for(operation, world, user)
    if method in ("POST", "PATCH") and "format" not in kwargs:
        kwargs["format"] = "json"
    response = getattr(client, method.lower())(url, **kwargs)
    if getattr(response, "streaming", False):
        b"".join(response.streaming_content)
    return response


@pytest.mark.parametrize("operation", SCHEMA_OPERATIONS)
def test_each_role_gets_the_status_the_table_says(operation, api_world, api_client):
    if operation not in MATRIX:
        pytest.fail(
            f"{operation} is in the API schema but not in MATRIX (tests/api/"
            "test_permissions.py): add a row saying what each role must get, and a request "
            "body in body_for() if it needs one."
        )
    expected = dict(zip(ROLES, MATRIX[operation], strict=True))
    got: dict[str, tuple[int, str]] = {}
    for role in ROLES:
        with transaction.atomic():
            user = api_world.users.get(role)
            response = call(api_client(role), operation, api_world, user)
            body = getattr(response, "content", b"")[:300].decode("utf-8", "replace")
            got[role] = (response.status_code, body)
            transaction.set_rollback(True)
    wrong = [
        f"  {role:<10} expected {expected[role]}, got {status}: {body}"
        for role, (status, body) in got.items()
        if status != expected[role]
    ]
    assert not wrong, f"{operation}\n" + "\n".join(wrong)
    if expected["anonymous"] == 401:
        assert got["anonymous"][1].startswith('{"detail":')


def test_every_row_of_the_table_is_an_operation_of_the_schema():
    stale = sorted(set(MATRIX) - set(SCHEMA_OPERATIONS))
    assert not stale, f"rows for operations the schema no longer has: {stale}"


def test_the_table_covers_every_role_of_the_design(api_world):
    # The callers the design knows: no login, a user of no membership here, each
    # membership role of the model (weakest first, as the table's columns), a superuser.
    members = sorted(Role.values, key=lambda r: ROLE_RANK[r])
    assert ("anonymous", "stranger", *members, "superuser") == ROLES
    collection = Collection.objects.get(slug=api_world.slug)
    for role in members:
        assert role_of(api_world.users[role], collection) == role
    assert role_of(api_world.users["stranger"], collection) is None
    assert api_world.users["superuser"].is_superuser


def role_of(user, collection):
    membership = Membership.objects.filter(user=user, collection=collection).first()
    return membership.role if membership else None
