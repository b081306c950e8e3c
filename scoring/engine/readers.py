"""Readers for TREC qrels, TREC runs, JSON Lines runs, statuses and unit maps.

Two paths read a TREC file. The fast one hands a regular file (one space, or one tab,
between fields; no comments; exactly 4 or 6 fields) to pyarrow's CSV reader and does the
rest with numpy. Anything it does not accept, or any defect it finds, sends the file to
the careful pure-Python reader, which splits on runs of whitespace as trec_eval does and
reports every problem with its line number. Both paths give the same result on the files
the fast one accepts.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from .errors import EngineInputError, ErrorCollector, InvalidParameterError
from .params import DEDUP_POLICIES
from .tables import Qrels, Run, id_keys, later_duplicates

PathLike = str | Path

STATUSES: tuple[str, ...] = ("relevant", "no_answer", "unreviewed")

_INT_RE = re.compile(rb"[+-]?[0-9]+")
_BLOCK = 1 << 26


# --------------------------------------------------------------------------- helpers


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


def _sniff_delimiter(path: PathLike, fields: int) -> str | None:
    """The one-character field separator when the file is regular enough for pyarrow's
    CSV reader to split it as trec_eval would, else ``None`` (use the careful reader).

    Only single-byte scans here (memchr speed); empty fields, which a doubled, leading or
    trailing separator produces, are caught after parsing by ``_no_empty_fields``.
    """
    with open(path, "rb") as fh:
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
        # pyarrow alone treats as a line end).
        bad = (b" " if delim == b"\t" else b"\t", b"\r", b"\x0b", b"\x0c")
        fh.seek(0)
        while block := fh.read(_BLOCK):
            if any(p in block for p in bad):
                return None
        return delim.decode()


def _no_empty_fields(*columns: pa.ChunkedArray) -> bool:
    """False if any value is empty: the mark of a doubled, leading or trailing separator."""
    for col in columns:
        if pa.types.is_dictionary(col.type):
            if any("" in chunk.dictionary.to_pylist() for chunk in col.chunks):
                return False
        elif col.length() and pc.min(pc.binary_length(col)).as_py() == 0:
            return False
    return True


_PARSE_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError)


def _read_table(
    path: PathLike, delim: str, names: list[str], types: dict[str, pa.DataType], include: list[str]
) -> pa.Table | None:
    try:
        return pcsv.read_csv(
            path,
            read_options=pcsv.ReadOptions(column_names=names, block_size=1 << 24),
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
    """Query ids (dictionary order: first seen first) and each row's index into them."""
    if not pa.types.is_dictionary(col.type):
        col = pa.chunked_array([pc.dictionary_encode(col.combine_chunks())])
    col = col.unify_dictionaries()
    if col.num_chunks == 0:
        return [], np.zeros(0, dtype=np.int32)
    qids = col.chunk(0).dictionary.to_pylist()
    codes = np.concatenate([c.indices.to_numpy() for c in col.chunks]).astype(np.int32, copy=False)
    return qids, codes


