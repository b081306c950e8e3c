"""Low-level pieces shared by the readers: file names, decoding, comments, the delimiter
sniffing and pyarrow table reading of the fast TREC path, JSON Lines iteration, and the
empty-file error."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from verity_limits import ID_MAX, JsonLineError, id_problem, parse_json_line

from ..errors import EngineInputError, ErrorCollector
from ..tables import Run

PathLike = str | Path

_INT_RE = re.compile(rb"[+-]?[0-9]+")
_BLOCK = 1 << 22
# Bytes per block of pyarrow's CSV reader; each block becomes one chunk of every column.
_CSV_BLOCK = 1 << 24


def _name(path: PathLike) -> str:
    return str(path)


def _is_comment(fields: list[bytes]) -> bool:
    return fields[0].startswith(b"#")


def _decode(raw: bytes, name: str, lineno: int, errors: ErrorCollector) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        errors.add(
            f"{name} line {lineno}: invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
            f"{exc.start + 1}); save the file as UTF-8"
        )
        return None


def _shown(value: str | bytes) -> str:
    """A field as a refusal quotes it: its first 40 characters, "…" when there is more
    (a message never carries a whole multi-megabyte field)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return value[:40] + ("…" if len(value) > 40 else "")


def _bad_id(value: str, where: str, what: str, errors: ErrorCollector) -> bool:
    """Report an id that cannot be stored (``verity_limits.id_problem``); True if bad."""
    problem = id_problem(value)
    if problem is None:
        return False
    errors.add(f"{where}: {what} {_shown(value)!r} {problem}")
    return True


def _ids_storable(*columns: pa.ChunkedArray) -> bool:
    """False if any id breaks ``verity_limits.id_problem``: the careful reader then names
    the lines. Lengths and printable ASCII are checked by pyarrow; the few ids with other
    characters by ``id_problem`` itself (pyarrow's Unicode tables are not Python's). (An
    id holding NUL never gets here: ``_sniff_delimiter`` keeps any file with a NUL byte
    off the fast path, and a space is the separator or keeps the file off it too.)"""
    for col in columns:
        if pa.types.is_dictionary(col.type):
            col = pa.chunked_array([c.dictionary for c in col.chunks], type=col.type.value_type)
        if _byte_lengths(col)[1] > ID_MAX:
            return False
        for chunk in col.chunks:
            ascii_ = pc.string_is_ascii(chunk)
            if not pc.all(
                pc.or_(pc.invert(ascii_), pc.utf8_is_printable(chunk)), min_count=0
            ).as_py():
                return False
            if not pc.all(ascii_, min_count=0).as_py():
                others = chunk.filter(pc.invert(ascii_)).to_pylist()
                if any(id_problem(value) for value in others):
                    return False
    return True


def _byte_lengths(col: pa.ChunkedArray) -> tuple[int, int]:
    """Shortest and longest value in bytes ((0, 0) if none), chunk by chunk: the lengths
    of a whole 10M-row column would be a 40 MB array of fresh pages."""
    shortest, longest = None, 0
    for chunk in col.chunks:
        if len(chunk):
            bounds = pc.min_max(pc.binary_length(chunk))
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            shortest = low if shortest is None else min(shortest, low)
            longest = max(longest, high)
    return shortest or 0, longest


def _sniff_delimiter(path: PathLike, fields: int) -> str | None:
    """The one-character field separator when the file is regular enough for pyarrow's
    CSV reader to split it as trec_eval would, else ``None`` (use the careful reader).

    Only single-byte scans here (memchr speed), into one reused buffer (fresh blocks would
    each be paged in, and zeroed by the kernel, anew). Empty fields, which a doubled,
    leading or trailing separator produces, are caught after parsing by
    ``_no_empty_fields``.
    """
    with open(path, "rb", buffering=0) as fh:
        head = fh.read(1 << 16)
        first = head.split(b"\n", 1)[0]
        if b"\t" in first and b" " not in first:
            delim = b"\t"
        elif b" " in first and b"\t" not in first:
            delim = b" "
        else:
            return None
        if len(first.split(delim)) != fields:
            return None
        # Bytes that trec_eval treats as whitespace but pyarrow as data (and CR, which
        # pyarrow alone treats as a line end); NUL, which no stored id may hold.
        bad = (b" " if delim == b"\t" else b"\t", b"\r", b"\x0b", b"\x0c", b"\x00")
        fh.seek(0)
        buf = bytearray(_BLOCK)
        while size := fh.readinto(buf):
            block = buf if size == _BLOCK else buf[:size]
            if any(p in block for p in bad):
                return None
        return delim.decode()


def _no_empty_fields(*columns: pa.ChunkedArray) -> bool:
    """False if any value is empty: the mark of a doubled, leading or trailing separator."""
    for col in columns:
        if pa.types.is_dictionary(col.type):
            if any(not value for chunk in col.chunks for value in chunk.dictionary.to_pylist()):
                return False
        elif col.length() and _byte_lengths(col)[0] == 0:
            return False
    return True


_PARSE_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


def _read_table(
    path: PathLike, delim: str, names: list[str], types: dict[str, pa.DataType], include: list[str]
) -> pa.Table | None:
    try:
        return pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=names, block_size=_CSV_BLOCK),
            parse_options=pcsv.ParseOptions(
                delimiter=delim, quote_char=False, double_quote=False, escape_char=False
            ),
            convert_options=pcsv.ConvertOptions(
                column_types=types,
                include_columns=include,
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                null_values=[],
            ),
        )
    except _PARSE_ERRORS:
        return None


def _encode_qids(col: pa.ChunkedArray) -> tuple[list[str], np.ndarray]:
    """Query ids (first seen first) and each row's index into them.

    Each chunk of a dictionary column numbers its own values; they are renumbered in one
    pass straight into the result (``unify_dictionaries`` then a concatenation would
    write two 10M-row copies).
    """
    if not pa.types.is_dictionary(col.type):
        col = pa.chunked_array([pc.dictionary_encode(col.combine_chunks())])
    index: dict[str, int] = {}
    codes = np.empty(col.length(), dtype=np.int32)
    start = 0
    for chunk in col.chunks:
        # The chunk's dictionary in the file-wide numbering: a new id takes the next number.
        renumber = np.fromiter(
            (index.setdefault(qid, len(index)) for qid in chunk.dictionary.to_pylist()),
            dtype=np.int32,
            count=len(chunk.dictionary),
        )
        end = start + len(chunk)
        np.take(renumber, chunk.indices.to_numpy(), out=codes[start:end])
        start = end
    return list(index), codes


def _empty_file(name: str, expected: str) -> EngineInputError:
    return EngineInputError([f"{name} line 1: file is empty (no data lines); expected {expected}"])


_DICT = pa.dictionary(pa.int32(), pa.string())
# For the fields trec_eval never reads (Q0, tag): only their emptiness matters, so their
# bytes are not checked as UTF-8 (the careful reader does not decode them either).
_BYTES_DICT = pa.dictionary(pa.int32(), pa.binary())


def _with(run: Run, **changes: object) -> Run:
    from dataclasses import replace

    return replace(run, **changes)  # type: ignore[arg-type]


def _json_lines(path: PathLike, name: str, errors: ErrorCollector) -> Iterator[tuple[int, object]]:
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if errors.full:
                errors.truncated = True
                return
            if not raw.strip() or raw.lstrip().startswith(b"#"):
                continue
            text = _decode(raw, name, lineno, errors)
            if text is None:
                continue
            try:
                yield lineno, parse_json_line(text)
            except JsonLineError as exc:
                errors.add(f"{name} line {lineno}: {exc}")
