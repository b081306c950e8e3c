"""Reading TREC qrels (``qid 0 docid grade``): the fast pyarrow path and the careful
line-by-line one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from verity_limits import GRADE_MAX, GRADE_MIN, grade_problem

from ..errors import ErrorCollector
from ..tables import Qrels, id_keys, later_duplicates
from .common import (
    _BYTES_DICT,
    _DICT,
    _INT_RE,
    PathLike,
    _bad_id,
    _decode,
    _empty_file,
    _encode_qids,
    _ids_storable,
    _is_comment,
    _name,
    _no_empty_fields,
    _read_table,
    _shown,
    _sniff_delimiter,
)


def read_qrels(path: PathLike) -> Qrels:
    """Read TREC qrels ``qid 0 docid grade`` (second column ignored, whatever it is).

    Grades are integers; a negative grade (trec_eval's -1) means pooled but unjudged.
    Lines whose first field starts with ``#`` are comments (a ``#`` inside a docid is
    data). A (qid, docid) pair listed twice is an error, even with the same grade.
    """
    name = _name(path)
    delim = _sniff_delimiter(path, 4)
    if delim is not None:
        fast = _read_qrels_fast(path, name, delim)
        if fast is not None:
            return fast
    return _read_qrels_slow(path, name)


def _read_qrels_fast(path: PathLike, name: str, delim: str) -> Qrels | None:
    table = _read_table(
        path,
        delim,
        ["q", "z", "d", "g"],
        {"q": _DICT, "z": _BYTES_DICT, "d": pa.string(), "g": pa.int64()},
        ["q", "z", "d", "g"],
    )
    if table is None or table.num_rows == 0:
        return None
    if not _no_empty_fields(table.column("q"), table.column("z"), table.column("d")):
        return None
    if not _ids_storable(table.column("q"), table.column("d")):
        return None
    if table.num_rows:  # a grade out of range: the careful reader names its line
        bounds = pc.min_max(table.column("g"))
        if bounds["min"].as_py() < GRADE_MIN or bounds["max"].as_py() > GRADE_MAX:
            return None
    qids, codes = _encode_qids(table.column("q"))
    if any(q.startswith("#") for q in qids):
        return None
    order = np.argsort(codes, kind="stable")
    docids = table.column("d").take(pa.array(order)).combine_chunks()
    grades = table.column("g").to_numpy()[order]
    codes = codes[order]
    keys = id_keys(codes, docids)
    if later_duplicates(codes, docids, keys, lambda rows: rows).any():
        return None
    offsets = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(qids)))])
    return Qrels(
        tuple(qids), offsets.astype(np.int64), docids, grades.astype(np.int64), source=name
    )


def _read_qrels_slow(path: PathLike, name: str) -> Qrels:
    errors = ErrorCollector()
    table: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    data_lines = 0
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if errors.full:
                errors.truncated = True
                break
            fields = raw.split()
            if not fields or _is_comment(fields):
                continue
            data_lines += 1
            if len(fields) != 4:
                errors.add(
                    f"{name} line {lineno}: expected 4 fields 'qid 0 docid grade', found "
                    f"{len(fields)}; put one judgment per line"
                )
                continue
            decoded = [_decode(f, name, lineno, errors) for f in (fields[0], fields[2])]
            qid, docid = decoded
            if qid is None or docid is None:
                continue
            where = f"{name} line {lineno}"
            if _bad_id(qid, where, "query id", errors) or _bad_id(docid, where, "docid", errors):
                continue
            if not _INT_RE.fullmatch(fields[3]):
                errors.add(
                    f"{name} line {lineno}: grade {_shown(fields[3])!r} is "
                    "not an integer; use whole-number grades (-1 = pooled but unjudged)"
                )
                continue
            problem = grade_problem(fields[3].decode("ascii"))
            if problem is not None:
                errors.add(f"{name} line {lineno}: {problem} (-1 = pooled but unjudged)")
                continue
            key = (qid, docid)
            if key in first_line:
                errors.add(
                    f"{name} line {lineno}: duplicate judgment for query {qid!r}, docid "
                    f"{docid!r} (first at line {first_line[key]}); keep one line per pair"
                )
                continue
            first_line[key] = lineno
            table.setdefault(qid, {})[docid] = int(fields[3])
    errors.raise_if_any()
    if data_lines == 0:
        raise _empty_file(name, "lines 'qid 0 docid grade'")
    return Qrels.from_mapping(table, source=name)
