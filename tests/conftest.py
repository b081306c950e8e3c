"""Shared fixtures: a few named objects (STYLE.md "Tests"), and the ``postgres`` marker.

Every fixture here is requested by name; none is autouse. Anything else a test needs it
builds with the factories in ``tests/factories.py``.

``@pytest.mark.postgres`` tests need PostgreSQL's row locks. On another database they are
skipped with the reason shown in the summary, except when ``VERITY_REQUIRE_POSTGRES=1``
(set by CI for its PostgreSQL pass): then they fail, so a mis-pointed ``DATABASE_URL``
cannot turn the concurrency suite into a row of silent skips.
"""

from __future__ import annotations

import os

import pytest
from django.db import connection

from judgments.models import Collection, Item, Query
from tests.factories import BINARY_SCALE, GRADED_SCALE, make_collection, make_item, make_query

REQUIRE_POSTGRES_ENV = "VERITY_REQUIRE_POSTGRES"


def _postgres_required() -> bool:
    value = os.environ.get(REQUIRE_POSTGRES_ENV, "")
    return value.strip().lower() in {"1", "true", "yes", "on"}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # A run-time hook rather than a collection-time skip marker so that the decision
    # and its reason sit in one place; tryfirst keeps the database set-up from running
    # for a test that is going to be skipped anyway.
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
