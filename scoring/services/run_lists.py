"""A run's ranked lists as the import holds them: item ids in rank order, one Arrow
string array per stage (or per piece), read with bounded memory and encoded for storage
without a Python object per id.

Reading: a large TREC run is read by the engine's reader a piece at a time
(``TrecPieces``: whole queries per piece, ``CHUNK_BYTES`` of file each), so that only one
piece's columns are ever held while it is validated and sorted; what is kept of a piece
is its ids in rank order (~12 bytes an id). ``import_run`` on PostgreSQL stores each
piece's lists before reading the next; ``read_rankings`` joins the pieces into one stage.
A TREC query's ranking depends on its own lines only, so the pieces give what the whole
file gives, provided no query's lines are split between pieces. When they are (a file not
grouped by query), or a piece is refused, the file is read whole (``ReadWhole``): its
refusal then names the file and its line numbers, as always. The file's sha256 is
computed on the same pass. This module imports numpy and pyarrow: ``import_run`` imports
it when it runs.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import verity_eval as engine

from ._common import ReadWhole, file_sha256
from .errors import RunImportError

#: Pieces of about this many bytes of a TREC file (~1M lines of a typical run) are read
#: at a time; a file no larger is read whole.
CHUNK_BYTES = 16 << 20


@dataclass
class StageRankings:
    """One stage's rankings: ``ids[offsets[j]:offsets[j+1]]`` is query ``qids[j]``'s
    ranking, best first (the engine's order, dedup already applied)."""

    name: str
    order: str
    qids: list[str]
    offsets: np.ndarray  # int64, len(qids) + 1
    ids: pa.ChunkedArray
    abstained: frozenset[str] = frozenset()
    duplicates_removed: int = 0

    @classmethod
    def of(cls, run: engine.Run) -> StageRankings:
        ordered = run.docids.take(pa.array(run.perm, type=pa.int64()))
        if isinstance(ordered, pa.Array):
            ordered = pa.chunked_array([ordered], type=pa.string())
        return cls(
            name=run.stage or "default",
            order=run.order,
            qids=list(run.qids),
            offsets=np.asarray(run.offsets, dtype=np.int64),
            ids=ordered,
            abstained=run.abstained,
            duplicates_removed=run.duplicates_removed,
        )

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def batches(self, keep: np.ndarray, size: int) -> Iterator[ListBatch]:
        """The kept queries' rankings (``keep``: a mask over ``qids``), ``size`` queries
        at a time, in query order."""
        for j0 in range(0, len(self.qids), size):
            j1 = min(j0 + size, len(self.qids))
            kept = np.flatnonzero(keep[j0:j1]) + j0
            if kept.size == 0:
                continue
            lo, hi = int(self.offsets[j0]), int(self.offsets[j1])
            if kept.size == j1 - j0:
                ids = self.ids.slice(lo, hi - lo).combine_chunks()
                offsets = self.offsets[j0 : j1 + 1] - lo
            else:
                lengths = self.offsets[kept + 1] - self.offsets[kept]
                ids = self.ids.take(pa.array(_ranges(self.offsets[kept], lengths)))
                ids = ids.combine_chunks() if isinstance(ids, pa.ChunkedArray) else ids
                offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            qids = [self.qids[j] for j in kept]
            yield ListBatch(qids, offsets, ids, [q in self.abstained for q in qids])


@dataclass
class ListBatch:
    """Consecutive rankings of one stage: ``ids[offsets[i]:offsets[i+1]]`` is
    ``qids[i]``'s."""

    qids: list[str]
    offsets: np.ndarray
    ids: pa.Array
    abstained: list[bool]

    def __len__(self) -> int:
        return int(self.offsets[-1])

    def lists(self) -> list[list[str]]:
        flat = self.ids.to_pylist()
        return [flat[a:b] for a, b in pairwise(self.offsets.tolist())]

    def json_bodies(self, separator: str, *, ascii_only: bool) -> list[str] | None:
        """Each ranking as the inside of its JSON array (``"a","b"``; ``""`` for an empty
        one), built in Arrow; ``None`` when an id holds a character that JSON escapes
        (``"``, ``\\``, a control character) or, with ``ascii_only``, any non-ASCII one:
        the caller then encodes those lists one by one."""
        data = _value_bytes(self.ids)
        unsafe = (data < 0x20) | (data == 0x22) | (data == 0x5C)
        if ascii_only:
            unsafe |= data > 0x7E
        if bool(unsafe.any()):
            return None
        quoted = pc.binary_join_element_wise('"', self.ids, '"', "")
        nested = pa.ListArray.from_arrays(pa.array(self.offsets, type=pa.int32()), quoted)
        bodies: list[str] = pc.binary_join(nested, separator).to_pylist()
        return bodies

    def pooled(
        self, depth: int, query_pks: dict[str, int]
    ) -> tuple[np.ndarray, pa.Array, np.ndarray]:
        """(query pk, item id, rank) of the first ``depth`` ids of each ranking whose query
        the collection holds, as three columns."""
        pks = np.array([query_pks.get(q, -1) for q in self.qids], dtype=np.int64)
        lengths = np.diff(self.offsets)
        take = np.where(pks >= 0, np.minimum(lengths, max(depth, 0)), 0)
        rows = _ranges(self.offsets[:-1], take)
        ranks = rows - np.repeat(self.offsets[:-1], take) + 1
        return np.repeat(pks, take), self.ids.take(pa.array(rows)), ranks


class DistinctIds:
    """The distinct item ids of every batch stored, gathered as the batches go by: each
    batch's own distinct ids are kept, and merged whenever they pile up to four times what
    the last merge left, so that memory stays near the run's distinct ids."""

    def __init__(self) -> None:
        self.parts: list[pa.Array] = []
        self.merged = 0
        self.pending = 0

    def add(self, ids: pa.Array) -> None:
        part = pc.unique(ids).cast(pa.large_string())
        self.parts.append(part)
        self.pending += len(part)
        if self.pending > 4 * max(self.merged, 100_000):
            self._merge()

    def _merge(self) -> None:
        if len(self.parts) > 1:
            self.parts = [pc.unique(pa.concat_arrays(self.parts))]
        self.merged = len(self.parts[0]) if self.parts else 0
        self.pending = self.merged

    def missing_from(self, known: list[str]) -> int:
        """How many of the distinct ids are not in ``known``."""
        self._merge()
        if not self.parts:
            return 0
        found = pc.is_in(self.parts[0], value_set=pa.array(known, type=self.parts[0].type))
        return int(len(found) - pc.sum(found).as_py()) if len(found) else 0


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])``, vectorised."""
    total = int(lengths.sum())
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)


def _value_bytes(arr: pa.Array) -> np.ndarray:
    """The UTF-8 bytes of every string of ``arr``, back to back (no copy)."""
    if len(arr) == 0:
        return np.zeros(0, dtype=np.uint8)
    large = pa.types.is_large_string(arr.type)
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64 if large else np.int32)
    lo, hi = int(offsets[arr.offset]), int(offsets[arr.offset + len(arr)])
    if data_buf is None:
        return np.zeros(0, dtype=np.uint8)
    return np.frombuffer(data_buf, dtype=np.uint8)[lo:hi]


def read_rankings(
    path: Path, *, order: str, dedup: str, pieces: bool = True
) -> tuple[list[StageRankings], str]:
    """Every stage of the run file and the file's sha256, a large TREC file in pieces
    unless ``pieces`` is false; a file the engine refuses raises ``RunImportError`` with
    its messages (file name, line numbers)."""
    if pieces and in_pieces(path):
        trec = TrecPieces(path, order=order, dedup=dedup)
        try:
            parts = list(trec)
        except ReadWhole:
            pass
        else:
            return [trec.joined(parts)], trec.sha256
    try:
        runs = engine.read_run_stages(path, order=order, dedup=dedup)
    except engine.EngineInputError as exc:
        raise RunImportError(
            f"{path.name}: the run was refused; nothing was imported.", exc.errors
        ) from None
    except engine.EngineError as exc:
        raise RunImportError(str(exc)) from None
    stages = []
    while runs:  # each stage's columns go as soon as its ids are taken
        stages.append(StageRankings.of(runs.pop(0)))
    return stages, file_sha256(path)


def in_pieces(path: Path) -> bool:
    """True for a TREC run large enough to be read a piece at a time."""
    return path.stat().st_size > CHUNK_BYTES and not _looks_jsonl(path)


def _looks_jsonl(path: Path) -> bool:
    """The engine's format detection (``read_run_stages``): a JSON Lines name or a
    first character ``{``."""
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        return True
    with path.open("rb") as fh:
        return fh.read(4096).lstrip().startswith(b"{")


class TrecPieces:
    """A TREC run's pieces as ``StageRankings``, read as they are iterated (iterating
    raises ``ReadWhole`` when the file must be read whole). Once all are read:
    ``sha256`` of the file, ``order`` as the reader records it, ``duplicates_removed``."""

    def __init__(self, path: Path, *, order: str, dedup: str) -> None:
        self.path, self.order, self.dedup = path, order, dedup
        self.sha256 = ""
        self.duplicates_removed = 0

    def __iter__(self) -> Iterator[StageRankings]:
        digest = hashlib.sha256()
        seen: set[str] = set()
        with tempfile.TemporaryDirectory(prefix="verity-run-") as tmp:
            piece = Path(tmp) / "piece.trec"
            for chunk in _query_pieces(self.path, digest):
                piece.write_bytes(chunk)
                del chunk
                try:
                    (run,) = engine.read_run_stages(
                        piece, order=self.order, dedup=self.dedup, fmt="trec"
                    )
                except engine.EngineError:
                    raise ReadWhole from None
                if not seen.isdisjoint(run.qids):
                    raise ReadWhole  # a query's lines are in two pieces
                seen.update(run.qids)
                part = StageRankings.of(run)
                del run
                self.order = part.order
                self.duplicates_removed += part.duplicates_removed
                yield part
        if not seen:
            raise ReadWhole  # no data line: the whole read says so
        self.sha256 = digest.hexdigest()

    def joined(self, parts: list[StageRankings]) -> StageRankings:
        lengths = [np.diff(part.offsets) for part in parts]
        return StageRankings(
            name="default",
            order=self.order,
            qids=[q for part in parts for q in part.qids],
            offsets=np.concatenate([[0], np.cumsum(np.concatenate(lengths))]).astype(np.int64),
            ids=pa.chunked_array([c for part in parts for c in part.ids.chunks], type=pa.string()),
            duplicates_removed=self.duplicates_removed,
        )


def _query_pieces(path: Path, digest: hashlib._Hash) -> Iterator[bytes | memoryview]:
    """The file in pieces of about ``CHUNK_BYTES``, each ending where one query's lines
    end and the next query's begin; every byte read goes into ``digest``."""
    rest = b""
    with path.open("rb") as fh:
        while block := fh.read(CHUNK_BYTES):
            digest.update(block)
            buf = rest + block if rest else block
            del block
            cut = _last_query_start(buf)
            if cut == 0:
                if len(buf) > 4 * CHUNK_BYTES:
                    raise ReadWhole  # one query's lines fill several pieces
                rest = buf
                continue
            yield memoryview(buf)[:cut]
            rest = buf[cut:]
    if rest:
        yield rest


