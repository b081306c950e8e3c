"""All or nothing under a crash: a collection import and a freeze that fail after they
have started writing leave no row behind, and the next attempt succeeds.

The failure is injected by patching one database call of the service (tests/failures.py);
the same tests run on SQLite and, in CI's second pass, on PostgreSQL.
"""

from __future__ import annotations

import importlib

import pytest

from judgments.models import (
    Collection,
    Item,
    Judgment,
    JudgmentChange,
    Query,
    Snapshot,
    SnapshotJudgment,
    SnapshotQuery,
    SnapshotUnjudged,
)
from judgments.services import freeze_snapshot, queue_unjudged
from tests.failures import assert_all_or_nothing

from .conftest import RECALL_EXAMPLE

snapshot_blocks = importlib.import_module("judgments.services.snapshot_blocks")
import_writes = importlib.import_module("judgments.services.import_writes")


@pytest.mark.parametrize(
    ("target", "name", "after"),
    [
        (Query.objects, "bulk_create", 0),  # the collection and its items are written
        (JudgmentChange.objects, "bulk_create", 0),  # ... and the queries and judgments
    ],
    ids=["at-queries", "at-judgment-history"],
)
def test_a_collection_import_that_fails_midway_leaves_nothing(
    db, run_command, monkeypatch, target, name, after
):
    assert_all_or_nothing(
        monkeypatch,
        target,
        name,
        lambda: run_command("import_collection", RECALL_EXAMPLE / "bundle.jsonl"),
        after=after,
    )

    # By hand from the bundle: 1 collection, 7 items, 3 queries, 8 judgments, 8 history rows.
    assert Collection.objects.filter(slug="recall-example").count() == 1
    assert (Item.objects.count(), Query.objects.count(), Judgment.objects.count()) == (7, 3, 8)
    assert JudgmentChange.objects.count() == 8


# The freeze's set-based writes, in order: the judgments of its new query blocks (written
# just before), their unjudged markers, the version's memberships.
@pytest.mark.parametrize("after", [0, 1, 2], ids=["at-judgments", "at-unjudged", "at-members"])
def test_a_freeze_that_fails_midway_leaves_nothing(db, run_command, monkeypatch, after):
    run_command("import_collection", RECALL_EXAMPLE / "bundle.jsonl")
    collection = Collection.objects.get(slug="recall-example")
    c_query = Query.objects.get(collection=collection, external_id="C")
    y = Item.objects.get(collection=collection, external_id="y")
    queue_unjudged(collection=collection, pairs=[(c_query.pk, y.pk, 2)], source="run r")

    snapshot, created = assert_all_or_nothing(
        monkeypatch,
        snapshot_blocks,
        "_execute",
        lambda: freeze_snapshot(collection=collection, by=None),
        after=after,
    )

    assert created and snapshot.number == 1 and Snapshot.objects.count() == 1
    assert SnapshotQuery.objects.of(snapshot).count() == 3
    assert SnapshotJudgment.objects.of(snapshot).count() == 8
    assert SnapshotUnjudged.objects.of(snapshot).count() == 1


def test_an_import_that_fails_while_queueing_unjudged_pairs_leaves_nothing(
    db, run_command, monkeypatch, write_file
):
    run_command("import_collection", RECALL_EXAMPLE / "bundle.jsonl")
    # Qrels with a judgment and a pooled-but-unjudged pair (grade -1) for C.
    qrels = write_file("more.qrels", "C 0 a 0\nC 0 y -1\n")

    assert_all_or_nothing(
        monkeypatch,
        import_writes,
        "queue_unjudged",
        lambda: run_command("import_collection", "--collection", "recall-example",
                            "--qrels", qrels),
    )  # fmt: skip

    assert Judgment.objects.count() == 9
    assert Judgment.objects.filter(query__external_id="C", item__external_id="a").exists()
