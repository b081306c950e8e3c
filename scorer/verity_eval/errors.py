"""Errors raised by the scoring engine.

Every engine error is a ``ValueError`` so callers that only know the standard library can
still catch it; the subclasses say whether the *input data* or the *parameters* are wrong.
"""

from __future__ import annotations

from collections.abc import Iterable

#: A reader stops after this many problems: enough to fix a file in one pass, few enough
#: that a wholly wrong file (say, a qrels file given as the run) gives a short message.
MAX_ERRORS = 25


class EngineError(ValueError):
    """Base class of every error the engine raises on purpose."""


class InvalidParameterError(EngineError):
    """A scoring parameter is invalid (k not a positive integer, unknown measure, ...)."""


class EngineInputError(EngineError):
    """Input data is invalid; ``errors`` lists every problem found (at most ``MAX_ERRORS``).

    Each entry names the file (or the in-memory source), the line or position, what is
    wrong and how to fix it, e.g. ``run.trec line 14: duplicate docid 'd7' for query '3'
    (first at line 9); pass --dedup first to keep the first occurrence``.
    """

    def __init__(self, errors: Iterable[str], *, truncated: bool = False) -> None:
        self.errors: list[str] = list(errors)
        self.truncated = truncated
        message = "\n".join(self.errors)
        if truncated:
            message += f"\n(stopped after {len(self.errors)} errors)"
        super().__init__(message)


class ErrorCollector:
    """Collects input errors and raises one ``EngineInputError`` for all of them."""

    def __init__(self, limit: int = MAX_ERRORS) -> None:
        self.limit = limit
        self.errors: list[str] = []
        self.truncated = False

    @property
    def full(self) -> bool:
        return len(self.errors) >= self.limit

    def add(self, message: str) -> None:
        if len(self.errors) < self.limit:
            self.errors.append(message)
        else:
            self.truncated = True

    def raise_if_any(self) -> None:
        if self.errors:
            raise EngineInputError(self.errors, truncated=self.truncated)
