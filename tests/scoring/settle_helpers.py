"""A hand-worked comparison that is not settled, and one that is (issue 28, item 3).

Binary grades; measure P@2 only; snapshot v1 holds::

    q1: d1 = 1, d2 = 0, d3 = 1        q2: e1 = 1, e2 = 0

=====  ==================  ==================  ===========================
run    q1                  q2                  P@2 (unjudged as 0 / as 1)
=====  ==================  ==================  ===========================
A      d1, u1              e2, u3              q1 .5 / 1     q2 0 / .5
B      d2, d3              u2, e1              q1 .5 / .5    q2 .5 / 1
C      d1, d3              e1, u4              q1 1 / 1      q2 .5 / 1
D      d2, u5              e2                  q1 0 / .5     q2 0 / 0
=====  ==================  ==================  ===========================

A - B: observed (unjudged as 0) mean(0, -.5) = -.25; it could go as low as
mean(.5 - .5, 0 - 1) = -.5 and as high as mean(1 - .5, .5 - .5) = +.25: the sign could
change. The pairs: q1/u1 (A), q2/u2 (B), q2/u3 (A).
C - D: as low as mean(1 - .5, .5 - 0) = +.5 > 0: settled, C is better, whatever u4, u5 are.

Judging u1 = 1, u2 = 0, u3 = 1 and freezing v2: A = (1, .5), B = (.5, .5), so A - B on
v2 = +.25 with nothing unjudged left: settled, A is better.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import verity_eval as engine
from judgments.models import Collection
from judgments.services import freeze_snapshot, record_judgment, set_query_status
from scoring.models import Evaluation
from scoring.services import import_run, score_run_stage
from tests.factories import make_item, make_query

BINARY = [{"grade": 0, "name": "not relevant"}, {"grade": 1, "name": "relevant"}]
JUDGED = {"q1": {"d1": 1, "d2": 0, "d3": 1}, "q2": {"e1": 1, "e2": 0}}
RUNS = {
    "run-a": {"q1": ["d1", "u1"], "q2": ["e2", "u3"]},
    "run-b": {"q1": ["d2", "d3"], "q2": ["u2", "e1"]},
    "run-c": {"q1": ["d1", "d3"], "q2": ["e1", "u4"]},
    "run-d": {"q1": ["d2", "u5"], "q2": ["e2"]},
}
PARAMS = engine.EvalParams(ks=(2,), measures=("P@2",), rel_level=1)
#: What settles A vs B on v2 (A better by .25).
SETTLING_GRADES = {("q1", "u1"): 1, ("q2", "u2"): 0, ("q2", "u3"): 1}


def build(tmp_path: Path, *, by: Any = None, slug: str = "settle") -> dict[str, Any]:
    from tests.factories import make_collection

    collection = make_collection(slug=slug, name="Settle", scale=BINARY, relevant_grade=1)
    queries = {}
    for qid, grades in JUDGED.items():
        query = queries[qid] = make_query(collection, external_id=qid)
        for item_id, grade in grades.items():
            item = make_item(collection, external_id=item_id)
            record_judgment(query=query, item=item, grade=grade, reviewer=by, expected_version=None)
        set_query_status(query=query, status="relevant", by=by)
    runs = {}
    for name, lists in RUNS.items():
        path = tmp_path / f"{name}.trec"
        path.write_text(
            "".join(
                f"{qid} Q0 {item} {rank} {10 - rank} {name}\n"
                for qid, items in lists.items()
                for rank, item in enumerate(items, start=1)
            )
        )
        runs[name] = import_run(collection=collection, path=path, name=name, by=by).run
    snapshot, _ = freeze_snapshot(collection=collection, by=by)
    evaluations = {name: score(run, snapshot) for name, run in runs.items()}
    return {"collection": collection, "snapshot": snapshot, "runs": runs, "ev": evaluations}


def score(run: Any, snapshot: Any) -> Evaluation:
    stage = run.stages.get()
    evaluation, _ = score_run_stage(run=run, stage=stage, snapshot=snapshot, params=PARAMS)
    return evaluation


def judge_settling_pairs(collection: Collection, by: Any) -> None:
    from judgments.models import Item, Query

    for (qid, item_id), grade in SETTLING_GRADES.items():
        record_judgment(
            query=Query.objects.get(collection=collection, external_id=qid),
            item=Item.objects.get(collection=collection, external_id=item_id),
            grade=grade,
            reviewer=by,
            expected_version=None,
        )
