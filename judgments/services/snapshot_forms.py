"""The latest version's canonical form, kept as a file so that the next freeze hashes it
in O(bytes) and reads from the database only the queries that changed.

The form after its header is, for each section, each query's part of it in QID order
(``snapshots.SECTIONS``). A ``Form`` is that body and an index of it: per query in QID
order, its pk, the length of its part of each section and its block's counts. A freeze
*splices* it: the runs of unchanged queries are hashed (and written to the next form's
file) straight from the old body, the changed queries' blocks go in at their QID, the
blocks of changed and deleted queries go out. The next form's file is written on a second
thread, and named once written (``keep``): the freeze returns with the hash without
waiting for it, a later ``load`` in this process waits for it (``settle``), and another
process that does not find it yet reads the database instead.

The files live in ``settings.VERITY_FORM_DIR/<collection pk>/``, one body and one index
per version, named by the version's pk, creation time and content hash; only the latest
version's are kept. They are a cache: deleting them is safe (the next freeze of the
collection reads the latest version's blocks from the database instead, as the first
freeze after an upgrade does, and writes them again). A form is trusted only when its
name matches the latest version, its sizes and counts match the version's, and the
sha256 of its header and body is the version's content hash (checked on a second thread
while the freeze works: ``hashlib`` releases the GIL; skipped for a file this process
wrote and that is, by device, inode, size and change times, untouched since); a freeze
that finds otherwise discards it and reads the database. Besides, the blocks the
database says the latest version holds of the changed queries must be exactly those the
index has, or the form is not used. A rolled-back freeze may leave a file behind, but
no committed version has its name (its pk and creation time are the rolled-back row's),
and the next freeze that keeps a form removes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mmap
import os
import threading
import time
import uuid
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from django.conf import settings
from django.db import transaction

from ..snapshots import SECTIONS, QueryBlock, frozen_qid

log = logging.getLogger(__name__)

# The forms this process wrote, as they were on disk then: (device, inode, size, mtime_ns,
# ctime_ns) by path. Such a form, unchanged since, is not hashed again when read back;
# any other (another process's, or touched since) is.
_written: dict[str, tuple[int, ...]] = {}
_pending: list[threading.Thread] = []  # ``keep``s still waiting for a body to be written
_lock = threading.Lock()


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


FORMAT = 1
COUNTS = ("n_judgments", "n_model_labels", "n_unjudged", "n_assessments", "n_unresolved")
_S = len(SECTIONS)


@dataclass
class Form:
    """A canonical form's header and body, and the index of its body by query."""

    header: bytes
    body: Any  # bytes or a read-only mmap
    pks: np.ndarray  # int64 [n], query pks in QID order
    lens: np.ndarray  # int64 [n, sections]
    counts: np.ndarray  # int64 [n, counts]
    _check: threading.Thread | None = field(default=None, repr=False)
    _digest: list[str] = field(default_factory=list, repr=False)

    @classmethod
    def of_blocks(cls, header: bytes, blocks: Iterable[Any]) -> Form:
        """The form of ``blocks`` (``snapshot_blocks.Block``s, any order)."""
        ordered = sorted(blocks, key=lambda b: b.lines.qid)
        parts = [b.lines.sections() for b in ordered]
        body = b"".join(p[s] for s in range(_S) for p in parts)
        return cls(
            header=header,
            body=body,
            pks=np.array([b.query_pk for b in ordered], dtype=np.int64),
            lens=np.array([[len(x) for x in p] for p in parts], dtype=np.int64).reshape(-1, _S),
            counts=np.array(
                [[getattr(b, name) for name in COUNTS] for b in ordered], dtype=np.int64
            ).reshape(-1, len(COUNTS)),
        )

    def __len__(self) -> int:
        return len(self.pks)

    def starts(self) -> np.ndarray:
        """The offset in the body of each query's part of each section."""
        if not len(self):
            return np.zeros((0, _S), dtype=np.int64)
        totals = self.lens.sum(axis=0)
        base = np.concatenate([[0], np.cumsum(totals)[:-1]])
        return base + np.cumsum(self.lens, axis=0) - self.lens

    def totals(self) -> dict[str, int]:
        return dict(zip(COUNTS, (int(x) for x in self.counts.sum(axis=0)), strict=True))

    def positions(self, query_pks: Iterable[int]) -> dict[int, int]:
        """Where the queries ``query_pks`` are in the form (those that are)."""
        wanted = np.fromiter(query_pks, dtype=np.int64)
        if not len(wanted) or not len(self):
            return {}
        at = np.flatnonzero(np.isin(self.pks, wanted))
        return dict(zip(self.pks[at].tolist(), at.tolist(), strict=True))

    def verify(self, content_hash: str) -> None:
        """Start checking that the form hashes to ``content_hash`` (see ``verified``)."""

        def check() -> None:
            digest = hashlib.sha256(self.header)
            digest.update(self.body)
            self._digest.append(digest.hexdigest())

        self._digest = [content_hash]
        self._check = threading.Thread(target=check, name="verity-form-check", daemon=True)
        self._check.start()

    def verified(self) -> bool:
        if self._check is None:
            return True
        self._check.join()
        return len(self._digest) == 2 and self._digest[0] == self._digest[1]

    def close(self) -> None:
        if isinstance(self.body, mmap.mmap):
            self.verified()  # the check reads the map
            with contextlib.suppress(BufferError):  # a view still held by a traceback
                self.body.close()