def _last_query_start(buf: bytes) -> int:
    """Where the lines of the last query with a complete line in ``buf`` begin (0 when
    they begin at the start): cutting there keeps that query whole for the next piece.

    A gallop back from the last line, then a binary search, each probe reading one line:
    a query may have a million lines. Any line start is a safe cut (a query found in two
    pieces sends the file to the whole read); this one is where the query changes."""
    end = buf.rfind(b"\n") + 1
    if end == 0:
        return 0
    hi = _line_start(buf, end - 1)  # a line of the last query
    qid = _qid_at(buf, hi)
    if qid is None:
        return hi
    step = 1 << 12
    while True:  # find a line of another query before it
        if hi - step <= 0:
            if _qid_at(buf, 0) == qid:
                return 0
            lo = 0
            break
        probe = _line_start(buf, hi - step)
        if _qid_at(buf, probe) != qid:
            lo = probe
            break
        hi, step = probe, step * 2
    while True:  # the line at lo is another query's, the line at hi the last query's
        after_lo = buf.find(b"\n", lo) + 1
        if after_lo >= hi:
            return hi
        mid = _line_start(buf, (after_lo + hi) // 2)
        if _qid_at(buf, mid) == qid:
            hi = mid
        else:
            lo = mid


def _line_start(buf: bytes, pos: int) -> int:
    return buf.rfind(b"\n", 0, pos) + 1


def _qid_at(buf: bytes, start: int) -> bytes | None:
    """The first field of the line starting at ``start`` (``None`` for a blank line)."""
    end = buf.find(b"\n", start)
    fields = buf[start : end if end >= 0 else len(buf)].split(None, 1)
    return fields[0] if fields else None
