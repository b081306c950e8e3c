"""Adaptive pooling in the app (issue 28): the queue serves what ``pool_strategies``'
replay serves, judgment by judgment, through ``import_run``, ``claim_next_task`` and
``judge_task``; a depth collection keeps no arms; urgent tasks are never lowered."""

from __future__ import annotations

import pytest
from django.db import connection

from judgments.models import Assessment, Item, PoolArm, ReviewTask, TaskStatus
from judgments.pool_strategies import FLOOR_BASE, HEAD_BASE, Strategy, replay
from judgments.services import (
    InvariantError,
    assess_task,
    claim_next_task,
    judge_task,
    queue_unjudged,
    update_collection_settings,
)
from judgments.services.pooling import URGENT_PRIORITY
from scoring.services import import_run
from tests.factories import BINARY_SCALE, make_collection, make_item, make_query, make_user

pytestmark = pytest.mark.django_db

TWO_RUNS = [["a1", "a2", "a3", "a4"], ["b1", "b2", "b3", "b4"]]
TWO_RELEVANT = {"a1", "a3", "a4", "b2", "b3", "b4"}
SHARED = [["s", "a2", "x"], ["s", "b2", "x"], ["c1", "c2"]]


def adaptive(strategy: str = "depth", floor: int = 0, **settings):
    collection = make_collection(scale=BINARY_SCALE, relevant_grade=1, pool_depth=10)
    update_collection_settings(
        collection=collection, pool_strategy=strategy, pool_floor=floor, **settings
    )
    return collection


def import_runs(collection, tmp_path, runs, *, query="q1", pool_strategy=None):
    """Items made in pooling order (run by run, rank by rank), so that the tasks' ids,
    the queue's tie order, are the replay's."""
    if not collection.queries.filter(external_id=query).exists():
        make_query(collection, external_id=query)
    for ranking in runs:
        for item in ranking:
            if not Item.objects.filter(collection=collection, external_id=item).exists():
                make_item(collection, external_id=item)
    for n, ranking in enumerate(runs):
        path = tmp_path / f"run{n}.txt"
        path.write_text(
            "".join(f"{query} Q0 {d} {r} {100 - r} r{n}\n" for r, d in enumerate(ranking, 1))
        )
        import_run(collection=collection, path=path, name=f"r{n}", pool_strategy=pool_strategy)


def serve_all(collection, relevant, reviewer=None):
    reviewer = reviewer or make_user()
    served = []
    while (task := claim_next_task(reviewer=reviewer, collection=collection)) is not None:
        item = task.item.external_id
        served.append(item)
        judge_task(task=task, reviewer=reviewer, grade=int(item in relevant))
    return served


@pytest.mark.parametrize(
    "spec", ["depth", "mtf", "bandit", "depth 1 + bandit", "depth 1 + mtf", "depth 2 + bandit"]
)
@pytest.mark.parametrize("runs, relevant", [(TWO_RUNS, TWO_RELEVANT), (SHARED, {"s", "c2"})])
def test_the_queue_serves_the_replays_order(spec, runs, relevant, tmp_path):
    strategy = Strategy.parse(spec)
    collection = adaptive(strategy.name, strategy.floor)
    import_runs(collection, tmp_path, runs)
    expected = replay(strategy, runs, {i: True for i in relevant})
    assert serve_all(collection, relevant) == expected
    arms = PoolArm.objects.filter(collection=collection)
    assert arms.count() == (0 if spec == "depth" else len(runs))
    assert all(a.head_id is None and a.judged == len(a.tasks) for a in arms)


def test_a_depth_collection_keeps_no_arms_and_its_order(tmp_path):
    collection = adaptive("depth")
    import_runs(collection, tmp_path, TWO_RUNS)
    assert serve_all(collection, TWO_RELEVANT) == ["a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4"]
    assert not PoolArm.objects.exists()