@dataclass
class Spliced:
    """The next form, hashed: its digest, index and (unnamed yet) body file, which a
    second thread may still be writing (``written``)."""

    digest: str
    header: bytes
    pks: np.ndarray
    lens: np.ndarray
    counts: np.ndarray
    path: Path | None
    writer: threading.Thread | None = field(default=None, repr=False)
    failed: list[OSError] = field(default_factory=list, repr=False)

    def totals(self) -> dict[str, int]:
        return dict(zip(COUNTS, (int(x) for x in self.counts.sum(axis=0)), strict=True))

    def written(self) -> bool:
        """Wait for the body file; False (and no file) if it could not be written."""
        if self.writer is not None:
            self.writer.join()
            self.writer = None
        if self.failed and self.path is not None:  # the form is a cache: no harm done
            log.warning("snapshot form not written to %s: %s", self.path.parent, self.failed[0])
            with contextlib.suppress(OSError):
                self.path.unlink()
            self.path = None
        return self.path is not None

    def discard(self) -> None:
        if self.written():
            with contextlib.suppress(OSError):
                self.path.unlink()  # type: ignore[union-attr]


def splice(
    old: Form, header: bytes, drop: Iterable[int], add: list[Any], directory: Path
) -> Spliced:
    """The form ``old`` without the queries at positions ``drop`` and with the blocks
    ``add`` (``snapshot_blocks.Block``s, not in ``old``) at their QIDs, under ``header``:
    hashed, and its body written to a new file in ``directory``. Reads the old body in a
    few large spans and costs O(bytes + changes), not a step per query."""
    n = len(old)
    keep = np.ones(n, dtype=bool)
    keep[np.fromiter(drop, dtype=np.int64)] = False
    kept = np.flatnonzero(keep)
    starts, lens = old.starts(), old.lens
    body = memoryview(old.body) if n else memoryview(b"")

    def qid_at(k: int) -> str:  # the QID of the k-th kept query
        i = int(kept[k])
        return frozen_qid(body[starts[i, 0] : starts[i, 0] + lens[i, 0]].tobytes())

    new = sorted(add, key=lambda b: b.lines.qid)
    kept_qids = _LazyKeys(len(kept), qid_at)
    at = [bisect_left(kept_qids, b.lines.qid) for b in new]  # kept queries before each
    # Cut the kept queries into runs contiguous in the old form, and at each insertion.
    cuts = set((np.flatnonzero(np.diff(kept) != 1) + 1).tolist()) | set(at) | {0, len(kept)}
    bounds = sorted(cuts)
    segments: list[tuple[int, int] | Any] = []  # (old start, old end) or a new block
    j = 0
    for lo, hi in zip(bounds, [*bounds[1:], None], strict=True):
        while j < len(new) and at[j] == lo:
            segments.append(new[j])
            j += 1
        if hi is not None and hi > lo:
            segments.append((int(kept[lo]), int(kept[hi - 1]) + 1))
    segments.extend(new[j:])

    parts = []
    for s in range(_S):
        for seg in segments:
            if isinstance(seg, tuple):
                a, b = seg
                part = body[starts[a, s] : starts[b - 1, s] + lens[b - 1, s]]
            else:
                part = seg.lines.sections()[s]
            if len(part):
                parts.append(part)
    path = directory / f"tmp-{uuid.uuid4().hex}.form"
    failed: list[OSError] = []

    def write(parts: list[Any]) -> None:  # a second thread: writes and hashlib free the GIL
        try:
            with open(path, "wb", buffering=0) as out:
                for part in parts:
                    _write(out, part)
        except OSError as e:
            failed.append(e)

    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        failed.append(e)
    # Not a daemon: a process that ends while it writes waits for it. The freeze does
    # not (``keep``): a first write into memory the machine never used before can take
    # several times as long as the hash. Its own list of the views: they keep the old
    # form's map open until the thread ends and lets go of its arguments.
    writer = None
    if not failed:
        writer = threading.Thread(target=write, args=(list(parts),), name="verity-form-write")
        writer.start()
    digest = hashlib.sha256(header)
    for part in parts:
        digest.update(part)
    parts.clear()
    pks, lens_new, counts = [], [], []
    for seg in segments:
        if isinstance(seg, tuple):
            a, b = seg
            pks.append(old.pks[a:b])
            lens_new.append(old.lens[a:b])
            counts.append(old.counts[a:b])
        else:
            pks.append(np.array([seg.query_pk], dtype=np.int64))
            lens_new.append(np.array([[len(x) for x in seg.lines.sections()]], dtype=np.int64))
            counts.append(np.array([[getattr(seg, c) for c in COUNTS]], dtype=np.int64))
    return Spliced(
        digest=digest.hexdigest(),
        header=header,
        pks=np.concatenate(pks) if pks else np.zeros(0, dtype=np.int64),
        lens=np.concatenate(lens_new) if lens_new else np.zeros((0, _S), dtype=np.int64),
        counts=np.concatenate(counts) if counts else np.zeros((0, len(COUNTS)), dtype=np.int64),
        path=path,
        writer=writer,
        failed=failed,
    )


