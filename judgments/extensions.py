"""Hooks through which apps above ``judgments`` add to what it does, without
``judgments`` importing them (the layers in pyproject's import-linter contracts).

Each app registers in its ``AppConfig.ready()``, so every path (page, API, command,
job) sees the same hooks:

- a **label source** (the judges app): the model-made labels a collection's policy
  accepts at freeze (``Collection.model_labels`` names the judge), and the names a
  collection's policy may take;
- **queue grade listeners** (the judges app): told of each grade given in the review
  queue, inside the transaction that records it, with the posted form, so a decision
  about a shown proposal is stored with the judgment or not at all;
- a **qrels scorer** (the scoring app): scores a collection's runs against qrels given
  as data, for a judge's calibration (runs ordered under human and under model labels);
- **bundle runs** (the scoring app): a collection's runs as bundle records
  (``export_collection --runs``), and the check and the write of the run records an
  import carries, inside the import's transaction.

With nothing registered, a policy that names a judge cannot be set or frozen (the
error says why); grades are recorded as before; there is no ordering to compare.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ModelLabel:
    """A grade a collection's policy accepts from a model judge for a pair no person
    assessed: database ids for the frozen row, external ids for the canonical form."""

    query_pk: int
    item_pk: int
    qid: str
    item: str
    grade: int
    judge: str


class LabelSource(Protocol):
    def names(self, collection: Any) -> list[str]:
        """The judges a collection's policy may name."""
        ...

    def labels(self, collection: Any, judge: str) -> Iterable[ModelLabel]:
        """The labels ``judge`` adds to a freeze of ``collection``: one per pair that no
        person judged or assessed; raises ``LookupError`` naming the judges there are."""
        ...


#: (judgment, user, posted form): called inside the transaction of a queue grade.
GradeListener = Callable[[Any, Any, Mapping[str, Any]], None]
#: (collection, {"human": qrels, "model": qrels}, statuses) -> the runs scored both ways.
QrelsScorer = Callable[[Any, Mapping[str, Mapping[str, Mapping[str, int]]]], dict[str, Any]]

_label_source: list[LabelSource] = []
_grade_listeners: list[GradeListener] = []
_qrels_scorer: list[QrelsScorer] = []


def register_label_source(source: LabelSource) -> None:
    """Set the one source of model labels (again on a second ``ready()``: tests)."""
    _label_source[:] = [source]


def label_source() -> LabelSource | None:
    return _label_source[0] if _label_source else None


def register_grade_listener(listener: GradeListener) -> None:
    if listener not in _grade_listeners:
        _grade_listeners.append(listener)


def grade_recorded(judgment: Any, user: Any, posted: Mapping[str, Any]) -> None:
    """Tell every listener of a grade given in the queue; a listener that raises
    undoes the grade (the caller holds one transaction for both)."""
    for listener in _grade_listeners:
        listener(judgment, user, posted)


def register_qrels_scorer(scorer: QrelsScorer) -> None:
    _qrels_scorer[:] = [scorer]


def qrels_scorer() -> QrelsScorer | None:
    return _qrels_scorer[0] if _qrels_scorer else None


#: The names of a collection's stored runs (the scoring app): a review task's source
#: "run bm25" names a run only when one by that name is stored.
RunNames = Callable[[int], set[str]]
_run_names: list[RunNames] = []


def register_run_names(source: RunNames) -> None:
    _run_names[:] = [source]


def run_names(collection_id: int) -> set[str] | None:
    """The collection's run names, or ``None`` when no app stores runs."""
    return _run_names[0](collection_id) if _run_names else None


class BundleRuns(Protocol):
    def records(self, collection: Any) -> tuple[list[Any], list[Any]]:
        """The collection's runs as (``formats.RunRecord``s, ``formats.RankingRecord``s)."""
        ...

    def check(self, collection: Any, runs: list[Any], rankings: list[Any]) -> list[Any]:
        """Every problem (``formats.Problem``) of importing these run records."""
        ...

    def write(self, collection: Any, runs: list[Any], rankings: list[Any], by: Any) -> int:
        """Store the (checked) runs as they were, without pooling: the bundle's unjudged
        markers already say what their pooling queued. Returns the runs stored."""
        ...


_bundle_runs: list[BundleRuns] = []


def register_bundle_runs(source: BundleRuns) -> None:
    _bundle_runs[:] = [source]


def bundle_runs() -> BundleRuns | None:
    return _bundle_runs[0] if _bundle_runs else None
