"""Models: the invariants the database itself checks, and the cheap model predicates.

Constraint tests write rows directly (bypassing the services) because the point is that
the database refuses them even when a bug or a raw write gets past the services.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from judgments.models import (
    ChangeSource,
    Collection,
    EvidenceCondition,
    Judgment,
    JudgmentChange,
    Query,
    QueryStatus,
    QueryStatusChange,
    ReviewTask,
    TaskStatus,
)
from tests.factories import make_item, make_judgment, make_query

pytestmark = pytest.mark.django_db


@contextmanager
def refused_by_database():
    """Expect an IntegrityError, inside a savepoint so the test can go on querying."""
    with pytest.raises(IntegrityError), transaction.atomic():
        yield


# -- predicates -----------------------------------------------------------------------------


def test_collection_reads_its_scale(collection_graded):
    assert collection_graded.grades == [0, 1, 2, 3]
    assert collection_graded.grade_name(3) == "perfect"
    assert collection_graded.grade_name(7) == "7"  # off-scale grades print as numbers


@pytest.mark.parametrize(
    ("grade", "relevant"),
    [(0, False), (1, False), (2, True), (3, True)],
    ids=["not-relevant", "related", "relevant", "perfect"],
)
def test_relevance_starts_at_the_relevant_grade(collection_graded, grade, relevant):
    assert collection_graded.is_relevant_grade(grade) is relevant


@pytest.mark.parametrize(
    ("status", "scorable"),
    [
        (QueryStatus.UNREVIEWED, False),
        (QueryStatus.RELEVANT, True),
        (QueryStatus.NO_ANSWER, False),
    ],
    ids=str,
)
def test_only_relevant_queries_are_scorable(status, scorable):
    assert Query(status=status).is_scorable is scorable


def test_collection_natural_key_round_trips(collection_graded):
    assert collection_graded.natural_key() == ("health-graded",)
    assert Collection.objects.get_by_natural_key("health-graded") == collection_graded


def test_evidence_condition_prints_as_dnf(query_vaccines):
    condition = EvidenceCondition(query=query_vaccines, groups=[["a", "b"], ["c"]])
    assert str(condition) == "(a AND b) OR (c)"


# -- check constraints ----------------------------------------------------------------------


def test_database_refuses_negative_grade(query_vaccines, item_cdc_faq):
    with refused_by_database():
        Judgment.objects.create(query=query_vaccines, item=item_cdc_faq, grade=-1)
    assert not Judgment.objects.exists()


def test_database_refuses_version_zero(query_vaccines, item_cdc_faq):
    with refused_by_database():
        Judgment.objects.create(query=query_vaccines, item=item_cdc_faq, grade=1, version=0)


def test_database_refuses_unknown_query_status(query_vaccines):
    with refused_by_database():
        Query.objects.filter(pk=query_vaccines.pk).update(status="maybe")
    query_vaccines.refresh_from_db()
    assert query_vaccines.status == QueryStatus.UNREVIEWED


def test_database_refuses_pool_depth_zero(collection_graded):
    with refused_by_database():
        Collection.objects.filter(pk=collection_graded.pk).update(pool_depth=0)


def _task(query, item, **fields):
    return ReviewTask.objects.create(
        collection=query.collection, query=query, item=item, source="run bm25", **fields
    )


def test_database_refuses_unknown_task_status(query_vaccines, item_cdc_faq):
    with refused_by_database():
        _task(query_vaccines, item_cdc_faq, status="skipped")


@pytest.mark.parametrize(
    ("with_reviewer", "with_lease"),
    [(False, False), (True, False), (False, True)],
    ids=["neither", "reviewer-without-lease", "lease-without-reviewer"],
)
def test_database_refuses_claimed_task_without_lease(
    query_vaccines, item_cdc_faq, reviewer_ana, with_reviewer, with_lease
):
    with refused_by_database():
        _task(
            query_vaccines,
            item_cdc_faq,
            status=TaskStatus.CLAIMED,
            claimed_by=reviewer_ana if with_reviewer else None,
            lease_expires_at=timezone.now() + timedelta(minutes=10) if with_lease else None,
        )
    assert not ReviewTask.objects.exists()


def test_claimed_task_with_reviewer_and_lease_is_accepted(
    query_vaccines, item_cdc_faq, reviewer_ana
):
    task = _task(
        query_vaccines,
        item_cdc_faq,
        status=TaskStatus.CLAIMED,
        claimed_by=reviewer_ana,
        lease_expires_at=timezone.now() + timedelta(minutes=10),
    )
    assert ReviewTask.objects.get(pk=task.pk).status == TaskStatus.CLAIMED


# -- unique constraints ---------------------------------------------------------------------


def test_one_judgment_per_pair(query_vaccines, item_cdc_faq):
    Judgment.objects.create(query=query_vaccines, item=item_cdc_faq, grade=2)
    with refused_by_database():
        Judgment.objects.create(query=query_vaccines, item=item_cdc_faq, grade=3)
    assert Judgment.objects.get().grade == 2


def test_one_review_task_per_pair(query_vaccines, item_cdc_faq):
    _task(query_vaccines, item_cdc_faq)
    with refused_by_database():
        _task(query_vaccines, item_cdc_faq)


@pytest.mark.parametrize("make", [make_query, make_item], ids=["query", "item"])
def test_external_ids_are_unique_per_collection(collection_graded, collection_binary, make):
    make(collection_graded, external_id="42")
    make(collection_binary, external_id="42")  # another collection may reuse the id
    with refused_by_database():
        make(collection_graded, external_id="42")


# -- history is append-only -----------------------------------------------------------------


@pytest.fixture
def judgment_history(query_vaccines, item_cdc_faq, reviewer_ana):
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=2, reviewer=reviewer_ana)
    return JudgmentChange.objects.get()


@pytest.fixture
def status_history(query_vaccines, reviewer_ana):
    return QueryStatusChange.objects.create(
        query=query_vaccines,
        old_status=QueryStatus.UNREVIEWED,
        new_status=QueryStatus.NO_ANSWER,
        changed_by=reviewer_ana,
        source=ChangeSource.ADMIN,
    )


@pytest.mark.parametrize("history", ["judgment_history", "status_history"])
@pytest.mark.parametrize(
    "attempt",
    [
        pytest.param(lambda row: row.save(), id="save"),
        pytest.param(lambda row: row.delete(), id="delete"),
        pytest.param(
            lambda row: type(row).objects.filter(pk=row.pk).update(source="api"),
            id="queryset-update",
        ),
        pytest.param(
            lambda row: type(row).objects.filter(pk=row.pk).delete(), id="queryset-delete"
        ),
        pytest.param(
            lambda row: type(row).objects.bulk_update([row], ["source"]), id="bulk-update"
        ),
    ],
)
def test_history_rows_are_append_only(request, history, attempt):
    row = request.getfixturevalue(history)
    before = type(row).objects.values().get(pk=row.pk)
    row.source = ChangeSource.API
    # bulk_update runs in atomic(savepoint=False), so its refusal would break the
    # test's transaction without a savepoint of our own.
    with pytest.raises(TypeError, match="append-only history"), transaction.atomic():
        attempt(row)
    assert type(row).objects.values().get(pk=row.pk) == before


@pytest.mark.postgres
@pytest.mark.parametrize("history", ["judgment_history", "status_history"])
@pytest.mark.parametrize(
    "statement",
    ["UPDATE {table} SET source = 'api' WHERE id = %s", "DELETE FROM {table} WHERE id = %s"],
    ids=["update", "delete"],
)
def test_database_refuses_raw_sql_changes_to_history(request, history, statement):
    row = request.getfixturevalue(history)
    before = type(row).objects.values().get(pk=row.pk)
    with refused_by_database(), connection.cursor() as cursor:
        cursor.execute(statement.format(table=type(row)._meta.db_table), [row.pk])
    assert type(row).objects.values().get(pk=row.pk) == before