class _LazyKeys:
    """A sequence whose items are computed when ``bisect`` asks for them."""

    def __init__(self, n: int, key: Any) -> None:
        self.n, self.key = n, key

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> Any:
        return self.key(k)


def _write(out: BinaryIO, part: Any) -> None:
    view = memoryview(part)
    while len(view):
        view = view[out.write(view) :]


def directory(collection_pk: int) -> Path:
    return Path(settings.VERITY_FORM_DIR) / str(collection_pk)


def _name(snapshot: Any) -> str:
    stamp = int(snapshot.created_at.timestamp() * 1_000_000)
    return f"v{snapshot.number}-{snapshot.pk}-{stamp}-{snapshot.content_hash}"


def load(snapshot: Any) -> Form | None:
    """The form of ``snapshot`` (the latest version) if its files are there and match
    it, its hash being checked on a second thread (``Form.verified``); else None."""
    settle()
    where = directory(snapshot.collection_id)
    name = _name(snapshot)
    try:
        with np.load(where / f"{name}.npz") as index:
            meta = json.loads(bytes(index["meta"]).decode())
            pks, lens, counts = index["pks"], index["lens"], index["counts"]
            header = bytes(index["header"])
        with open(where / f"{name}.form", "rb") as f:
            st = os.fstat(f.fileno())
            size = st.st_size
            body: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except FileNotFoundError:
        return None
    except Exception as e:
        log.warning("snapshot form %s/%s unreadable: %s", where, name, e)
        return None
    form = Form(header=header, body=body, pks=pks, lens=lens, counts=counts)
    totals = form.totals()
    expected = (
        meta.get("format") == FORMAT,
        lens.shape == (len(pks), _S) and counts.shape == (len(pks), len(COUNTS)),
        int(lens.sum()) == size,
        len(pks) == snapshot.n_queries,
        totals["n_judgments"] + totals["n_model_labels"] == snapshot.n_judgments,
        totals["n_unjudged"] == snapshot.n_unjudged,
        totals["n_assessments"] == snapshot.n_assessments,
        totals["n_unresolved"] == snapshot.n_unresolved,
    )
    if not all(expected):
        log.warning("snapshot form %s/%s does not match its version; not used", where, name)
        form.close()
        return None
    with _lock:
        known = _written.get(str(where / f"{name}.form"))
    if known != _identity(st):
        form.verify(snapshot.content_hash)
    return form


