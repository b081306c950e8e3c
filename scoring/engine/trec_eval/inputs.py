"""trec_eval 10's two input files, read the way its C readers read them (get_qrels.c,
get_trec_results.c), so that the same bytes give the same query set, or the same refusal.

Text is kept as latin-1 ``str``: one character per byte, so ids of any encoding go out as
they came in, and Python's string order is C's ``strcmp`` order.

qrels: ``qid iter docno rel``, exactly four fields; a line starting with ``#`` at its first
byte is a comment, but only one in a row (trec_eval parses the line after a comment without
looking at its first byte again, so a second comment line is data or malformed). Blank
lines are malformed. ``rel`` is read with C's ``atol`` (``1.5`` is 1, ``x`` is 0).

run: ``qid iter docno rank sim runid [anything]``; blank lines and lines whose first
non-blank byte is ``#`` are skipped; ``sim`` is read with ``atof``; the rank field is
ignored; the run id printed is the last line's.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

import numpy as np

__all__ = ["InputError", "QrelsFile", "RunFile", "read_qrels", "read_run"]

_ATOL = re.compile(rb"[ \t\n\v\f\r]*([+-]?\d+)")
_ATOF = re.compile(
    rb"[ \t\n\v\f\r]*([+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))",
    re.IGNORECASE,
)


class InputError(Exception):
    """A file trec_eval refuses: ``lines`` are its stderr lines, in its words."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = lines


def atol(field: bytes) -> int:
    match = _ATOL.match(field)
    return int(match.group(1)) if match else 0


def atof(field: bytes) -> float:
    try:
        return float(field)
    except ValueError:
        match = _ATOF.match(field)
        return float(match.group(1)) if match else 0.0


@dataclass(frozen=True)
class QrelsFile:
    qid: np.ndarray  # object array of str
    docno: np.ndarray  # object array of str
    rel: np.ndarray  # int64


@dataclass(frozen=True)
class RunFile:
    qid: np.ndarray
    docno: np.ndarray
    sim: np.ndarray  # float64
    runid: str


_SPACE = b" \t\n\v\f\r"


def read_qrels(path: str) -> QrelsFile:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        data = b""
    if not data:
        raise InputError([f"trec_eval.get_qrels: Cannot read qrels file '{path}'"])
    if not data.endswith(b"\n"):
        data += b"\n"
    qids: list[bytes] = []
    docnos: list[bytes] = []
    rels: list[bytes] = []
    lines = data.split(b"\n")
    lines.pop()  # after the final newline
    after_comment = False
    for line in lines:
        if not after_comment and line.startswith(b"#"):
            after_comment = True
            continue
        after_comment = False
        fields = line.split()
        # parse_qrels_line: four fields, the first may be preceded by blanks; a fifth
        # field is malformed, trailing blanks are not.
        if len(fields) != 4:
            raise InputError(
                [
                    f"trec_eval.get_qrels: Malformed line {len(qids) + 1}",
                    f"trec_eval: Quit in file '{path}'",
                ]
            )
        qids.append(fields[0])
        docnos.append(fields[2])
        rels.append(fields[3])
    rel = np.fromiter((atol(r) for r in rels), dtype=np.int64, count=len(rels))
    return QrelsFile(_text(qids), _text(docnos), rel)


def _read_run_bytes(path: str) -> bytes:
    if path.startswith("-"):
        # trec_eval reads standard input for any name starting with '-'.
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def read_run(path: str) -> RunFile:
    data = _read_run_bytes(path)
    if not data:
        raise InputError(
            [
                f"trec_eval.get_results: Cannot read results file '{path}'",
                f"trec_eval: Quit in file '{path}'",
            ]
        )
    qids: list[bytes] = []
    docnos: list[bytes] = []
    sims: list[bytes] = []
    runid = b""
    for line in data.split(b"\n"):
        stripped = line.lstrip(_SPACE)
        if not stripped or stripped.startswith(b"#"):
            continue
        fields = stripped.split()
        if len(fields) < 6:
            raise InputError(
                [
                    f"trec_eval.get_results: Malformed line {len(qids) + 1}",
                    f"trec_eval: Quit in file '{path}'",
                ]
            )
        qids.append(fields[0])
        docnos.append(fields[2])
        sims.append(fields[4])
        runid = fields[5]
    return RunFile(_text(qids), _text(docnos), _sims(sims), runid.decode("latin-1"))


def _sims(fields: list[bytes]) -> np.ndarray:
    try:
        return np.array(fields, dtype=np.float64)
    except ValueError:
        return np.fromiter((atof(f) for f in fields), dtype=np.float64, count=len(fields))


def _text(fields) -> np.ndarray:
    out = np.empty(len(fields), dtype=object)
    out[:] = [f.decode("latin-1") for f in fields]
    return out
