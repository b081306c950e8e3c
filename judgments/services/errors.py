"""The exceptions every service raises: a refused change, with a message that says how to fix it.

A service that raises one of them has changed nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..formats import Problem, describe_problems
from ..models import Judgment


class VerityError(Exception):
    """A refused change. The message says what was wrong and how to fix it."""


class InvariantError(VerityError):
    """The change would break a stated invariant; nothing was changed."""


@dataclass(eq=False)  # eq=False keeps the exception hashable
class JudgmentConflict(VerityError):
    """The judgment changed since the version the edit was based on; nothing was changed."""

    query_id: str
    item_id: str
    expected_version: int | None
    current: Judgment

    def __str__(self) -> str:
        who = self.current.who or "an import"
        based = (
            "a new judgment"
            if self.expected_version is None
            else f"version {self.expected_version}"
        )
        return (
            f"judgment of item '{self.item_id}' for query '{self.query_id}' was changed: "
            f"your edit was based on {based}, but it is now version {self.current.version}, "
            f"grade {self.current.grade}, set by {who}. Reload it and apply your change again."
        )


class ImportRefused(VerityError):
    """The input has problems (each with file and line); nothing was imported."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__(describe_problems(self.problems))
