"""The founding text's per-query scorer, kept as a small, strict reference."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from .errors import EngineInputError, InvalidParameterError
from .params import check_k


def score_query(ranked: Sequence[str], gold: Collection[str], k: int) -> dict[str, Any]:
    """Recall at k of one ranking against one non-empty relevance set.

    Invariants: k is a positive ``int`` (bools and floats refused); ``ranked`` has no
    duplicate ids (choose a dedup policy upstream); ``gold`` is non-empty (an empty set
    means unreviewed or no-answer, which is not scored here). Raises ``ValueError``
    subclasses otherwise.
    """
    check_k(k)
    if isinstance(ranked, str):
        raise InvalidParameterError("ranked must be a sequence of ids, not one string")
    if len(ranked) != len(set(ranked)):
        seen: set[str] = set()
        dup = next(x for x in ranked if x in seen or seen.add(x))  # type: ignore[func-returns-value]
        raise EngineInputError(
            [f"duplicate id {dup!r} in the ranking; deduplicate stable ids before scoring"]
        )
    gold_set = set(gold)
    if not gold_set:
        raise InvalidParameterError(
            "empty relevance set: a query needs reviewed, non-empty relevance labels to be "
            "scored (unreviewed and no-answer queries are excluded, not scored)"
        )
    hits = len(set(ranked[:k]) & gold_set)
    return {
        "hits": hits,
        "relevant": len(gold_set),
        "recall": hits / len(gold_set),
        "ceiling": min(k, len(gold_set)) / len(gold_set),
        "any_hit": int(hits > 0),
        "all_hit": int(hits == len(gold_set)),
    }
