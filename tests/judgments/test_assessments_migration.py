"""The migration to several assessors per item: a snapshot frozen before it keeps its
hash after it, and the live labels of a single-assessor collection still hash the same.

The data is written at migration 0008 through that state's models; the snapshot's bytes
are written out by hand here (canonical form 1, ``judgments/snapshots.py``), so the hash
is not taken from the code under test."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from judgments.models import Assessment, Collection, ReviewTask, Snapshot, SnapshotQuery
from judgments.selectors import snapshot_canonical_lines
from judgments.services import freeze_snapshot
from judgments.snapshots import content_hash

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("judgments", "0008_item_search_index")]

CANONICAL = (
    '["verity-snapshot",1]\n'
    '["collection","old","document",1,[{"grade":0,"name":"no"},{"grade":1,"name":"yes"}]]\n'
    '["query","q1","relevant",null]\n'
    '["query","q2","unreviewed",null]\n'
    '["judgment","q1","d1",1]\n'
    '["judgment","q1","d2",0]\n'
    '["unjudged","q2","d1"]\n'
)


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets or executor.loader.graph.leaf_nodes())
    return executor.loader.project_state(targets).apps if targets else None


def test_a_snapshot_frozen_before_the_migration_has_the_same_hash_after_it():
    old = _migrate(BEFORE)
    user = old.get_model("auth", "User").objects.create(username="ana")
    collection = old.get_model("judgments", "Collection").objects.create(
        slug="old",
        name="Old",
        scale=[{"grade": 0, "name": "no"}, {"grade": 1, "name": "yes"}],
        relevant_grade=1,
    )
    Query = old.get_model("judgments", "Query")
    Item = old.get_model("judgments", "Item")
    q1 = Query.objects.create(collection=collection, external_id="q1", text="a", status="relevant")
    q2 = Query.objects.create(collection=collection, external_id="q2", text="b")
    d1 = Item.objects.create(collection=collection, external_id="d1")
    d2 = Item.objects.create(collection=collection, external_id="d2")
    Judgment = old.get_model("judgments", "Judgment")
    Judgment.objects.create(query=q1, item=d1, grade=1, reviewer=user)
    Judgment.objects.create(query=q1, item=d2, grade=0)  # imported: no reviewer
    old.get_model("judgments", "ReviewTask").objects.create(
        collection=collection, query=q2, item=d1, source="run bm25"
    )
    frozen_hash = hashlib.sha256(CANONICAL.encode()).hexdigest()
    snapshot = old.get_model("judgments", "Snapshot").objects.create(
        collection=collection,
        number=1,
        content_hash=frozen_hash,
        scale=collection.scale,
        relevant_grade=1,
        unit="document",
        n_queries=2,
        n_judgments=2,
        n_unjudged=1,
    )
    for q in (q1, q2):
        old.get_model("judgments", "SnapshotQuery").objects.create(
            snapshot=snapshot, query=q, status=q.status
        )
    for item, grade in ((d1, 1), (d2, 0)):
        old.get_model("judgments", "SnapshotJudgment").objects.create(
            snapshot=snapshot, query=q1, item=item, grade=grade
        )
    old.get_model("judgments", "SnapshotUnjudged").objects.create(
        snapshot=snapshot, query=q2, item=d1
    )

    _migrate(None)

    after = Snapshot.objects.get(pk=snapshot.pk)
    # Its rows now sit in two query blocks (migration 0015), held by v1 alone.
    assert SnapshotQuery.objects.of(after).count() == 2
    assert (after.resolution_policy, after.n_assessments) == ("", 0)
    assert b"".join(snapshot_canonical_lines(after)) == CANONICAL.encode()
    assert content_hash(snapshot_canonical_lines(after)) == frozen_hash == after.content_hash
    live = Collection.objects.get(slug="old")
    assert (live.assessors_per_item, live.resolution_policy) == (1, "single")
    # Every judgment is now its reviewer's assessment ("import" when it had none) …
    assert sorted(
        Assessment.objects.values_list(
            "item__external_id", "assessor__username", "assessor_name", "grade"
        )
    ) == [("d1", "ana", "", 1), ("d2", None, "import", 0)]
    assert list(ReviewTask.objects.values_list("slot", flat=True)) == [1]
    # … and the live labels still hash to the frozen version: freezing makes nothing new.
    again, created = freeze_snapshot(collection=live, by=None)
    assert (again.number, created) == (1, False)
