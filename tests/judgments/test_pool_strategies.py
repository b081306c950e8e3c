"""Pooling strategies, pure (``judgments.pool_strategies``; no database).

Each order below is worked by hand from the strategy's rule (docs/POOLING.md), written
next to the case; ties go to the item pooled first (run by run, rank by rank).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgments.pool_strategies import (
    BANDIT,
    FLOOR_BASE,
    HEAD_BASE,
    MTF,
    SCORE_SPAN,
    URGENT,
    Arm,
    Replay,
    Strategy,
    arm_score,
    observe,
    replay,
)

# Two runs of four; relevant: a1, a3, a4 and b2, b3, b4.
TWO_RUNS = [["a1", "a2", "a3", "a4"], ["b1", "b2", "b3", "b4"]]
TWO_RELEVANT = {i: True for i in ("a1", "a3", "a4", "b2", "b3", "b4")}
# A and B share their first item s (relevant); C is apart.
SHARED = [["s", "a2"], ["s", "b2"], ["c1", "c2"]]


@pytest.mark.parametrize(
    "spec, runs, relevant, expected",
    [
        # depth: 10,000 per source minus the best rank; ties by pooling order.
        ("depth", TWO_RUNS, TWO_RELEVANT, ["a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4"]),
        # s has two sources (19,999); c1 9,999 pooled before... a2, b2 and c2 all 9,998.
        ("depth", SHARED, {"s": True}, ["s", "c1", "a2", "b2", "c2"]),
        # bandit: A and B tie at 1/2, a1 pooled first. a1 rel: A 2/3. a2 non-rel: A 2/4
        # ties B's 1/2, a3 pooled before b1: a3 rel 3/5, a4 rel 4/6; A done, then B's list.
        ("bandit", TWO_RUNS, TWO_RELEVANT, ["a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4"]),
        # mtf: a1 rel moves A to the front; a2 non-rel drops A to -1, B (0) leads: b1
        # non-rel drops B to -1; A and B tie at -1 and A moved to the front later: a3, a4
        # relevant keep A in front until its list ends; then B's.
        ("mtf", TWO_RUNS, TWO_RELEVANT, ["a1", "a2", "b1", "a3", "a4", "b2", "b3", "b4"]),
        # The floor (first item of each run) first, by depth: a1 rel, b1 non-rel. bandit:
        # A 2/3 > B 1/3: a2 non-rel (A 2/4 still > 1/3), a3, a4; then B.
        ("depth 1 + bandit", TWO_RUNS, TWO_RELEVANT,
         ["a1", "b1", "a2", "a3", "a4", "b2", "b3", "b4"]),
        # mtf after the floor: A 0 (moved at 1), B -1; a2 non-rel: A -1 moved at 1 beats
        # B -1 never moved: a3, a4, then B.
        ("depth 1 + mtf", TWO_RUNS, TWO_RELEVANT,
         ["a1", "b1", "a2", "a3", "a4", "b2", "b3", "b4"]),
        # A shared judgment counts for both runs: s rel gives A and B 2/3 each (C 1/2):
        # a2 (pooled before b2) non-rel, A 2/4; B 2/3: b2 non-rel, 2/4; then C's list.
        ("bandit", SHARED, {"s": True}, ["s", "a2", "b2", "c1", "c2"]),
        ("mtf", SHARED, {"s": True}, ["s", "a2", "b2", "c1", "c2"]),
    ],
)  # fmt: skip
def test_hand_worked_orders(spec, runs, relevant, expected):
    assert replay(Strategy.parse(spec), runs, relevant) == expected


def test_maxmean_is_the_beta_1_1_posterior_mean():
    # (relevant + 1) / (judged + 2), scaled to SCORE_SPAN - 1 and floored.
    assert arm_score(BANDIT, Arm()) == (SCORE_SPAN - 1) // 2  # 1/2 before any judgment
    assert arm_score(BANDIT, Arm(judged=1, relevant=1)) == 2 * (SCORE_SPAN - 1) // 3
    assert arm_score(BANDIT, Arm(judged=3, relevant=0)) == (SCORE_SPAN - 1) // 5
    # 2/4 and 1/2 are the same mean: a genuine tie, served by pooling order.
    assert arm_score(BANDIT, Arm(judged=2, relevant=1)) == arm_score(BANDIT, Arm())


def test_mtf_ranks_misses_first_then_the_latest_move_to_front():
    fresh, moved = Arm(), observe(Arm(), relevant=True, front=7)
    missed = observe(moved, relevant=False, front=8)
    assert (moved.judged, moved.relevant, moved.front) == (1, 1, 7)
    assert missed.front == 7  # a miss does not move it
    assert arm_score(MTF, moved) > arm_score(MTF, fresh) > arm_score(MTF, missed)


def test_priority_bands_stay_below_urgent():
    from judgments.services.pooling import URGENT_PRIORITY

    assert URGENT == URGENT_PRIORITY
    assert HEAD_BASE + SCORE_SPAN <= FLOOR_BASE and FLOOR_BASE + HEAD_BASE <= URGENT


@pytest.mark.parametrize(
    "text, expected",
    [("depth", "depth"), ("MTF", "mtf"), ("bandit", "bandit"),
     ("depth 5 + bandit", "depth 5 + bandit"), ("depth3+mtf", "depth 3 + mtf")],
)  # fmt: skip
def test_strategy_names_parse(text, expected):
    assert str(Strategy.parse(text)) == expected


@pytest.mark.parametrize("text", ["greedy", "depth 5 + depth", "5 + bandit", "bandit + depth 5"])
def test_unknown_strategies_are_refused_with_the_choices(text):
    with pytest.raises(ValueError, match=r"mtf or bandit|depth, mtf, bandit"):
        Strategy.parse(text)


runs_strategy = st.lists(
    st.lists(st.sampled_from([f"d{n}" for n in range(12)]), max_size=8, unique=True),
    min_size=1,
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(
    runs=runs_strategy,
    relevant=st.sets(st.sampled_from([f"d{n}" for n in range(12)])),
    spec=st.sampled_from(["depth", "mtf", "bandit", "depth 1 + mtf", "depth 2 + bandit"]),
)
def test_every_strategy_serves_every_pooled_pair_exactly_once(runs, relevant, spec):
    served = replay(Strategy.parse(spec), runs, {i: True for i in relevant})
    assert sorted(served) == sorted({i for run in runs for i in run})
    # A floor is served first: every run's first K items before anything else.
    floor = Strategy.parse(spec).floor
    within = {i for run in runs for i in run[:floor]}
    assert set(served[: len(within)]) == within


def test_a_replay_can_be_judged_out_of_its_order():
    # A reviewer may judge any pair (e.g. from search): the heads move on all the same.
    state = Replay(Strategy.parse("bandit"), TWO_RUNS)
    state.judge("a1", False)
    state.judge("a2", False)
    assert state.next() == "b1"  # A at 1/4, B at 1/2


def test_the_module_imports_no_django():
    code = "import sys, judgments.pool_strategies; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
