"""Reading unit maps (``fine<TAB>coarse`` per line)."""

from __future__ import annotations

from ..errors import ErrorCollector
from .common import PathLike, _bad_id, _decode, _empty_file, _name


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
            where = f"{name} line {lineno}"
            if _bad_id(fine, where, "fine id", errors) or _bad_id(
                coarse, where, "coarse id", errors
            ):
                continue
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
