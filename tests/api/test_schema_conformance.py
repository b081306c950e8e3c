"""The OpenAPI schema says what the API does: Schemathesis's Python API, in process.

Loads the live schema from ``/api/schema/`` of the WSGI application, generates requests
for every operation (path ids pinned to ``api_world``'s objects, so that requests reach
the code behind the 404s, as an evaluator), and checks every response: no 5xx, a status,
content type, headers and body the schema declares, and no request the schema calls
valid refused with 400 (a minimum the code enforces but the schema does not declare).
Bounded: ``VERITY_SCHEMA_EXAMPLES`` cases per operation (default 6), derandomized, so CI
runs the same cases in well under two minutes. ``-m "not schemathesis"`` skips it.
"""

from __future__ import annotations

import os
import re

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
# Where a request has no body, a schema-valid request refused with 400 is a bound on a
# parameter that the schema does not declare. A body can be refused for what no schema
# says (a run that does not exist, a grade off the collection's scale).
NO_BODY_CHECKS = [*CHECKS, positive_data_acceptance]
EXAMPLES = int(os.environ.get("VERITY_SCHEMA_EXAMPLES", "6"))


def _pins(world) -> list[tuple[str, dict[str, object]]]:
    """Path parameters by path pattern, first match wins."""
    return [
        (r"/judgments/\{id\}/", {"id": world.judgment.pk}),
        (r"/tasks/\{id\}/", {"id": world.task.pk}),
        (r"/evaluations/\{id\}/", {"id": world.evaluation.pk}),
        (r"/jobs/\{id\}/file", {"id": world.export_job.pk}),
        (r"/jobs/\{id\}/", {"id": world.job.pk}),
        (r"/snapshots/\{number\}/", {"number": world.v1.number, "other": world.v2.number}),
        (r"/mappings/\{number\}/", {"number": world.mapping.number}),
        (r"/runs/\{name\}/", {"name": world.run.name}),
        (r"/queries/\{qid\}/", {"qid": "C"}),
        (r"/items/\{item_id\}/", {"item_id": "x"}),
        (r"/members/\{username\}/", {"username": "reviewer"}),
    ]


def _path_parameters(world, operation) -> dict[str, object]:
    fixed: dict[str, object] = {"slug": world.slug}
    for pattern, values in _pins(world):
        if re.search(pattern, operation.path):
            fixed.update(values)
            break
    names = {p.name for p in operation.path_parameters}
    return {k: v for k, v in fixed.items() if k in names}


def _fixed(world, operation) -> dict[str, dict[str, object]]:
    """Parameters that name an object are pinned to one that exists, so that a refusal
    of what is left (cutoffs, seeds, page sizes) is a bound the schema must declare."""
    query = {
        "a": world.evaluation.pk,
        "b": world.other_evaluation.pk,
        "snapshot": world.v1.number,
        "mapping": world.mapping.number,
    }
    names = {p.name for p in operation.query}
    headers = {"If-Match": f'"{world.judgment.version}"'}
    return {
        "path_parameters": _path_parameters(world, operation),
        "query": {k: v for k, v in query.items() if k in names},
        "headers": {k: v for k, v in headers.items() if k in {p.name for p in operation.headers}},
    }


def _reason(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    named = [line for line in lines if line.startswith("- ")]
    return "; ".join(named) or " ".join(lines)[:300]


def _exercise(operation, strategy, headers: dict[str, str], failures: list[str]) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case):
        response = case.call(headers=headers)
        try:
            checks = CHECKS if operation.body else NO_BODY_CHECKS
            case.validate_response(response, checks=checks, headers=headers)
        except (AssertionError, BaseExceptionGroup) as exc:  # every failure: listed below
            failures.append(
                f"{operation.method.upper()} {operation.path} -> {response.status_code} "
                f"{case.query} {str(case.body)[:80]!r}: "
                f"{str(exc)[:600]}"
            )

    run()


@pytest.fixture
def wsgi_app():
    """The WSGI application, called in process inside the test's transaction: as
    Django's test client does, the connection is not closed at the end of each request
    (on PostgreSQL that would close the test's own connection)."""
    from config.wsgi import application

    def served(environ, start_response):  # closed as a WSGI server closes it: the
        result = application(environ, start_response)  # request's uploads close with it
        try:
            return [b"".join(result)]
        finally:
            result.close()

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield served
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.mark.schemathesis
def test_every_operation_answers_as_its_schema_says(api_world, wsgi_app):
    application = wsgi_app

    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    headers = {"Authorization": f"Token {api_world.tokens['evaluator']}"}
    failures: list[str] = []
    tested = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        tested += 1
        strategy = operation.as_strategy(**_fixed(api_world, operation))
        _exercise(operation, strategy, headers, failures)
    assert tested >= 40
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures)


def _schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _parameter(schema: dict, path: str, method: str, name: str) -> dict:
    return next(p for p in schema["paths"][path][method]["parameters"] if p["name"] == name)


def test_the_schema_declares_what_the_code_refuses():
    schema = _schema()
    queries, compare = "/api/collections/{slug}/queries/", "/api/collections/{slug}/compare/"
    diagnosis = "/api/collections/{slug}/runs/{name}/diagnosis/"
    judgment = "/api/collections/{slug}/judgments/{id}/"
    assert _parameter(schema, queries, "get", "page_size")["schema"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 1000,
    }
    assert _parameter(schema, queries, "get", "page")["schema"]["minimum"] == 1
    assert _parameter(schema, compare, "get", "a")["schema"]["minimum"] == 1
    assert _parameter(schema, compare, "get", "seed")["schema"]["minimum"] == 0
    assert _parameter(schema, diagnosis, "get", "k")["schema"]["maximum"] == 1_000_000
    assert _parameter(schema, diagnosis, "post", "rel")["schema"]["minimum"] == 1
    agreement = _parameter(schema, "/api/collections/{slug}/agreement/", "get", "snapshot")
    assert agreement["schema"] == {"type": "integer", "minimum": 1, "maximum": 2**31 - 1}
    for method in ("patch", "delete"):
        if_match = _parameter(schema, judgment, method, "If-Match")
        assert if_match["required"] is True and "pattern" in if_match["schema"]
        assert {"412", "428"} <= set(schema["paths"][judgment][method]["responses"])
    assert "409" in schema["paths"]["/api/collections/{slug}/"]["patch"]["responses"]
    assert set(schema["paths"]["/api/jobs/{id}/file"]["get"]["responses"]["200"]["content"]) == {
        "text/plain",
        "application/jsonl",
        "application/octet-stream",
    }


@pytest.mark.parametrize("value", ["0", "-1", "1001", "ten", "1e3", "²", " 5"])
def test_a_page_size_out_of_range_is_400_naming_it(api_world, api_client, value):
    response = api_client("reviewer").get(
        f"/api/collections/{api_world.slug}/queries/", {"page_size": value}
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == "page_size"
    assert "from 1 to 1000" in response.json()["detail"]


def test_page_sizes_within_range_are_kept(api_world, api_client):
    client = api_client("reviewer")
    for size, shown in (("1", 1), ("1000", 3)):
        response = client.get(f"/api/collections/{api_world.slug}/queries/", {"page_size": size})
        assert response.status_code == 200
        assert len(response.json()["results"]) == shown


@pytest.mark.parametrize("value", ["0", "2147483648", "99999999999999999999999", "²"])
def test_an_agreement_snapshot_out_of_range_is_400(api_world, api_client, value):
    response = api_client("evaluator").get(
        f"/api/collections/{api_world.slug}/agreement/", {"snapshot": value}
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["field"] == "snapshot"
