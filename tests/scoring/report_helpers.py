"""Shared by the report, comparison and browser tests (tests/scoring/test_reports.py,
test_comparison.py, tests/browser/test_reports.py).

* ``demo_runs``: two deterministic TREC runs over the demo collection, made from the
  bundle's own text with two bag-of-words rankers.
* ``three_stage_run``: the hand-made candidates → reranked → context run over the
  founding example, with its outcomes computed by hand beside it.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management import call_command

from judgments.models import Collection, Snapshot
from judgments.services import freeze_snapshot, set_membership

REPO = Path(__file__).resolve().parents[2]
DEMO_BUNDLE = REPO / "fixtures" / "demo" / "bundle.jsonl"
RECALL_EXAMPLE = REPO / "fixtures" / "recall-example"


def quiet(name: str, *args: object) -> str:
    out = io.StringIO()
    call_command(name, *[str(a) for a in args], stdout=out, stderr=io.StringIO())
    return out.getvalue()


# -- the demo collection and two runs over it -----------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    _WORD.findall(
        "a an and are at be can do does for from how i in is it my of on or the to what "
        "when where which who why with you your"
    )
)


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


RANKERS: dict[str, Callable[[Counter[str], Counter[str], set[str]], int]] = {
    # term counts in title and text
    "fulltext": lambda title, body, q: sum(body[t] for t in q),
    # distinct query terms present anywhere
    "overlap": lambda title, body, q: sum(1 for t in q if t in body),
    # term counts in the title only
    "titles": lambda title, body, q: sum(title[t] for t in q),
}


def demo_runs(out_dir: Path, names: tuple[str, ...] = tuple(RANKERS), depth: int = 100):
    """TREC runs, one per ranker, over every demo query; ties broken by item id, ranks
    and strictly decreasing scores written explicitly. Deterministic."""
    items: dict[str, tuple[Counter[str], Counter[str]]] = {}
    queries: dict[str, set[str]] = {}
    for line in DEMO_BUNDLE.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec["type"] == "item":
            title = _terms(rec["title"])
            items[rec["id"]] = (Counter(title), Counter(title + _terms(rec["text"])))
        elif rec["type"] == "query":
            queries[rec["id"]] = set(_terms(rec["text"]))
    paths = {}
    for name in names:
        score = RANKERS[name]
        lines = []
        for qid, q in queries.items():
            ranked = sorted(items, key=lambda i: (-score(*items[i], q), i))[:depth]
            lines += [
                f"{qid} Q0 {iid} {rank} {depth - rank + 1} {name}\n"
                for rank, iid in enumerate(ranked, start=1)
            ]
        paths[name] = out_dir / f"{name}.trec"
        paths[name].write_text("".join(lines), encoding="utf-8")
    return paths


def load_demo_collection() -> tuple[Collection, Snapshot]:
    """The demo bundle imported through the real command (its reviewers created first),
    frozen as v1."""
    users = get_user_model().objects
    for name in ("reviewer", "admin"):
        users.get_or_create(username=name)
    quiet("import_collection", DEMO_BUNDLE)
    collection = Collection.objects.get(slug="demo-handbook")
    snapshot, _ = freeze_snapshot(collection=collection, by=None, note="v1")
    return collection, snapshot


def import_and_score(collection: Collection, run_file: Path, name: str, *args: object) -> None:
    quiet("import_run", collection.slug, run_file, "--name", name, "--quiet")
    quiet("score", collection.slug, name, *args)


def member(collection: Collection, username: str, role: str):
    user, _ = get_user_model().objects.get_or_create(username=username)
    set_membership(collection=collection, user=user, role=role)
    return user


# -- a hand-made three-stage run over the founding example ----------------------------------

THREE_STAGES = [
    # A: G = {a, b, c}. a reaches context; b is reranked but cut from context; c is never
    # retrieved.
    {"query": "A", "stages": {"candidates": ["a", "x", "b", "y"], "reranked": ["x", "a", "b"],
                              "context": ["x", "a"]}},
    # B: G = {d}. d is a candidate but the reranker drops it.
    {"query": "B", "stages": {"candidates": ["x", "d", "y"], "reranked": ["x", "y"],
                              "context": ["x"]}},
    # C: G = {e}. e makes it all the way.
    {"query": "C", "stages": {"candidates": ["e", "x"], "reranked": ["e"], "context": ["e"]}},
]  # fmt: skip

#: By hand from the lists above: the last stage each relevant item reached.
THREE_STAGE_OUTCOMES = {
    ("A", "a"): "reached:context",
    ("A", "b"): "lost_after:reranked",
    ("A", "c"): "not_retrieved",
    ("B", "d"): "lost_after:candidates",
    ("C", "e"): "reached:context",
}
#: R@2 per stage, by hand (k = 2, the context budget, is the default cutoff):
#: candidates A {a}/3, B {d}/1, C {e}/1; reranked A {a}/3, B 0, C 1; context A 1/3, B 0, C 1.
THREE_STAGE_RECALL_AT_2 = {
    "candidates": {"A": 1 / 3, "B": 1.0, "C": 1.0, "macro": 7 / 9, "pooled": 3 / 5},
    "reranked": {"A": 1 / 3, "B": 0.0, "C": 1.0, "macro": 4 / 9, "pooled": 2 / 5},
    "context": {"A": 1 / 3, "B": 0.0, "C": 1.0, "macro": 4 / 9, "pooled": 2 / 5},
}


def three_stage_run(out_dir: Path) -> Path:
    target = out_dir / "pipeline.jsonl"
    target.write_text("".join(json.dumps(line) + "\n" for line in THREE_STAGES), encoding="utf-8")
    return target
