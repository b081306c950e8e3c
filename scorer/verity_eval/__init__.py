"""Verity's scoring engine: pure Python + numpy + pyarrow; no Django, no app imports.

Stable API (the Django side and ``python -m scoring`` use only this)::

    from verity_eval import evaluate, EvalParams, read_qrels, read_run, EngineInputError

    params = EvalParams(ks=(5, 10), measures=None, rel_level=1, unjudged="nonrel",
                        dedup="error", order="score", stage=None)
    result = evaluate(qrels, rankings, params, statuses=None, evidence=None, mapping=None)
    result.status        # "ok" | "undefined" (no scorable query; aggregates are None)
    result.per_query     # {qid: {"R@10": x, "hits@10": n, "relevant": n, "weight": w, ...}}
    result.aggregates    # {"R@10": {"macro": x, "pooled": y}, "P@10": {"macro": x}, ...}
    result.counts        # {"scorable": n, "excluded": {reason: n}, "empty_ranking": n, ...}
    result.to_dict()     # the JSON shape printed by ``python -m scoring --format json``
    exclusion_reason(status, in_qrels=..., has_relevant=...)  # the scorability rule
    find_holes(qrels, rankings, ks)  # judged / unjudged items in the first k (holes.py)

Inputs: ``qrels`` is ``read_qrels(path)`` or ``{qid: {docid: grade}}``; ``rankings`` is
``read_run(path, order=..., dedup=..., stage=...)`` or ``{qid: [id, ...]}`` (best first).
``statuses`` ``{qid: "relevant"|"no_answer"|"unreviewed"}`` (or ``read_statuses(path)``);
``evidence`` ``{qid: [["a", "b"], ["c"]]}`` = (a AND b) OR c; ``mapping`` fine -> coarse id.

Errors: ``EngineInputError`` (bad data; ``.errors`` lists up to 25 messages, each naming
the file and line, what is wrong and how to fix it) and ``InvalidParameterError`` (bad
parameters) are both ``EngineError``, a ``ValueError``.

Measures (``params.py`` and ``measures.py`` give the exact definitions): ``R@k``,
``Ceiling@k``, ``AnyHit@k``, ``AllHit@k``, ``P@k``, ``nDCG@k``, ``Judged@k``,
``Evidence@k``, ``RR``, ``AP``, ``Rprec``, ``bpref``; ``score_query(ranked, gold, k)`` is the
founding text's per-query recall.

Where the engine departs from trec_eval 10 (values agree to 1e-9 otherwise):

* Averages run over *scorable* queries: those with a judgment >= rel_level (and status
  ``relevant`` when statuses are given). A scorable query missing from the run scores 0
  (as trec_eval ``-c``); a query with no relevant judgment is excluded, not averaged in
  as 0 (trec_eval averages it in when it is in the run).
* The rank column must be an integer and scores must not be NaN (trec_eval ignores the
  rank and reads anything); ``order="rank"`` refuses equal ranks in one query.
* ``Judged@k`` (ir_measures' Judged@k: judged items among the first k / k) counts an item
  graded -1 as unjudged, as trec_eval's ``unj``; under ``judged-only`` it still describes
  the list as ranked, before condensation. ``retrieved`` is trec_eval's ``num_ret`` (after
  condensation).
* ``bounds``: each label-dependent measure is computed twice, unjudged items as
  non-relevant and as relevant at grade rel_level (for a measure at k, those in the first
  k; for RR/AP/Rprec/bpref, every ranked one, which also enlarges |G|); ``low``/``high``
  are the smaller/larger value. Ceiling, Judged and Evidence are single numbers.
* Unit mapping: ids the map lacks are kept as they are; after mapping, repeats keep the
  first rank. Evidence conditions are matched against the mapped ranking, before any
  judged-only condensation.
"""

# Recorded with every stored evaluation; bump it when any number could change.
__version__ = "1.0.0"

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING

from .errors import EngineError, EngineInputError, InvalidParameterError
from .params import EvalParams
from .simple import score_query

if TYPE_CHECKING:
    from .evaluate import EvalResult, evaluate, exclusion_reason
    from .holes import Holes, find_holes, unjudged_rows
    from .readers import (
        Statuses,
        read_mapping,
        read_qrels,
        read_run,
        read_run_stages,
        read_statuses,
    )
    from .tables import Qrels, Run

# numpy and pyarrow cost ~0.3 s of imports: the names that need them are imported on
# first use (PEP 562), so that Django processes importing ``verity_eval`` for its
# parameters (forms, serializers, every management command) start without them.
_LAZY = {
    "EvalResult": "evaluate",
    "evaluate": "evaluate",
    "exclusion_reason": "evaluate",
    "Holes": "holes",
    "find_holes": "holes",
    "unjudged_rows": "holes",
    "Statuses": "readers",
    "read_mapping": "readers",
    "read_qrels": "readers",
    "read_run": "readers",
    "read_run_stages": "readers",
    "read_statuses": "readers",
    "Qrels": "tables",
    "Run": "tables",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


class _Engine(ModuleType):
    """Importing the submodule ``evaluate`` binds it on the package, over the function of
    the same name; keep ``verity_eval.evaluate`` the function, as the eager imports
    used to (whichever of the two is imported first)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "evaluate" and isinstance(value, ModuleType):
            value = value.evaluate
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Engine


__all__ = [
    "EngineError",
    "EngineInputError",
    "EvalParams",
    "EvalResult",
    "Holes",
    "InvalidParameterError",
    "Qrels",
    "Run",
    "Statuses",
    "__version__",
    "evaluate",
    "exclusion_reason",
    "find_holes",
    "read_mapping",
    "read_qrels",
    "read_run",
    "read_run_stages",
    "read_statuses",
    "score_query",
    "unjudged_rows",
]
