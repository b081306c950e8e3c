"""Reading a run whatever its format: detect TREC or JSON Lines, then read one stage
(:func:`read_run`) or every stage (:func:`read_run_stages`)."""

from __future__ import annotations

from pathlib import Path

from ..errors import InvalidParameterError
from ..params import DEDUP_POLICIES
from ..tables import Run
from .common import PathLike, _name, _sniff_delimiter, _with
from .jsonl_run import _jsonl_stage, _parse_jsonl_run, _read_jsonl_run
from .trec_run import _read_trec_run_fast, _read_trec_run_slow


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
