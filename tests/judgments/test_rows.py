"""The hot statements written once per process (``judgments/rows.py``, issue 29): a
queryset compiled with stand-ins and filled per call finds what the same queryset built
with the real values finds; raw rows come back as the ORM builds them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import connection
from django.utils import timezone

from judgments.models import ApiToken, ReviewTask, TaskStatus
from judgments.rows import Columns, adapt, compiled, fill
from judgments.selectors import api_token_by_hash, member_collection
from judgments.services import create_api_token, queue_unjudged, set_membership
from tests.factories import make_collection, make_item, make_query, make_user

STAND_INS = {"collection": -9_100_000_001, "now": datetime(1970, 1, 2, 0, 0, 1, 5, tzinfo=UTC)}


def test_a_compiled_queryset_filled_per_call_finds_what_the_queryset_finds(db):
    one, two = make_collection(slug="one"), make_collection(slug="two")
    for collection, n in ((one, 3), (two, 2)):
        query = make_query(collection)
        items = [make_item(collection) for _ in range(n)]
        queue_unjudged(
            collection=collection,
            pairs=[(query.pk, i.pk, rank) for rank, i in enumerate(items, 1)],
            source="run",
        )
    now = timezone.now()
    ReviewTask.objects.filter(collection=one).update(
        status=TaskStatus.CLAIMED,
        claimed_by=make_user("ana"),
        claimed_at=now - timedelta(minutes=11),
        lease_expires_at=now - timedelta(minutes=1),
    )
    first = ReviewTask.objects.filter(collection=one).order_by("pk").first()
    ReviewTask.objects.filter(pk=first.pk).update(lease_expires_at=now + timedelta(minutes=5))

    def lapsed(collection_id, now):
        return ReviewTask.objects.filter(
            collection_id=collection_id, status=TaskStatus.CLAIMED, lease_expires_at__lte=now
        ).values_list("pk", flat=True)

    sql, template = compiled(lapsed(STAND_INS["collection"], STAND_INS["now"]), STAND_INS)
    # The ids and the time are slots; the status is a constant.
    assert sorted(slot for slot, _ in template if slot) == ["collection", "now"]
    assert [const for slot, const in template if slot is None] == [TaskStatus.CLAIMED]
    for collection, expected in ((one, 2), (two, 0)):
        with connection.cursor() as cursor:
            cursor.execute(sql, fill(template, {"collection": collection.pk, "now": adapt(now)}))
            found = sorted(pk for (pk,) in cursor.fetchall())
        assert found == sorted(lapsed(collection.pk, now)) and len(found) == expected


def test_columns_build_the_instances_the_orm_builds(db):
    collection = make_collection(slug="hot")
    ana = make_user("ana")
    set_membership(collection=collection, user=ana, role="evaluator")
    issued = create_api_token(user=ana, collection=collection)
    stored = ApiToken.objects.select_related("user", "collection").get(pk=issued.token.pk)
    found = api_token_by_hash(stored.key_hash)
    for field in ApiToken._meta.concrete_fields:
        assert getattr(found, field.attname) == getattr(stored, field.attname), field.name
    assert found.expires_at.tzinfo is not None  # aware, as the ORM gives it
    assert (found.user.username, found.user.is_active) == ("ana", True)
    assert found.collection.slug == "hot" and found.collection.pk == collection.pk
    assert api_token_by_hash("0" * 64) is None
    unlimited = api_token_by_hash(
        ApiToken.objects.get(pk=create_api_token(user=ana).token.pk).key_hash
    )
    assert unlimited.collection is None and unlimited.collection_id is None

    seen = member_collection(ana, "hot")
    assert (seen.pk, seen.held_role, seen.has_overlap) == (collection.pk, "evaluator", False)
    assert member_collection(make_user("ben"), "hot") is None  # not a member: not found
    assert member_collection(ana, "nope") is None
    assert Columns(ApiToken, "t").build([None] * len(ApiToken._meta.concrete_fields)) is None
