"""The error a refused run or unit-mapping file raises."""

from __future__ import annotations

import codecs
from collections.abc import Sequence
from pathlib import Path

from judgments.formats import MAX_LISTED
from judgments.services import VerityError


class RunImportError(VerityError):
    """The run file was refused; nothing was stored. ``errors`` lists file:line problems."""

    def __init__(self, message: str, errors: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.errors = list(errors)

    def as_client_sees_it(self, path: Path, *, via: str = "api") -> tuple[str, list[str]]:
        """The message and errors naming the file by the client's name (not the server's
        copy of it); where the command line says --dedup or --ignore-unknown-queries, the
        API's field (``via="api"``) or the upload form's label (``via="form"``). A file
        that is not text says so first, and a list cut at ``MAX_LISTED`` says there is
        more."""
        hints = FORM_HINTS if via == "form" else API_HINTS

        def client_side(message: str) -> str:
            message = message.replace(str(path), path.name)
            for cli, client in hints:
                message = message.replace(cli, client)
            return message

        detail = client_side(str(self))
        reason = not_text(path)
        if reason:
            detail = (
                f"{path.name} is not a text file ({reason}): a run is a TREC run or JSON Lines "
                f"text; check that you chose the right file. {detail}"
            )
        errors = [client_side(m) for m in self.errors]
        if len(errors) >= MAX_LISTED and not errors[-1].startswith("…"):
            errors.append(
                f"… and more: reading stopped at the {MAX_LISTED}th problem, so the rest of "
                "the file was not checked"
            )
        return detail, errors


#: Command-line options in a refusal, as the API's fields and as the upload form's labels.
API_HINTS = (
    ("pass --dedup first", "send dedup=first"),
    ("pass --ignore-unknown-queries", "send ignore_unknown_queries=true"),
)
FORM_HINTS = (
    ("pass --dedup first", "choose “keep the first” under “Duplicate ids”"),
    (
        "pass --ignore-unknown-queries",
        "tick “Skip the lines of queries this collection lacks”",
    ),
)


def not_text(path: Path, *, sample: int = 65_536) -> str:
    """Why the file's first ``sample`` bytes are not text, or ``""``: NUL bytes, or bytes
    that are not UTF-8 (a multi-byte character cut by the sample's end is fine)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(sample)
    except OSError:
        return ""
    if b"\x00" in head:
        return "it holds NUL bytes"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return "its bytes are not UTF-8 text"
    return ""
