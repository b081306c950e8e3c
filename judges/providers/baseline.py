"""The offline baseline judge: static word embeddings shipped inside a PyPI package.

``wordllama`` ships its default model (``l2_supercat``, 256 dimensions, 16 MB of
safetensors, with its tokenizer) inside the wheel, and runs on numpy: no network, no
PyTorch, no GPU. The judge embeds the query and the item's title and text, takes their
cosine similarity, and turns it into a grade by cut points:

- fitted to the collection's people: the cut points are the quantiles of the judged
  pairs' similarities that give each grade the share people gave it (quantile
  matching: it uses the grades' shares, not which pair got which grade);
- with fewer than ``MIN_REFERENCE`` judged pairs: equal shares over the pairs it judges.

It is a floor to compare model judges with, not a judge to trust: the calibration report
says how far it agrees with people on each collection.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from . import Outcome, PairText

MODEL = "wordllama l2_supercat 256-d (bundled)"
METHOD = (
    "baseline-v1: cosine similarity of wordllama l2_supercat 256-d static embeddings of "
    "the query and of the item's text; grades by cut points matched to the shares of "
    "people's grades (equal shares when fewer than 10 judged pairs)"
)
MIN_REFERENCE = 10


@lru_cache(maxsize=1)
def _model() -> Any:
    from pathlib import Path

    import wordllama

    # The package's own folder holds weights/ and tokenizers/; naming it as the cache
    # makes load() find both there and never try to download.
    return wordllama.WordLlama.load(
        cache_dir=Path(wordllama.__file__).parent, disable_download=True
    )


def similarities(queries: Sequence[str], passages: Sequence[str]) -> list[float]:
    """Cosine similarity of each query with its passage."""
    import numpy as np

    if not queries:
        return []
    model = _model()
    q = model.embed(list(queries), norm=True)
    p = model.embed(list(passages), norm=True)
    return [float(x) for x in np.sum(q * p, axis=1)]


def cut_points(
    grades: Sequence[int], reference: Sequence[tuple[float, int]], own: Sequence[float]
) -> tuple[list[float], str]:
    """One cut point per grade above the lowest: a similarity at or above ``cuts[i]``
    earns at least ``grades[i + 1]``. ``reference`` is (similarity, people's grade)."""
    import numpy as np

    if len(reference) >= MIN_REFERENCE:
        scores = np.array([s for s, _ in reference])
        shares = np.array([sum(1 for _, g in reference if g == grade) for grade in grades])
        below = np.cumsum(shares)[:-1] / len(reference)
        how = f"matched to the shares of {len(reference)} judged pairs"
    else:
        scores = np.array(own if own else [0.0])
        below = np.arange(1, len(grades)) / len(grades)
        how = "equal shares (too few judged pairs to fit)"
    return [float(x) for x in np.quantile(scores, below)], how


class BaselineJudge:
    def __init__(self, grades: Sequence[int], reference: Sequence[tuple[PairText, int]]) -> None:
        self.grades = sorted(grades)
        self.reference = list(reference)
        self.cuts: list[float] = []

    def judge(
        self, pairs: Sequence[PairText], *, done: Callable[[Outcome], None] = lambda o: None
    ) -> list[Outcome]:
        ref = similarities(
            [p.query for p, _ in self.reference], [p.passage for p, _ in self.reference]
        )
        own = similarities([p.query for p in pairs], [p.passage for p in pairs])
        self.cuts, how = cut_points(
            self.grades, list(zip(ref, [g for _, g in self.reference], strict=True)), own
        )
        outcomes = []
        for pair, score in zip(pairs, own, strict=True):
            grade = self.grades[sum(score >= c for c in self.cuts)]
            outcome = Outcome(
                pair=pair,
                grade=grade,
                rationale=f"cosine similarity {score:.3f}; grade {grade} by cut points "
                f"{', '.join(f'{c:.3f}' for c in self.cuts)} ({how})",
                raw=json.dumps({"similarity": round(score, 6), "cuts": self.cuts}),
                attempts=1,
            )
            outcomes.append(outcome)
            done(outcome)
        return outcomes
