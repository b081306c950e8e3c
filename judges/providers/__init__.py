"""The two kinds of judge: a chat-completions server and the offline baseline. Neither
touches the database: they get the pairs' texts and give back one ``Outcome`` each, so
that their threads never hold a connection and a job writes its proposals in one
transaction at the end."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PairText:
    query_pk: int
    item_pk: int
    query: str
    passage: str


@dataclass
class Outcome:
    """What a judge made of one pair. ``attempts`` 0: never asked (the budget ran out
    first), and nothing is stored for it."""

    pair: PairText
    grade: int | None = None
    rationale: str = ""
    raw: str = ""
    failure: str = ""
    attempts: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
