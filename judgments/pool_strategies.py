"""Pooling strategies: the order in which a query's pooled pairs are served (issue 28).

Pure: no Django, no app module (the import-linter "pure" contract). The app
(``judgments.services.pool_arms``) and the replay benchmark (``bench/pooling_bench.py``)
both use these functions, so what the benchmark measures is what the queue does.

A *run* here is one run stage within one query: an *arm*, in the bandit's words. Its
pooled items, in rank order, are its list; its *head* is the first item of its list that
has no judgment yet. Every strategy turns into one integer priority per review task (higher
is served first, ties by task id, i.e. by when the pair was first pooled):

- ``depth`` (today's rule, the default): ``n_sources * 10,000 - best_rank``.
- ``mtf``, move-to-front (Cormack, Palmer and Clarke, SIGIR 1998): runs start equal; a
  judged non-relevant item lowers the priority of each run that pooled it by one; a
  judged relevant item moves each run that pooled it to the front (of the runs of equal
  priority: it keeps being served while it finds relevant items). A run's head carries
  its run's priority.
- ``bandit``, MaxMean (Losada, Parapar and Barreiro, SAC 2016 and IPM 2017): each run's
  expected reward is the mean of a Beta(1, 1) prior updated by its judged items,
  ``(relevant + 1) / (judged + 2)``; the head of the run with the highest mean is served.
- a **depth floor** for either (``depth 5 + bandit``): every run's first 5 items are
  served before any adaptive choice (in the depth rule's order), and their judgments
  count for the runs as any other.

One deviation from the papers, stated: in their simulations the run whose turn it was
gets the reward; here a judgment counts for *every* run that pooled the item, because a
reviewer may judge a pair from any run's head, from another queue or from search. The
benchmark measures this rule.

Priorities are bands below ``URGENT_PRIORITY`` (1e9, ``services.pooling``): urgent
(asked for by name) > floor > run heads > the rest, which keep the depth rule's order,
so every pooled pair is served eventually, the rest after every run's list is done.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

DEPTH, MTF, BANDIT = "depth", "mtf", "bandit"
STRATEGIES = (DEPTH, MTF, BANDIT)

SCORE_SPAN = 100_000_000  # a run's score is in [0, SCORE_SPAN)
HEAD_BASE = 300_000_000  # a run's head: HEAD_BASE + its best run's score
FLOOR_BASE = 600_000_000  # within a depth floor: FLOOR_BASE + the depth rule's priority
URGENT = 1_000_000_000  # services.pooling.URGENT_PRIORITY (a test checks they agree)
DEPTH_SPAN = 10_000  # task_priority's rank cap and per-source step

# MTF's score: (NR_CAP - non-relevant judged) * STAMPS + the front stamp; both capped.
NR_CAP = 9_999
STAMPS = 10_000

_SPEC = re.compile(r"^(?:depth\s*(?P<floor>\d+)\s*\+\s*)?(?P<name>depth|mtf|bandit)$")


@dataclass(frozen=True)
class Strategy:
    """A pooling strategy and its depth floor (0: none; only an adaptive one has one)."""

    name: str = DEPTH
    floor: int = 0

    def __post_init__(self) -> None:
        if self.name not in STRATEGIES:
            raise ValueError(
                f"unknown pooling strategy {self.name!r}; use one of {', '.join(STRATEGIES)}"
            )
        if type(self.floor) is not int or self.floor < 0:
            raise ValueError(f"depth floor {self.floor!r} must be a non-negative integer")
        if self.floor and self.name == DEPTH:
            raise ValueError("a depth floor goes with mtf or bandit, e.g. 'depth 5 + bandit'")

    @property
    def adaptive(self) -> bool:
        return self.name != DEPTH

    @classmethod
    def parse(cls, text: str) -> Strategy:
        """``depth``, ``mtf``, ``bandit``, or ``depth K + mtf|bandit`` (spaces optional)."""
        match = _SPEC.match(text.strip().lower())
        if match is None:
            raise ValueError(
                f"pooling strategy {text[:40]!r} is not one of depth, mtf, bandit, "
                "'depth K + mtf' or 'depth K + bandit' (K: every run's first K served first)"
            )
        return cls(match["name"], int(match["floor"] or 0))

    def __str__(self) -> str:
        return f"depth {self.floor} + {self.name}" if self.floor else self.name


@dataclass(frozen=True)
class Arm:
    """One run's judged counts in one query; ``front`` is MTF's stamp (0: never moved)."""

    judged: int = 0
    relevant: int = 0
    front: int = 0


def observe(arm: Arm, *, relevant: bool, front: int) -> Arm:
    """The arm after one of its items is judged; ``front`` is the stamp a relevant item
    gives (one more than the query's highest stamp: move-to-front)."""
    return replace(
        arm,
        judged=arm.judged + 1,
        relevant=arm.relevant + relevant,
        front=front if relevant else arm.front,
    )


def arm_score(name: str, arm: Arm) -> int:
    """A run's score in [0, SCORE_SPAN): the higher, the sooner its head is served.

    bandit: MaxMean's (relevant + 1) / (judged + 2), Beta(1, 1) prior, scaled and floored
    (distinct means of runs with fewer than 10,000 judged items stay distinct).
    mtf: first fewer non-relevant judged items, then the later move to the front.
    """
    if name == BANDIT:
        return (arm.relevant + 1) * (SCORE_SPAN - 1) // (arm.judged + 2)
    if name == MTF:
        misses = min(arm.judged - arm.relevant, NR_CAP)
        return (NR_CAP - misses) * STAMPS + min(arm.front, STAMPS - 1)
    raise ValueError(f"{name!r} has no run scores (depth is not adaptive)")


def depth_priority(*, best_rank: int | None, n_sources: int) -> int:
    """Today's rule: serve first what many sources surfaced, then what they ranked highest."""
    return n_sources * DEPTH_SPAN - min(best_rank or DEPTH_SPAN - 1, DEPTH_SPAN - 1)


def head_priority(scores: Iterable[int]) -> int:
    """A task that heads one or more runs: its best run's score."""
    return HEAD_BASE + max(scores)


def floor_priority(depth: int) -> int:
    """A task within a run's depth floor: before every head, in the depth rule's order."""
    return FLOOR_BASE + min(depth, HEAD_BASE - 1)


def next_head(items: Sequence[int], position: int, is_open: Callable[[int], bool]) -> int:
    """The index of the first open item at or after ``position`` (``len(items)``: none)."""
    while position < len(items) and not is_open(items[position]):
        position += 1
    return position


@dataclass
class Replay:
    """One query's pool served strategy by strategy, as a reviewer would judge it: the
    next pair is the highest priority (ties: the earlier pooled), its grade comes from
    ``relevant``. Used by the tests and the benchmark; the app keeps the same state in
    rows (``PoolArm``) and priorities (``ReviewTask.priority``).

    ``runs`` are ranked item lists, already cut to the pool depth; items are pooled (their
    tie order) run by run, rank by rank, as ``import_run`` pools each run in turn.
    """

    strategy: Strategy
    runs: Sequence[Sequence[str]]
    judged: set[str] = field(default_factory=set)
    order: dict[str, int] = field(default_factory=dict)
    arms: list[Arm] = field(default_factory=list)
    heads: list[int] = field(default_factory=list)
    _runs_of: dict[str, list[int]] = field(default_factory=dict)
    _depth: dict[str, int] = field(default_factory=dict)
    _floor: set[str] = field(default_factory=set)
    _priority: dict[str, int] = field(default_factory=dict)
    _heap: list[tuple[int, int, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        best: dict[str, int] = {}
        sources: dict[str, int] = {}
        for r, ranking in enumerate(self.runs):
            for rank, item in enumerate(ranking, 1):
                self.order.setdefault(item, len(self.order))
                self._runs_of.setdefault(item, []).append(r)
                best[item] = min(best.get(item, rank), rank)
                sources[item] = sources.get(item, 0) + 1
                if rank <= self.strategy.floor:
                    self._floor.add(item)
        for item in self.order:
            self._depth[item] = depth_priority(best_rank=best[item], n_sources=sources[item])
        self.arms = [Arm() for _ in self.runs]
        self.heads = [0 for _ in self.runs]
        for item in self.order:
            self._push(item, self._base(item))
        if self.strategy.adaptive:
            self._reprioritise(range(len(self.runs)))

    def _base(self, item: str) -> int:
        if item in self._floor:
            return floor_priority(self._depth[item])
        return self._depth[item]

    def _push(self, item: str, priority: int) -> None:
        self._priority[item] = priority
        heapq.heappush(self._heap, (-priority, self.order[item], item))

    def _reprioritise(self, runs: Iterable[int]) -> None:
        touched = set()
        for r in runs:
            self.heads[r] = next_head(self.runs[r], self.heads[r], lambda i: i not in self.judged)
            if self.heads[r] < len(self.runs[r]):
                touched.add(self.runs[r][self.heads[r]])
        for item in touched:
            scores = [
                arm_score(self.strategy.name, self.arms[r])
                for r in self._runs_of[item]
                if self.heads[r] < len(self.runs[r]) and self.runs[r][self.heads[r]] == item
            ]
            base = self._base(item)
            priority = base if base >= FLOOR_BASE else head_priority(scores)
            if priority != self._priority[item]:
                self._push(item, priority)

    def next(self) -> str | None:
        """The pair served next (not yet judged), or ``None`` when the pool is done."""
        while self._heap:
            negative, _, item = self._heap[0]
            if item in self.judged or -negative != self._priority[item]:
                heapq.heappop(self._heap)  # judged, or a stale priority
                continue
            return item
        return None

    def judge(self, item: str, relevant: bool) -> None:
        """Record ``item``'s judgment: its runs' counts change, their heads move on."""
        self.judged.add(item)
        if not self.strategy.adaptive:
            return
        front = max((a.front for a in self.arms), default=0) + 1
        runs = self._runs_of.get(item, [])
        for r in runs:
            self.arms[r] = observe(self.arms[r], relevant=relevant, front=front)
        self._reprioritise(runs)


def replay(
    strategy: Strategy, runs: Sequence[Sequence[str]], grades: Mapping[str, bool]
) -> list[str]:
    """The whole serving order of one query's pool (unlisted items: non-relevant)."""
    state = Replay(strategy, runs)
    served = []
    while (item := state.next()) is not None:
        served.append(item)
        state.judge(item, grades.get(item, False))
    return served