def test_arms_count_the_judgments_made_before_the_run(tmp_path):
    collection = adaptive("bandit")
    import_runs(collection, tmp_path, [["a1", "a2"]])
    reviewer = make_user()
    task = claim_next_task(reviewer=reviewer, collection=collection)
    judge_task(task=task, reviewer=reviewer, grade=1)  # a1 relevant
    path = tmp_path / "late.txt"
    path.write_text("q1 Q0 a1 1 9 late\nq1 Q0 b9 2 8 late\n")
    import_run(collection=collection, path=path, name="late")
    late = PoolArm.objects.get(label="run late")
    # a1 was judged relevant before: the arm starts at 2/3, its list is b9 alone.
    assert (late.judged, late.relevant, len(late.tasks)) == (1, 1, 1)
    head = ReviewTask.objects.get(pk=late.head_id)
    assert head.item.external_id == "b9" and head.priority == HEAD_BASE + late.score


def test_an_urgent_task_is_never_lowered(tmp_path):
    collection = adaptive("bandit", 1)
    import_runs(collection, tmp_path, TWO_RUNS)
    urgent = ReviewTask.objects.get(item__external_id="b2")
    ReviewTask.objects.filter(pk=urgent.pk).update(priority=URGENT_PRIORITY + 7)
    served = serve_all(collection, TWO_RELEVANT)
    assert served[0] == "b2"
    assert ReviewTask.objects.get(pk=urgent.pk).priority == URGENT_PRIORITY + 7
    # Pooling the same pairs again (another run) keeps it too.
    assert sorted(served) == sorted(i for run in TWO_RUNS for i in run)


def test_floor_tasks_come_before_every_head(tmp_path):
    collection = adaptive("mtf", 2)
    import_runs(collection, tmp_path, TWO_RUNS)
    floor = ReviewTask.objects.filter(priority__gte=FLOOR_BASE)
    assert sorted(floor.values_list("item__external_id", flat=True)) == ["a1", "a2", "b1", "b2"]


def test_an_adaptive_run_needs_an_adaptive_collection(tmp_path):
    collection = adaptive("depth")
    with pytest.raises(InvariantError, match="pools by depth; set its pool_strategy"):
        import_runs(collection, tmp_path, TWO_RUNS, pool_strategy="bandit")
    with pytest.raises(InvariantError, match="not one of depth, mtf, bandit"):
        import_runs(collection, tmp_path, TWO_RUNS, pool_strategy="greedy")


def test_a_run_may_use_another_strategy_than_its_collection(tmp_path):
    collection = adaptive("bandit")
    import_runs(collection, tmp_path, TWO_RUNS, pool_strategy="depth 1 + mtf")
    assert set(PoolArm.objects.values_list("strategy", flat=True)) == {"mtf"}
    expected = replay(Strategy.parse("depth 1 + mtf"), TWO_RUNS, dict.fromkeys(TWO_RELEVANT, True))
    assert serve_all(collection, TWO_RELEVANT) == expected


def test_back_to_depth_gives_the_depth_order_again(tmp_path):
    collection = adaptive("bandit", 1)
    import_runs(collection, tmp_path, TWO_RUNS)
    update_collection_settings(collection=collection, pool_strategy="depth")
    assert not PoolArm.objects.exists()
    assert collection.pool_floor == 0
    assert serve_all(collection, TWO_RELEVANT) == ["a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4"]


def test_settings_refuse_a_floor_without_an_adaptive_strategy():
    collection = adaptive("depth")
    with pytest.raises(InvariantError, match="goes with mtf or bandit"):
        update_collection_settings(collection=collection, pool_floor=3)
    with pytest.raises(InvariantError, match="unknown pooling strategy"):
        update_collection_settings(collection=collection, pool_strategy="greedy")


