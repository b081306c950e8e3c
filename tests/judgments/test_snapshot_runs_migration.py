"""Migration 0023: the versions holding a block, one membership row each before, become
the block's run ``[first_number, end_number)``; every version holds the same blocks
after it, and going back writes the same membership rows again."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from judgments.models import Snapshot, SnapshotJudgment, SnapshotQuery

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("judgments", "0022_pooling_strategies")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets or executor.loader.graph.leaf_nodes())
    return executor.loader.project_state(targets).apps if targets else None


def _versions(old, holds: dict[str, list[int]]):
    """Three versions of a collection of q1..q3 and the blocks named in ``holds`` (``b1``
    a block of q1, ``b2x`` another of q2...) held by the versions listed; one judgment
    row per block, its grade the block's number."""
    collection = old.get_model("judgments", "Collection").objects.create(
        slug="runs", name="Runs", scale=[{"grade": 0, "name": "no"}], relevant_grade=0
    )
    Query = old.get_model("judgments", "Query")
    queries = {
        f"q{n}": Query.objects.create(collection=collection, external_id=f"q{n}", text="t")
        for n in (1, 2, 3)
    }
    item = old.get_model("judgments", "Item").objects.create(collection=collection, external_id="d")
    snapshots = {
        n: old.get_model("judgments", "Snapshot").objects.create(
            collection=collection,
            number=n,
            content_hash=f"{n:064d}",
            scale=collection.scale,
            relevant_grade=0,
            unit="document",
            n_queries=0,
            n_judgments=0,
            n_unjudged=0,
        )
        for n in (1, 2, 3)
    }
    blocks = {}
    for grade, (name, numbers) in enumerate(holds.items()):
        block = old.get_model("judgments", "SnapshotQuery").objects.create(
            frozen_in=snapshots[numbers[0]], query=queries[f"q{name[1]}"], status="unreviewed"
        )
        old.get_model("judgments", "SnapshotJudgment").objects.create(
            block=block, query=block.query, item=item, grade=grade
        )
        for n in numbers:
            old.get_model("judgments", "SnapshotMember").objects.create(
                snapshot=snapshots[n], query=block.query, block=block
            )
        blocks[name] = block.pk
    return {n: s.pk for n, s in snapshots.items()}, blocks


def _members(old) -> list[tuple[int, int, int]]:
    return sorted(
        old.get_model("judgments", "SnapshotMember").objects.values_list(
            "snapshot_id", "query_id", "block_id"
        )
    )


def test_members_become_runs_and_back():
    old = _migrate(BEFORE)
    holds = {"b1": [1, 2, 3], "b2": [1], "b2x": [2, 3], "b3": [1, 2]}
    snapshots, blocks = _versions(old, holds)
    members = _members(old)

    _migrate(None)

    runs = {
        name: SnapshotQuery.objects.values_list("first_number", "end_number").get(pk=pk)
        for name, pk in blocks.items()
    }
    # q1's block runs on; q2's first ended at v2, its second runs on; q3 went at v3.
    assert runs == {"b1": (1, None), "b2": (1, 2), "b2x": (2, None), "b3": (1, 3)}
    for n, pk in snapshots.items():
        held = {name for name, numbers in holds.items() if n in numbers}
        snapshot = Snapshot.objects.get(pk=pk)
        assert set(SnapshotQuery.objects.of(snapshot).values_list("pk", flat=True)) == {
            blocks[name] for name in held
        }
        grades = SnapshotJudgment.objects.of(pk).values_list("grade", flat=True)
        assert sorted(grades) == sorted(list(holds).index(name) for name in held)

    old = _migrate(BEFORE)
    assert _members(old) == members
    _migrate(None)


def test_a_block_held_by_versions_apart_stops_the_migration():
    old = _migrate(BEFORE)
    _versions(old, {"b1": [1, 3], "b2": [1, 2, 3]})

    with pytest.raises(RuntimeError, match="1 snapshot query blocks are held by versions"):
        _migrate(None)

    with connection.cursor() as cursor:  # (on PostgreSQL a trigger refuses a DELETE)
        for table in ("snapshotmember", "snapshotjudgment", "snapshotquery"):
            if connection.vendor == "postgresql":
                cursor.execute(f"TRUNCATE judgments_{table}")
            else:
                cursor.execute(f"DELETE FROM judgments_{table}")
    _migrate(None)
    assert not SnapshotQuery.objects.exists()