def _drop_rows(
    perm: np.ndarray, offsets: np.ndarray, drop: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Remove physical rows marked in ``drop`` from a (perm, offsets) ranking layout."""
    nq = offsets.size - 1
    keep_final = ~drop[perm]
    query_of_final = np.repeat(np.arange(nq, dtype=np.int64), np.diff(offsets))
    kept = np.bincount(query_of_final[keep_final], minlength=nq)
    return perm[keep_final], np.concatenate([[0], np.cumsum(kept)]).astype(np.int64)


def _empty_file(name: str, expected: str) -> EngineInputError:
    return EngineInputError([f"{name} line 1: file is empty (no data lines); expected {expected}"])


# --------------------------------------------------------------------------- qrels


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


_DICT = pa.dictionary(pa.int32(), pa.string())


def _read_qrels_fast(path: PathLike, name: str, delim: str) -> Qrels | None:
    table = _read_table(
        path,
        delim,
        ["q", "z", "d", "g"],
        {"q": _DICT, "z": _DICT, "d": pa.string(), "g": pa.int64()},
        ["q", "z", "d", "g"],
    )
    if table is None or table.num_rows == 0:
        return None
    if not _no_empty_fields(table.column("q"), table.column("z"), table.column("d")):
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
            if not _INT_RE.fullmatch(fields[3]):
                errors.add(
                    f"{name} line {lineno}: grade {fields[3].decode('utf-8', 'replace')!r} is "
                    "not an integer; use whole-number grades (-1 = pooled but unjudged)"
                )
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


# --------------------------------------------------------------------------- runs


def read_run(
    path: PathLike,
    *,
    order: str = "score",
    dedup: str = "error",
    stage: str | None = None,
    fmt: str | None = None,
) -> Run:
    """Read a TREC run (``qid Q0 docid rank score tag``) or a JSON Lines run.

    TREC: ``order="score"`` sorts by score descending (64-bit floats), ties by docid in
    descending byte order, as trec_eval; ``order="rank"`` sorts by the rank column and
    refuses two equal ranks in one query. Fields after the tag are ignored. The rank must
    be an integer and the score a number (NaN refused) whatever the order.

    JSON Lines (``fmt="jsonl"``, or a ``.jsonl``/``.json``/``.ndjson`` name, or a file
    whose first character is ``{``): lists keep their order (recorded as ``"list"``).

    Duplicates within one query's ranking are an error unless ``dedup="first"``, which
    keeps the first occurrence in the final order.
    """
    if order not in ("score", "rank"):
        raise InvalidParameterError(f"order must be 'score' or 'rank', got {order!r}")
    if dedup not in DEDUP_POLICIES:
        raise InvalidParameterError(f"dedup must be one of {', '.join(DEDUP_POLICIES)}")
    name = _name(path)
    if fmt is None:
        fmt = _detect_format(path)
    if fmt == "jsonl":
        return _read_jsonl_run(path, name, dedup=dedup, stage=stage)
    if fmt != "trec":
        raise InvalidParameterError(f"run format must be 'trec' or 'jsonl', got {fmt!r}")
    if stage is not None:
        raise InvalidParameterError(
            f"{name}: stage {stage!r} given, but a TREC run has a single stage; "
            "stages exist in JSON Lines runs only"
        )
    delim = _sniff_delimiter(path, 6)
    if delim is not None:
        fast = _read_trec_run_fast(path, name, delim, order=order, dedup=dedup)
        if fast is not None:
            return fast
    return _read_trec_run_slow(path, name, order=order, dedup=dedup)


def read_run_stages(
    path: PathLike, *, order: str = "score", dedup: str = "error", fmt: str | None = None
) -> list[Run]:
    """Every stage of a run, in pipeline order: a TREC run is one stage, ``default``; a
    JSON Lines run gives its stages in the order they first appear in the file. The file
    is parsed once; each stage follows the rules of :func:`read_run`."""
    if fmt is None:
        fmt = _detect_format(path)
    if fmt != "jsonl":
        return [_with(read_run(path, order=order, dedup=dedup, fmt=fmt), stage="default")]
    if dedup not in DEDUP_POLICIES:
        raise InvalidParameterError(f"dedup must be one of {', '.join(DEDUP_POLICIES)}")
    name = _name(path)
    lines, all_stages = _parse_jsonl_run(path, name)
    return [
        _jsonl_stage(lines, all_stages, name, stage=stage, dedup=dedup)
        for stage in all_stages or ("default",)
    ]


def _detect_format(path: PathLike) -> str:
    if Path(path).suffix.lower() in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    with open(path, "rb") as fh:
        head = fh.read(4096).lstrip()
    return "jsonl" if head.startswith(b"{") else "trec"


def _scores_sorted(codes: np.ndarray, scores: np.ndarray) -> bool:
    """True if rows already are in trec_eval's order, so the sort can be skipped.

    Rows with equal scores in one query count as unsorted: checking their docid order costs
    about as much as the sort that settles it.
    """
    if codes.size < 2:
        return True
    if not bool((codes[1:] >= codes[:-1]).all()):
        return False
    same = codes[1:] == codes[:-1]
    return not bool((same & (scores[1:] >= scores[:-1])).any())


def _read_trec_run_fast(
    path: PathLike, name: str, delim: str, *, order: str, dedup: str
) -> Run | None:
    # Ranks as int32 and the Q0/tag columns dictionary-encoded keep memory down; a rank
    # beyond int32 simply sends the file to the careful reader.
    table = _read_table(
        path,
        delim,
        ["q", "z", "d", "r", "s", "t"],
        {"q": _DICT, "z": _DICT, "d": pa.string(), "r": pa.int32(), "s": pa.float64(), "t": _DICT},
        ["q", "z", "d", "r", "s", "t"],
    )
    if table is None or table.num_rows == 0:
        return None
    if not _no_empty_fields(*(table.column(c) for c in ("q", "z", "d", "t"))):
        return None
    qids, codes = _encode_qids(table.column("q"))
    if any(q.startswith("#") for q in qids):
        return None
    docids = table.column("d")
    scores = table.column("s")
    ranks = table.column("r").to_numpy() if order == "rank" else None
    del table
    if bool(pc.any(pc.is_nan(scores)).as_py()):
        return None
    perm: np.ndarray
    if ranks is not None:
        perm = np.lexsort((ranks, codes))
        rs, cs = ranks[perm], codes[perm]
        if bool(((rs[1:] == rs[:-1]) & (cs[1:] == cs[:-1])).any()):
            return None  # equal ranks: the careful reader names the lines
        del ranks, rs, cs
    elif _scores_sorted(codes, scores.to_numpy()):
        perm = np.arange(codes.size, dtype=np.int64)
    else:
        keyed = pa.table({"q": codes, "s": scores, "d": docids})
        perm = pc.sort_indices(
            keyed, sort_keys=[("q", "ascending"), ("s", "descending"), ("d", "descending")]
        ).to_numpy()
        del keyed
    del scores
    offsets = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(qids)))]).astype(
        np.int64
    )
    run = Run(
        qids=tuple(qids),
        offsets=offsets,
        docids=docids,
        qcodes=codes,
        perm=perm,
        order=order,
        dedup=dedup,
        source=name,
    )
    later = later_duplicates(codes, docids, run.keys(), run.final_positions)
    removed = int(later.sum())
    if removed:
        if dedup == "error":
            return None  # the careful reader reports each duplicate with its lines
        perm, offsets = _drop_rows(perm, offsets, later)
        run = _with(run, perm=perm, offsets=offsets, duplicates_removed=removed)
    return run


@dataclass
class _Row:
    score: float
    rank: int
    docid: str
    lineno: int


def _read_trec_run_slow(path: PathLike, name: str, *, order: str, dedup: str) -> Run:
    errors = ErrorCollector()
    per_query: dict[str, list[_Row]] = {}
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
            if len(fields) < 6:
                errors.add(
                    f"{name} line {lineno}: expected 6 fields 'qid Q0 docid rank score tag', "
                    f"found {len(fields)}; put one ranked item per line"
                )
                continue
            qid = _decode(fields[0], name, lineno, errors)
            docid = _decode(fields[2], name, lineno, errors) if qid is not None else None
            if qid is None or docid is None:
                continue
            rank_text, score_text = fields[3], fields[4]
            if not _INT_RE.fullmatch(rank_text):
                errors.add(
                    f"{name} line {lineno}: rank {rank_text.decode('utf-8', 'replace')!r} is "
                    "not an integer; the 4th field must be the rank (1, 2, ...)"
                )
                continue
            score = _parse_score(score_text)
            if score is None:
                errors.add(
                    f"{name} line {lineno}: score {score_text.decode('utf-8', 'replace')!r} "
                    "is not a number; the 5th field must be the retrieval score"
                )
                continue
            per_query.setdefault(qid, []).append(_Row(score, int(rank_text), docid, lineno))
    errors.raise_if_any()
    if data_lines == 0:
        raise _empty_file(name, "lines 'qid Q0 docid rank score tag'")
    rankings: dict[str, list[str]] = {}
    removed = 0
    for qid, rows in per_query.items():
        if order == "score":
            rows.sort(key=lambda r: r.docid, reverse=True)
            rows.sort(key=lambda r: -r.score)
        else:
            rows.sort(key=lambda r: r.rank)
            for prev, cur in pairwise(rows):
                if prev.rank == cur.rank:
                    a, b = sorted((prev.lineno, cur.lineno))
                    errors.add(
                        f"{name} line {b}: rank {cur.rank} for query {qid!r} repeats line {a}; "
                        "with --order rank every rank must be distinct within a query "
                        "(or use --order score)"
                    )
        first_at: dict[str, int] = {}
        kept: list[str] = []
        for row in rows:
            if row.docid in first_at:
                if dedup == "first":
                    removed += 1
                    continue
                errors.add(
                    f"{name} line {row.lineno}: duplicate docid {row.docid!r} for query "
                    f"{qid!r} (first at line {first_at[row.docid]}); pass --dedup first "
                    "to keep the first occurrence"
                )
                continue
            first_at[row.docid] = row.lineno
            kept.append(row.docid)
        rankings[qid] = kept
    errors.raise_if_any()
    run = Run.from_mapping(rankings, dedup=dedup, source=name)
    return _with(run, order=order, duplicates_removed=removed)


def _with(run: Run, **changes: object) -> Run:
    from dataclasses import replace

    return replace(run, **changes)  # type: ignore[arg-type]


def _parse_score(text: bytes) -> float | None:
    if b"_" in text:  # float() accepts "1_0"; trec_eval does not
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


# --------------------------------------------------------------------------- JSON Lines


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
                yield lineno, json.loads(text)
            except json.JSONDecodeError as exc:
                errors.add(
                    f"{name} line {lineno}: not valid JSON ({exc.msg} at column {exc.colno}); "
                    "write one JSON object per line"
                )


def _id_list(
    value: object, name: str, lineno: int, what: str, errors: ErrorCollector
) -> list[str] | None:
    if not isinstance(value, list):
        errors.add(f"{name} line {lineno}: {what} must be a list of item ids")
        return None
    for pos, item in enumerate(value, start=1):
        if not isinstance(item, str) or not item:
            errors.add(
                f"{name} line {lineno}: {what}, position {pos}: {item!r} is not an item id; "
                "ids are non-empty strings"
            )
            return None
    return value


_JsonlLines = list[tuple[int, str, dict[str, list[str]], bool]]


def _parse_jsonl_run(path: PathLike, name: str) -> tuple[_JsonlLines, tuple[str, ...]]:
    """Parse every line; return them with the stage names in first-seen (pipeline) order."""
    errors = ErrorCollector()
    lines: list[tuple[int, str, dict[str, list[str]], bool]] = []
    seen: dict[str, int] = {}
    stage_names: dict[str, None] = {}
    for lineno, obj in _json_lines(path, name, errors):
        if not isinstance(obj, dict):
            errors.add(f"{name} line {lineno}: expected a JSON object with a 'query' key")
            continue
        qid = obj.get("query")
        if not isinstance(qid, str) or not qid:
            errors.add(f"{name} line {lineno}: 'query' must be a non-empty string")
            continue
        if qid in seen:
            errors.add(
                f"{name} line {lineno}: query {qid!r} already given at line {seen[qid]}; "
                "put each query on one line"
            )
            continue
        seen[qid] = lineno
        abstain = obj.get("abstain", False)
        if not isinstance(abstain, bool):
            errors.add(f"{name} line {lineno}: 'abstain' must be true or false")
            continue
        stages: dict[str, list[str]] = {}
        if "stages" in obj and "ranking" in obj:
            errors.add(f"{name} line {lineno}: give either 'stages' or 'ranking', not both")
            continue
        if "stages" in obj:
            raw_stages = obj["stages"]
            if not isinstance(raw_stages, dict):
                errors.add(f"{name} line {lineno}: 'stages' must map stage names to id lists")
                continue
            for sname, ids in raw_stages.items():
                checked = _id_list(ids, name, lineno, f"stage {sname!r}", errors)
                if checked is not None:
                    stages[sname] = checked
        elif "ranking" in obj:
            checked = _id_list(obj["ranking"], name, lineno, "'ranking'", errors)
            if checked is not None:
                stages["default"] = checked
        elif not abstain:
            errors.add(
                f"{name} line {lineno}: no 'stages' or 'ranking' for query {qid!r}; "
                'give the ranked ids, or "abstain": true'
            )
            continue
        stage_names.update(dict.fromkeys(stages))
        lines.append((lineno, qid, stages, abstain))
    errors.raise_if_any()
    if not lines:
        raise _empty_file(name, 'one JSON object per line, e.g. {"query": "q1", "ranking": [...]}')
    return lines, tuple(stage_names)


def _read_jsonl_run(path: PathLike, name: str, *, dedup: str, stage: str | None) -> Run:
    lines, all_stages = _parse_jsonl_run(path, name)
    if stage is None:
        if len(all_stages) > 1:
            raise EngineInputError(
                [
                    f"{name}: the run has several stages ({', '.join(all_stages)}); choose one "
                    "with --stage NAME (stage=...)"
                ]
            )
        stage = all_stages[0] if all_stages else "default"
    elif stage not in all_stages:
        raise EngineInputError(
            [
                f"{name}: no stage {stage!r} in the run; its stages are "
                f"{', '.join(all_stages) or '(none)'}"
            ]
        )
    return _jsonl_stage(lines, all_stages, name, stage=stage, dedup=dedup)


def _jsonl_stage(
    lines: _JsonlLines, all_stages: tuple[str, ...], name: str, *, stage: str, dedup: str
) -> Run:
    chosen = stage
    errors = ErrorCollector()
    rankings: dict[str, list[str]] = {}
    abstained: set[str] = set()
    removed = 0
    for lineno, qid, stages, abstain in lines:
        if abstain:
            abstained.add(qid)
        if chosen not in stages:
            if not abstain:
                errors.add(
                    f"{name} line {lineno}: query {qid!r} has no stage {chosen!r} (it has "
                    f"{', '.join(sorted(stages)) or 'none'}); give every query every stage, "
                    "an empty list if need be"
                )
            rankings[qid] = []
            continue
        first_at: dict[str, int] = {}
        kept: list[str] = []
        for pos, docid in enumerate(stages[chosen], start=1):
            if docid in first_at:
                if dedup == "first":
                    removed += 1
                    continue
                errors.add(
                    f"{name} line {lineno}: duplicate id {docid!r} at position {pos} of "
                    f"stage {chosen!r} for query {qid!r} (first at position {first_at[docid]}); "
                    "pass --dedup first to keep the first occurrence"
                )
                continue
            first_at[docid] = pos
            kept.append(docid)
        rankings[qid] = kept
    errors.raise_if_any()
    run = Run.from_mapping(rankings, dedup=dedup, source=name, abstained=frozenset(abstained))
    return _with(run, stage=chosen, stages=all_stages, duplicates_removed=removed)


# --------------------------------------------------------------------------- statuses, maps


@dataclass(frozen=True)
class Statuses:
    """Review statuses (and optional evidence conditions) by query id."""

    statuses: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, list[list[str]]] = field(default_factory=dict)
    source: str = "statuses"


def check_evidence(
    qid: str, value: object, where: str, errors: ErrorCollector
) -> list[list[str]] | None:
    """Validate one evidence condition: a non-empty list of non-empty AND-groups of ids."""
    if not isinstance(value, list) or not value:
        errors.add(
            f"{where}: evidence for query {qid!r} must be a non-empty list of groups, "
            'e.g. [["a", "b"], ["c"]] for (a AND b) OR c'
        )
        return None
    groups: list[list[str]] = []
    for g in value:
        if not isinstance(g, list) or not g or not all(isinstance(i, str) and i for i in g):
            errors.add(
                f"{where}: evidence group {g!r} of query {qid!r} must be a non-empty list of "
                "item ids"
            )
            return None
        groups.append(list(g))
    return groups


def read_statuses(path: PathLike) -> Statuses:
    """Read ``{"query": ..., "status": "relevant"|"no_answer"|"unreviewed",
    "evidence": [[...], ...]}`` lines (evidence optional)."""
    name = _name(path)
    errors = ErrorCollector()
    statuses: dict[str, str] = {}
    evidence: dict[str, list[list[str]]] = {}
    seen: dict[str, int] = {}
    count = 0
    for lineno, obj in _json_lines(path, name, errors):
        count += 1
        where = f"{name} line {lineno}"
        if not isinstance(obj, dict):
            errors.add(f"{where}: expected a JSON object with 'query' and 'status'")
            continue
        qid, status = obj.get("query"), obj.get("status")
        if not isinstance(qid, str) or not qid:
            errors.add(f"{where}: 'query' must be a non-empty string")
            continue
        if qid in seen:
            errors.add(f"{where}: query {qid!r} already given at line {seen[qid]}")
            continue
        seen[qid] = lineno
        if status not in STATUSES:
            errors.add(f"{where}: status {status!r} is not one of {', '.join(STATUSES)}")
            continue
        statuses[qid] = str(status)
        if obj.get("evidence") is not None:
            groups = check_evidence(qid, obj["evidence"], where, errors)
            if groups is not None:
                evidence[qid] = groups
    errors.raise_if_any()
    if count == 0:
        raise _empty_file(name, 'lines like {"query": "q1", "status": "relevant"}')
    return Statuses(statuses, evidence, name)


def read_mapping(path: PathLike) -> dict[str, str]:
    """Read a unit map: ``fine<TAB>coarse`` per line (``#`` comments, blank lines skipped).

    A fine id listed twice is an error, even with the same coarse id.
    """
    name = _name(path)
    errors = ErrorCollector()
    mapping: dict[str, str] = {}
    first: dict[str, int] = {}
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if errors.full:
                errors.truncated = True
                break
            line = raw.rstrip(b"\r\n")
            if not line.strip() or line.lstrip().startswith(b"#"):
                continue
            text = _decode(line, name, lineno, errors)
            if text is None:
                continue
            parts = text.split("\t")
            if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
                errors.add(
                    f"{name} line {lineno}: expected 'fine<TAB>coarse', found {len(parts)} "
                    "tab-separated field(s); separate the two ids with one tab"
                )
                continue
            fine, coarse = parts[0].strip(), parts[1].strip()
            if fine in first:
                errors.add(
                    f"{name} line {lineno}: fine id {fine!r} already mapped at line "
                    f"{first[fine]}; map each fine id once"
                )
                continue
            first[fine] = lineno
            mapping[fine] = coarse
    errors.raise_if_any()
    if not mapping:
        raise _empty_file(name, "lines 'fine<TAB>coarse'")
    return mapping