def test_several_assessors_each_assess_every_pair_once(tmp_path):
    collection = adaptive("bandit", 1, assessors_per_item=2, resolution_policy="majority")
    import_runs(collection, tmp_path, SHARED)
    ana, ben = make_user("ana"), make_user("ben")
    pooled = {i for run in SHARED for i in run}
    turns = {ana: [], ben: []}
    while True:
        progressed = False
        for reviewer in (ana, ben):
            task = claim_next_task(reviewer=reviewer, collection=collection)
            if task is None:
                continue
            progressed = True
            item = task.item.external_id
            turns[reviewer].append((item, task.slot))
            assess_task(task=task, reviewer=reviewer, grade=int(item in {"s", "c2"}))
        if not progressed:
            break
    for reviewer in (ana, ben):
        items = [item for item, _ in turns[reviewer]]
        assert sorted(items) == sorted(pooled)  # every pair, never twice by one assessor
    assert Assessment.objects.count() == 2 * len(pooled)
    assert not ReviewTask.objects.exclude(status=TaskStatus.DONE).exists()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="statement counts are PG's")
def test_a_bandit_judgment_costs_two_statements_more(tmp_path, django_assert_num_queries):
    collection = adaptive("bandit")
    import_runs(collection, tmp_path, SHARED)
    reviewer = make_user()
    task = claim_next_task(reviewer=reviewer, collection=collection)
    # lock-and-read, write (as depth), the runs of the pair, their rows and heads.
    with django_assert_num_queries(4 + 2):  # and the savepoint pair of the atomic block
        judge_task(task=task, reviewer=reviewer, grade=1, collection=collection)


def test_a_head_completed_by_an_import_moves_on_at_the_next_judgment(tmp_path):
    collection = adaptive("bandit")
    import_runs(collection, tmp_path, SHARED)
    reviewer = make_user()
    judge_task(
        task=claim_next_task(reviewer=reviewer, collection=collection), reviewer=reviewer, grade=1
    )
    run_a = PoolArm.objects.get(label="run r0")
    assert ReviewTask.objects.get(pk=run_a.head_id).item.external_id == "a2"
    # A qrels import completes a2's task without telling the runs (set-based writes).
    ReviewTask.objects.filter(item__external_id="a2").update(status=TaskStatus.DONE)
    x = ReviewTask.objects.get(item__external_id="x")
    judge_task(task=x, reviewer=reviewer, grade=0)
    run_a.refresh_from_db()
    assert (run_a.head_id, run_a.position, run_a.judged) == (None, 3, 2)


def test_a_floor_task_a_later_run_pools_again_counts_its_new_source(tmp_path):
    # depth 2 + bandit: the floor is f, s (run 0) and b1, b2 (run 1). s gains run 1 as a
    # second source (rank 3, below run 1's floor): 2 x 10,000 - 2 puts it first, before f.
    runs = [["f", "s"], ["b1", "b2", "s"]]
    collection = adaptive("bandit", 2)
    import_runs(collection, tmp_path, runs)
    expected = replay(Strategy.parse("depth 2 + bandit"), runs, {"s": True})
    assert expected[:4] == ["s", "f", "b1", "b2"]
    assert serve_all(collection, {"s"}) == expected


def test_pairs_queued_by_name_join_no_run(tmp_path):
    collection = adaptive("bandit")
    import_runs(collection, tmp_path, TWO_RUNS)
    query = collection.queries.get()
    extra = make_item(collection, external_id="named")
    queue_unjudged(collection=collection, pairs=[(query.pk, extra.pk, None)], source="qrels -1")
    assert not PoolArm.objects.filter(label="qrels -1").exists()
    heads = ReviewTask.objects.filter(priority__gte=HEAD_BASE)
    assert sorted(heads.values_list("item__external_id", flat=True)) == ["a1", "b1"]


def test_the_collection_page_names_an_adaptive_strategy(client):
    from judgments.services import set_membership

    collection = adaptive("bandit", 5)
    user = make_user()
    set_membership(collection=collection, user=user, role="reviewer")
    client.force_login(user)
    page = client.get(f"/c/{collection.slug}/").content.decode()
    assert "pool depth 10, served by <code>depth 5 + bandit</code>" in page
    update_collection_settings(collection=collection, pool_strategy="depth")
    assert "served by" not in client.get(f"/c/{collection.slug}/").content.decode()
