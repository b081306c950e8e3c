"""Shared fixtures: a few named objects (STYLE.md "Tests"), and the ``postgres`` marker.

Every fixture here is requested by name; none is autouse. Anything else a test needs it
builds with the factories in ``tests/factories.py``.

``@pytest.mark.postgres`` tests need PostgreSQL's row locks. On another database they are
skipped with the reason shown in the summary, except when ``VERITY_REQUIRE_POSTGRES=1``
(set by CI for its PostgreSQL pass): then they fail, so a mis-pointed ``DATABASE_URL``
cannot turn the concurrency suite into a row of silent skips. ``@pytest.mark.redis``
tests (the RQ job backend) likewise need the Redis at ``VERITY_TEST_REDIS_URL`` and fail
instead of skipping under ``VERITY_REQUIRE_REDIS=1`` (set by CI).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

from judgments.models import Collection, Item, Query
from tests.factories import BINARY_SCALE, GRADED_SCALE, make_collection, make_item, make_query

REQUIRE_POSTGRES_ENV = "VERITY_REQUIRE_POSTGRES"
REQUIRE_REDIS_ENV = "VERITY_REQUIRE_REDIS"
#: The Redis the ``redis`` tests use: a database of its own, emptied by each of them.
TEST_REDIS_URL = os.environ.get("VERITY_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def _required(env: str) -> bool:
    return os.environ.get(env, "").strip().lower() in {"1", "true", "yes", "on"}


def _postgres_required() -> bool:
    return _required(REQUIRE_POSTGRES_ENV)


def _why_no_redis() -> str | None:
    import redis

    try:
        redis.Redis.from_url(TEST_REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        return (
            f"needs Redis at {TEST_REDIS_URL} (the RQ job backend) but it answers {exc}; "
            "start it with redis-server --daemonize yes"
        )
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Freezes keep each collection's canonical form as a file (``VERITY_FORM_DIR``): the
    test run's go to a folder of its own, not to ``var/forms``."""
    import tempfile
    from pathlib import Path

    from django.conf import settings

    settings.VERITY_FORM_DIR = Path(tempfile.mkdtemp(prefix="verity-test-forms-"))


def pytest_unconfigure(config: pytest.Config) -> None:
    import shutil

    from django.conf import settings

    from judgments.services import snapshot_forms

    snapshot_forms.settle()  # (forms are kept on a second thread)
    shutil.rmtree(settings.VERITY_FORM_DIR, ignore_errors=True)


def pytest_runtest_setup(item: pytest.Item) -> None:
    # A run-time hook rather than a collection-time skip marker so that the decision
    # and its reason sit in one place; tryfirst keeps the database set-up from running
    # for a test that is going to be skipped anyway.
    if item.get_closest_marker("redis") is not None:
        reason = _why_no_redis()
        if reason and _required(REQUIRE_REDIS_ENV):
            pytest.fail(f"{reason}. {REQUIRE_REDIS_ENV}=1 forbids skipping it.", pytrace=False)
        if reason:
            pytest.skip(reason)
    if item.get_closest_marker("postgres") is None:
        return
    vendor = connection.vendor  # the backend class's attribute: no connection is opened
    if vendor == "postgresql":
        return
    reason = (
        "needs PostgreSQL (row locks, triggers, concurrent connections) but the database is "
        f"{vendor}; set DATABASE_URL=postgres://USER@HOST:5432/DBNAME to run it"
    )
    if _postgres_required():
        pytest.fail(f"{reason}. {REQUIRE_POSTGRES_ENV}=1 forbids skipping it.", pytrace=False)
    pytest.skip(reason)


# -- people ---------------------------------------------------------------------------------


@pytest.fixture
def reviewer_ana(django_user_model):
    return django_user_model.objects.create_user(username="ana")


@pytest.fixture
def reviewer_ben(django_user_model):
    return django_user_model.objects.create_user(username="ben")


# -- collections ----------------------------------------------------------------------------


@pytest.fixture
def collection_graded(db) -> Collection:
    """Grades 0 not relevant, 1 related, 2 relevant, 3 perfect; relevant from 2."""
    return make_collection(
        slug="health-graded", name="Health answers", scale=GRADED_SCALE, relevant_grade=2
    )


@pytest.fixture
def collection_binary(db) -> Collection:
    """Grades 0 not relevant, 1 relevant; relevant from 1."""
    return make_collection(
        slug="health-binary", name="Health answers (binary)", scale=BINARY_SCALE, relevant_grade=1
    )


# -- a query and the items judged for it ----------------------------------------------------


@pytest.fixture
def query_vaccines(collection_graded) -> Query:
    """Unreviewed query of ``collection_graded``."""
    return make_query(
        collection_graded,
        external_id="q-vaccines",
        text="Do mRNA vaccines change a person's DNA?",
        tags=["health", "myths"],
    )


@pytest.fixture
def item_cdc_faq(collection_graded) -> Item:
    return make_item(
        collection_graded,
        external_id="cdc-mrna-faq",
        title="Myths and facts about COVID-19 vaccines",
        text="mRNA never enters the nucleus of the cell, where our DNA is kept.",
    )


@pytest.fixture
def item_who_qa(collection_graded) -> Item:
    return make_item(
        collection_graded,
        external_id="who-vaccines-qa",
        title="Vaccines and immunization: Q&A",
        text="mRNA vaccines do not alter or interact with our DNA in any way.",
    )


@pytest.fixture
def item_forum_post(collection_graded) -> Item:
    return make_item(
        collection_graded,
        external_id="forum-4411",
        title="Anyone else worried about side effects?",
        text="My arm was sore for two days after the booster.",
    )


# -- background jobs ------------------------------------------------------------------------


@pytest.fixture
def job_dir(settings, tmp_path):
    """The jobs' files and progress under the test's own ``tmp_path``."""
    root = tmp_path / "jobs"
    settings.STORAGES = {
        **settings.STORAGES,
        "jobs": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(root / "files")},
        },
    }
    settings.CACHES = {
        **settings.CACHES,
        "jobs": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(root / "progress"),
        },
    }
    settings.VERITY_JOB_DIR = root
    return root


@pytest.fixture
def jobs_inline(settings, job_dir, django_capture_on_commit_callbacks):
    """A context manager in which jobs run at once: the Tasks API's immediate backend runs
    each task when it is queued, which is when its transaction commits; here that is
    when the block ends (the test's transaction never commits)."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}

    @contextmanager
    def running() -> Iterator[Any]:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            yield callbacks

    return running


@pytest.fixture
def rq_backend(settings, job_dir):
    """The RQ backend on the test Redis (emptied first): what VERITY_JOBS_BACKEND=rq sets."""
    import redis

    redis.Redis.from_url(TEST_REDIS_URL).flushdb()
    settings.RQ_QUEUES = {"default": {"URL": TEST_REDIS_URL, "DEFAULT_TIMEOUT": 600}}
    settings.TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["default"]}}
    settings.CACHES = {
        **settings.CACHES,
        "jobs": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": TEST_REDIS_URL,
        },
    }
    return TEST_REDIS_URL


# -- single sign-on -------------------------------------------------------------------------


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory) -> Iterator[Any]:
    """A real OpenID provider in its own process, for the whole session (tests/oidc_provider).

    Never skipped: its packages (django-oauth-toolkit, cryptography) are in
    requirements-dev.txt, and a provider that does not start fails the test with its log.
    """
    from tests.oidc_provider.harness import start_provider

    provider = start_provider(tmp_path_factory.mktemp("oidc-provider"))
    yield provider
    provider.stop()
