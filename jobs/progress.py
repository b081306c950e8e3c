"""Progress of long operations: one small interface, three ways to show it.

Services that take long accept ``progress: Progress`` and call ``phase(name, total)``
when a phase starts and ``advance(n)`` as units of it are done. Nothing else: they never
know who watches.

- ``Progress()``: nobody watches (the default).
- ``TerminalProgress(stream)``: a one-line bar per phase, for a management command on a
  terminal; ``for_stream`` gives a silent one when the stream is not a TTY.
- ``JobProgress(job)``: for a job; the state goes to the ``jobs`` cache, never to the
  database. An import is one transaction, and on SQLite (one writer) a progress UPDATE
  from any connection would wait for it to commit; on PostgreSQL it would be invisible
  until then. A cache entry (a file, or a Redis key) is visible at once on both. Writes
  are throttled to a few per second, and the same entry is the worker's heartbeat.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from django.core.cache import caches
from django.utils import timezone

log = logging.getLogger(__name__)

#: At most one progress write per this many seconds (a phase change always writes).
WRITE_EVERY = 0.25
#: The share of what is left of a job that each new phase stands for in its percent.
PHASE_SHARE = 0.5
#: Progress entries outlive any job by far; a finished job's entry is deleted.
ENTRY_TTL = 7 * 24 * 3600


class Progress:
    """Progress nobody watches; the base of the others."""

    def __init__(self) -> None:
        self.name = ""
        self.total: int | None = None
        self.done = 0

    def phase(self, name: str, total: int | None = None) -> None:
        self.name, self.total, self.done = name, total, 0
        self._changed(phase_started=True)

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._changed(phase_started=False)

    def _changed(self, *, phase_started: bool) -> None:
        pass


class TerminalProgress(Progress):
    """``label [#####    ]  40% (400/1000)`` redrawn on one line; a phase without a total
    prints its name once."""

    WIDTH = 25

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self.stream = stream
        self._shown = -1
        self._open = False

    @classmethod
    def for_stream(cls, stream: Any) -> Progress:
        """A bar on a terminal; silence when ``stream`` is a pipe or a file."""
        isatty = getattr(stream, "isatty", None)
        return cls(stream) if isatty is not None and isatty() else Progress()

    def _changed(self, *, phase_started: bool) -> None:
        if phase_started:
            self._end_line()
            self._shown = -1
            if not self.total:
                self._write(f"{self.name} …\n")
                return
        if not self.total:
            return
        pct = min(100, self.done * 100 // self.total)
        if pct == self._shown:
            return
        self._shown = pct
        bar = "#" * (pct * self.WIDTH // 100)
        self._write(f"\r{self.name} [{bar:<{self.WIDTH}}] {pct:3d}% ({self.done}/{self.total})")
        self._open = True
        if self.done >= self.total:
            self._end_line()

    def _end_line(self) -> None:
        if self._open:
            self._write("\n")
            self._open = False

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def _cache() -> Any:
    return caches["jobs"]


def progress_key(job_key: Any) -> str:
    return f"verity:job:{job_key}:progress"


def read_progress(job_key: Any) -> dict[str, Any] | None:
    """The last progress a running job reported: phase, done, total, at (epoch seconds);
    ``None`` also when the cache (Redis, with the RQ backend) cannot be reached, so that a
    job's page, and failing a job because its queue is down, still work."""
    try:
        return _cache().get(progress_key(job_key))
    except Exception:
        log.warning("could not read job progress from the jobs cache", exc_info=True)
        return None


def cancel_key(job_key: Any) -> str:
    return f"verity:job:{job_key}:cancel"


def request_cancel(job_key: Any, *, by: int | None, via: str) -> None:
    """Ask the worker running the job to stop it: it reads this at its next progress
    report (or heartbeat) and when it would finish. In the cache, not the database: on
    SQLite the job's own transaction holds the one write lock until it ends."""
    _cache().set(cancel_key(job_key), {"by": by, "via": via}, ENTRY_TTL)


def read_cancel(job_key: Any) -> dict[str, Any] | None:
    """Who asked for the running job to be cancelled (``by``: a user id or None, ``via``),
    or None when nobody did."""
    try:
        return _cache().get(cancel_key(job_key))
    except Exception:
        log.warning("could not read a job's cancel request from the jobs cache", exc_info=True)
        return None


class JobCancelled(Exception):
    """Raised in a running job's body when someone cancelled it: its transaction rolls
    back, and ``jobs.runner`` records who cancelled it."""

    def __init__(self, request: dict[str, Any]) -> None:
        super().__init__("the job was cancelled")
        self.request = request


def forget_progress(job_key: Any) -> None:
    try:
        _cache().delete_many([progress_key(job_key), cancel_key(job_key)])
    except Exception:  # an entry left behind expires (ENTRY_TTL)
        log.warning("could not delete job progress from the jobs cache", exc_info=True)


class JobProgress(Progress):
    """A job's progress, written to the ``jobs`` cache at most every ``WRITE_EVERY``
    seconds. ``beat()`` rewrites it with a fresh time: the heartbeat that tells a live
    worker from a dead one (``jobs.runner`` calls it from a thread)."""

    def __init__(self, job_key: Any) -> None:
        super().__init__()
        self.job_key = job_key
        self.key = progress_key(job_key)
        self._lock = threading.Lock()
        self._written = 0.0
        self.cancelled: dict[str, Any] | None = None
        self._floor = self._ceiling = 0.0

    def _changed(self, *, phase_started: bool) -> None:
        now = time.monotonic()
        if phase_started or now - self._written >= WRITE_EVERY:
            self.beat()
        self.stop_if_cancelled()

    def stop_if_cancelled(self) -> None:
        """Raise ``JobCancelled`` in the job's thread once a cancel was requested (the
        heartbeat thread and every progress write look for it)."""
        if self.cancelled is not None:
            raise JobCancelled(self.cancelled)

    def phase(self, name: str, total: int | None = None) -> None:
        # The share of the job this phase stands for: half of what is left. A job does
        # not know its phases in advance, so the whole job's percent cannot be exact; it
        # is monotonic instead, never going back when a phase starts, and 100 when done.
        self._floor = self._percent()
        self._ceiling = self._floor + (100.0 - self._floor) * PHASE_SHARE
        super().phase(name, total)

    def _percent(self) -> float:
        """The whole job's percent so far: the phases before, and this one's share of it
        by its own count."""
        if not self.total:
            return self._floor
        part = min(1.0, max(0.0, self.done / self.total))
        return self._floor + (self._ceiling - self._floor) * part

    def beat(self) -> None:
        self.cancelled = self.cancelled or read_cancel(self.job_key)
        with self._lock:
            entry = {
                "phase": self.name,
                "done": self.done,
                "total": self.total,
                "percent": round(self._percent(), 1),
                "at": timezone.now().timestamp(),
            }
            _cache().set(self.key, entry, ENTRY_TTL)
            self._written = time.monotonic()


class _Unterminated:
    """A management command's ``self.stderr`` without the newline ``OutputWrapper`` adds to
    every write (it would break the bar's one-line redraw); still the command's stream, so
    ``call_command(..., stderr=...)`` captures it."""

    def __init__(self, wrapper: Any) -> None:
        self.wrapper = wrapper

    def write(self, text: str) -> None:
        self.wrapper.write(text, ending="")

    def flush(self) -> None:
        self.wrapper.flush()

    def isatty(self) -> bool:
        return bool(self.wrapper.isatty())


def command_progress(command: Any, *, quiet: bool = False) -> Progress:
    """Progress bars on a management command's stderr when that is a terminal; silent
    with ``quiet``, in a pipe, or in a file."""
    if quiet:
        return Progress()
    return TerminalProgress.for_stream(_Unterminated(command.stderr))


_COUNTED = re.compile(r"^(?P<what>.+): (?P<done>\d+)/(?P<total>\d+)$")


def from_lines(progress: Progress, prefix: str = "storing ") -> Callable[[str], None]:
    """A callback for services that report progress as lines ("judgments: 5000/9260"):
    each new name starts a phase of ``progress``; the counts advance it."""
    current = [""]

    def line(text: str) -> None:
        m = _COUNTED.match(text.strip())
        if m is None:
            return
        if m["what"] != current[0]:
            current[0] = m["what"]
            progress.phase(f"{prefix}{m['what']}", int(m["total"]))
        progress.advance(int(m["done"]) - progress.done)

    return line