def keep(snapshot: Any, spliced: Spliced) -> None:
    """Name ``spliced`` as the form of ``snapshot`` (just created) once its body is
    written, on a second thread if it is still being written (``settle`` waits for it),
    and, once the freeze commits, remove the collection's forms of earlier versions and
    any left an hour ago by a freeze that did not commit."""
    if spliced.path is None:
        return
    where = directory(snapshot.collection_id)
    name = _name(snapshot)

    def name_it() -> None:
        if not spliced.written():
            return
        index = where / f"tmp-{uuid.uuid4().hex}.npz"
        try:
            np.savez(
                index,
                meta=np.frombuffer(json.dumps({"format": FORMAT}).encode(), dtype=np.uint8),
                header=np.frombuffer(spliced.header, dtype=np.uint8),
                pks=spliced.pks,
                lens=spliced.lens,
                counts=spliced.counts,
            )
            body = where / f"{name}.form"
            os.replace(spliced.path, body)  # type: ignore[arg-type]
            os.replace(index, where / f"{name}.npz")
            with _lock:
                for path in [p for p in _written if Path(p).parent == where]:  # earlier ones'
                    del _written[path]
                _written[str(body)] = _identity(body.stat())
        except OSError as e:
            log.warning("snapshot form of %s not kept: %s", name, e)
            spliced.discard()
            with contextlib.suppress(OSError):
                index.unlink()

    if spliced.writer is None:
        name_it()
    else:
        thread = threading.Thread(target=name_it, name="verity-form-keep")
        thread.start()
        with _lock:
            _pending[:] = [t for t in _pending if t.is_alive()] + [thread]
    number = snapshot.number

    def tidy() -> None:
        now = time.time()
        for path in where.iterdir():
            version = path.name.split("-", 1)[0]
            old = version.startswith("v") and version[1:].isdigit() and int(version[1:]) < number
            with contextlib.suppress(OSError):  # (a file being named meanwhile is gone)
                if old or (path.name.startswith("tmp-") and path.stat().st_mtime < now - 3600):
                    path.unlink()

    transaction.on_commit(tidy)


def settle() -> None:
    """Wait until the forms this process is writing are kept (or given up)."""
    with _lock:
        pending = list(_pending)
    for thread in pending:
        thread.join()
    with _lock:
        _pending[:] = [t for t in _pending if t.is_alive()]


def block_sections(form: Form, starts: np.ndarray, i: int) -> tuple[bytes, ...]:
    """The sections of the block at position ``i`` of ``form``."""
    return tuple(bytes(form.body[starts[i, s] : starts[i, s] + form.lens[i, s]]) for s in range(_S))


__all__ = ["Form", "QueryBlock", "Spliced", "block_sections", "keep", "load", "settle", "splice"]
