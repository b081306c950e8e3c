"""The error a refused run or unit-mapping file raises."""

from __future__ import annotations

from collections.abc import Sequence

from judgments.services import VerityError


class RunImportError(VerityError):
    """The run file was refused; nothing was stored. ``errors`` lists file:line problems."""

    def __init__(self, message: str, errors: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.errors = list(errors)
