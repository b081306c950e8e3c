"""The error a refused run or unit-mapping file raises."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judgments.services import VerityError


class RunImportError(VerityError):
    """The run file was refused; nothing was stored. ``errors`` lists file:line problems."""

    def __init__(self, message: str, errors: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.errors = list(errors)

    def as_client_sees_it(self, path: Path) -> tuple[str, list[str]]:
        """The message and errors naming the file by the client's name (not the server's
        copy of it), with the upload's field where the command line says --dedup."""

        def client_side(message: str) -> str:
            return (
                message.replace(str(path), path.name)
                .replace("pass --dedup first", "send dedup=first")
                .replace("pass --ignore-unknown-queries", "send ignore_unknown_queries=true")
            )

        return client_side(str(self)), [client_side(m) for m in self.errors]
