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

import functools
import mmap
import os
import re
import sys
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

__all__ = ["InputError", "QrelsFile", "RunFile", "read_qrels", "read_run"]

_ATOL = re.compile(rb"[ \t\n\v\f\r]*([+-]?\d+)")
_ATOF = re.compile(
    rb"[ \t\n\v\f\r]*([+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan))",
    re.IGNORECASE,
)
# C's atof (strtod) also reads hexadecimal: 0x10 is 16, 0x1.8p1 is 3.
_HEX = re.compile(
    rb"[ \t\n\v\f\r]*([+-]?0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?\d+)?)", re.IGNORECASE
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
        match = _HEX.match(field)
        if match:
            try:
                return float.fromhex(match.group(1).decode())
            except OverflowError:  # strtod: HUGE_VAL
                return float("-inf") if match.group(1)[:1] == b"-" else float("inf")
        match = _ATOF.match(field)
        return float(match.group(1)) if match else 0.0


@dataclass(frozen=True)
class QrelsFile:
    qid: pa.Array  # binary
    docno: pa.Array  # binary
    rel: np.ndarray  # int64
    # What the rankings derive from the query ids once (rankings._segments).
    derived: dict = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class RunFile:
    qid: pa.Array  # binary, or dictionary of binary
    docno: pa.Array  # binary
    sim: np.ndarray  # float64
    runid: str


def _fast_columns(data: bytes, names: list[str], types: dict, empty_lines_ok: bool):
    """The file read by pyarrow when it is regular: one tab or one space between fields,
    none before the first or after the last, no comment line. Anything else (and
    anything pyarrow cannot parse, such as ``1.5x`` as a score) returns None, and the
    line-by-line reader, which follows trec_eval's own parser, reads it instead."""
    if data[:1] == b"#" or data.find(b"\n#") != -1 or data[:1].isspace():
        return None
    if not empty_lines_ok and data.find(b"\n\n") != -1:
        return None
    table = _parse(
        pa.BufferReader(pa.py_buffer(data)), data[:4096], names, types, empty_lines_ok, data=data
    )
    if table is not None:
        # A later line starting with a blank shows in a query id (the check above sees
        # the first line only): trec_eval skips the blank, the line-by-line reader too.
        qid = table.column(names[0]).combine_chunks()
        ids = qid.dictionary if pa.types.is_dictionary(qid.type) else pc.unique(qid)
        if any(is_not_data(q) for q in ids.to_pylist()):
            return None
    return table


def _irregular(chunk: bytes, delimiter: bytes) -> bool:
    """Whether ``chunk`` has what pyarrow, splitting on one ``delimiter``, reads otherwise
    than trec_eval, which splits on any run of blanks: two delimiters in a row or one
    ending a line (an empty field where trec_eval sees a field missing: a malformed
    line), another blank (a tab inside a field split on spaces), or a carriage return
    not ending a line (pyarrow ends the line there). A carriage return ending the chunk
    is left to the next chunk, which starts with it."""
    other = b" " if delimiter == b"\t" else b"\t"
    if other in chunk or b"\v" in chunk or b"\f" in chunk:  # one byte: a fast search
        return True
    if b"\r" in chunk and (
        delimiter + b"\r" in chunk
        or chunk.count(b"\r") - chunk.endswith(b"\r") != chunk.count(b"\r\n")
    ):
        return True
    # A delimiter followed by another or by a newline (numpy: faster than two searches
    # for two bytes).
    data = np.frombuffer(chunk, np.uint8)
    after = data[1:]
    return bool(((data[:-1] == delimiter[0]) & ((after == delimiter[0]) | (after == 10))).any())


def _delimiter(head: bytes) -> str | None:
    """The delimiter pyarrow should split on, from the file's first line (a tab when it
    has tabs and no space); None when pyarrow cannot read the file as trec_eval does: a
    byte-order mark (pyarrow drops it, trec_eval keeps it) or no full first line."""
    if head[:3] == b"\xef\xbb\xbf":
        return None
    end = head.find(b"\n")
    if end == -1:
        return None
    first = head[:end]
    return "\t" if b"\t" in first and b" " not in first else " "


def _csv_options(
    delimiter: str, names: list[str], types: dict, empty_lines_ok: bool, block_size: int
) -> dict:
    """pyarrow's CSV options for trec_eval's files: no quoting or escapes, no nulls, the
    ``types`` columns only, one thread (CPU time counts every thread)."""
    return {
        "read_options": pa_csv.ReadOptions(
            column_names=names, block_size=block_size, use_threads=False
        ),
        "parse_options": pa_csv.ParseOptions(
            delimiter=delimiter,
            quote_char=False,
            escape_char=False,
            double_quote=False,
            ignore_empty_lines=empty_lines_ok,
        ),
        "convert_options": pa_csv.ConvertOptions(
            column_types=types,
            include_columns=list(types),
            strings_can_be_null=False,
            null_values=[],
        ),
    }


_SCAN = 1 << 20


def _regular(source, delimiter: str) -> bool:
    """Whether the file at ``source`` (a path) or the bytes ``source`` read by pyarrow
    split on ``delimiter`` give trec_eval's fields (``_irregular``), read a few MB at a
    time (no more held in memory; about 0.5 ms a MB)."""
    sep = delimiter.encode()
    if not isinstance(source, str):
        return not _irregular(bytes(source), sep)
    stat = os.stat(source)
    return _regular_file(source, sep, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _regular_file(path: str, sep: bytes, size: int, mtime_ns: int) -> bool:
    """``_regular`` of a file, remembered within one run of the program: the block
    reader, the partitioned reader and the whole-file reader may each ask about the same
    run. ``forget_file_checks`` clears it (``cli.run`` does, first): a file rewritten
    within one tick of the clock keeps its size and time stamp."""
    carry = b""
    with open(path, "rb") as handle:
        while chunk := handle.read(_SCAN):
            if _irregular(carry + chunk, sep):
                return False
            carry = chunk[-1:]
    return True


def forget_file_checks() -> None:
    """Forget which files were found regular (``_regular_file``)."""
    _regular_file.cache_clear()


def _parse(
    source,
    head: bytes,
    names: list[str],
    types: dict,
    empty_lines_ok: bool,
    block_size=1 << 24,
    data=None,
):
    """pyarrow's CSV reader on ``source`` (``head``: the file's first bytes; ``data``:
    its bytes when ``source`` is not a path)."""
    delimiter = _delimiter(head)
    if delimiter is None or not _regular(source if isinstance(source, str) else data, delimiter):
        return None
    try:
        table = pa_csv.read_csv(
            source, **_csv_options(delimiter, names, types, empty_lines_ok, block_size)
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError):
        return None
    if any(table.column(n).null_count for n in types):
        return None
    return table


_SPACE = b" \t\n\v\f\r"


def read_qrels(path: str) -> QrelsFile:
    data = _mapped(path)
    if not data:
        raise InputError(
            [
                f"trec_eval.get_qrels: Cannot read qrels file '{path}'",
                f"trec_eval: Quit in file '{path}'",
            ]
        )
    names = ["qid", "iter", "docno", "rel"]
    types = {"qid": pa.binary(), "docno": pa.binary(), "rel": pa.binary()}
    if data[-1:] == b"\n" and isinstance(data, mmap.mmap):
        # From the path (the mapped pages would count in memory), in one block (its
        # columns need no copy to be contiguous), grades read as integers (else as
        # text, below); a comment line, a blank one or one starting with a blank shows
        # in a query id.
        block = min(len(data) + 1, 1 << 30)
        whole = {**types, "rel": pa.int64()}
        table = _parse(path, data[:4096], names, whole, empty_lines_ok=False, block_size=block)
        if table is None:
            table = _parse(path, data[:4096], names, types, empty_lines_ok=False)
        if table is not None:
            first = pc.unique(table.column("qid")).to_pylist()
            if any(is_not_data(q) for q in first):
                table = None
    else:
        if data[-1:] != b"\n":
            data = bytes(data) + b"\n"
        table = _fast_columns(data, names, types, empty_lines_ok=False)
    if table is not None and table.column("rel").type == pa.int64():
        rel = table.column("rel").to_numpy()
        return QrelsFile(
            table.column("qid").combine_chunks(), table.column("docno").combine_chunks(), rel
        )
    if table is not None:
        rel_text = table.column("rel").combine_chunks()
        try:
            rel = rel_text.cast(pa.string()).cast(pa.int64()).to_numpy()
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            rel = np.fromiter((atol(r) for r in rel_text.to_pylist()), np.int64, len(rel_text))
        return QrelsFile(
            table.column("qid").combine_chunks(), table.column("docno").combine_chunks(), rel
        )
    qids: list[bytes] = []
    docnos: list[bytes] = []
    rels: list[bytes] = []
    lines = bytes(data).split(b"\n")
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
    return QrelsFile(pa.array(qids, pa.binary()), pa.array(docnos, pa.binary()), rel)


def _read_run_bytes(path: str):
    if path.startswith("-"):
        # trec_eval reads standard input for any name starting with '-'.
        return sys.stdin.buffer.read()
    return _mapped(path)


def _last_line(data) -> bytes:
    end = len(data)
    while end and data[end - 1 : end].isspace():
        end -= 1
    return data[data.rfind(b"\n", 0, end) + 1 : end]


def _mapped(path: str):
    """The file's bytes, memory-mapped (no copy held by Python); b"" when unreadable."""
    try:
        with open(path, "rb") as handle:
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return b""


def read_run(path: str) -> RunFile:
    data = _read_run_bytes(path)
    if not data and not path.startswith("-"):
        # An empty file is refused (trec_eval maps it); empty standard input is read,
        # as a file of blank lines is: no line.
        raise InputError(
            [
                f"trec_eval.get_results: Cannot read results file '{path}'",
                f"trec_eval: Quit in file '{path}'",
            ]
        )
    fast = _fast_run(path, data)
    if fast is not None:
        return fast
    qids: list[bytes] = []
    docnos: list[bytes] = []
    sims: list[bytes] = []
    runid = b""
    for line in bytes(data).split(b"\n"):
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
    return RunFile(
        pa.array(qids, pa.binary()),
        pa.array(docnos, pa.binary()),
        _sims(sims),
        runid.decode("latin-1"),
    )


_RUN_COLUMNS = ["qid", "iter", "docno", "rank", "sim", "runid"]
# Query ids repeat: dictionary-encoded as they are read.
_RUN_TYPES = {
    "qid": pa.dictionary(pa.int32(), pa.binary()),
    "docno": pa.binary(),
    "sim": pa.float64(),
}


def _fast_run(path: str, data) -> RunFile | None:
    """The run read by pyarrow, or None (the line-by-line reader decides). A file is read
    from its path, not from the memory map (whose pages would count in the process's
    memory): a comment line or a line starting with a blank shows in a query id, which
    the checks below read from the ids' dictionary instead of searching the bytes."""
    if isinstance(data, mmap.mmap):
        head = data[:4096]
        table = _parse(path, head, _RUN_COLUMNS, _RUN_TYPES, empty_lines_ok=True)
        if table is not None:
            qid = table.column("qid").unify_dictionaries().combine_chunks()
            if any(not q or q[:1] == b"#" or q[:1] in _SPACE for q in qid.dictionary.to_pylist()):
                return None
    else:
        table = _fast_columns(data, _RUN_COLUMNS, _RUN_TYPES, empty_lines_ok=True)
        if table is not None:
            qid = table.column("qid").unify_dictionaries().combine_chunks()
    if table is None or not table.num_rows:
        return None
    # The run id printed is the last line's (every line has six fields here).
    runid = _last_line(data).split()[5]
    return RunFile(
        qid,
        table.column("docno").combine_chunks(),
        table.column("sim").to_numpy(),
        runid.decode("latin-1"),
    )


def is_not_data(qid: bytes) -> bool:
    """A query id the fast readers cannot take: empty (a blank line), or starting with
    '#' (a comment line) or a blank."""
    return not qid or qid[:1] == b"#" or qid[:1] in _SPACE


def _sims(fields: list[bytes]) -> np.ndarray:
    try:
        return np.array(fields, dtype=np.float64)
    except ValueError:
        return np.fromiter((atof(f) for f in fields), dtype=np.float64, count=len(fields))


# Query ids as binary: a block's queries are found by comparing neighbours (cheaper than
# pyarrow's dictionary encoding, which hashes every line's id).
_BLOCK_TYPES = {"qid": pa.binary(), "docno": pa.binary(), "sim": pa.float64()}

#: Bytes per block when a run is read block by block (``run_blocks``).
STREAM_BLOCK = 1 << 21


class NotStreamable(Exception):
    """The run cannot be read block by block; the whole-file readers decide."""


def run_blocks(path: str, head: bytes, block_size: int | None = None):
    """The run file's blocks as (query ids, document ids, scores), from pyarrow's
    streaming CSV reader: ids binary, scores float64. Raises ``NotStreamable`` where
    ``_fast_run`` would return None for a line pyarrow cannot split as trec_eval does, at
    whatever block that shows (a comment line, or one starting with a blank, shows in a
    query id: the caller checks them)."""
    delimiter = _delimiter(head)
    if delimiter is None or not _regular(path, delimiter):
        raise NotStreamable
    try:
        reader = pa_csv.open_csv(
            path,
            **_csv_options(delimiter, _RUN_COLUMNS, _BLOCK_TYPES, True, block_size or STREAM_BLOCK),
        )
        for batch in reader:
            qid, docno, sim = batch.column(0), batch.column(1), batch.column(2)
            if qid.null_count or docno.null_count or sim.null_count:
                raise NotStreamable
            yield qid, docno, sim.to_numpy()
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as error:
        raise NotStreamable from error
