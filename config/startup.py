"""A process's start-up runs without the cyclic garbage collector.

Start-up (settings, apps and models, the URL configuration and the views it imports)
allocates some 190,000 container objects, most of which live as long as the process;
with the collector's default thresholds that is ~270 collections, two of them full:
``manage.py check`` took 0.90 s of CPU with them, 0.63 s without (``bench/README.md``).
So the entry points (``manage.py``, ``config/wsgi.py``, ``config/asgi.py``) call
:func:`pause_gc` before Django loads, and start-up ends with :func:`resume_gc`: at the
end of the URL configuration (the last large import: the system checks of every
management command, ``jobs_worker`` included, load it) and at the end of the web entry
points. ``resume_gc`` freezes what start-up made (``gc.freeze()``: those objects are not
scanned again, and a forked web worker does not touch their pages) and turns the
collector back on, as Instagram did and as the ``gc`` documentation suggests for
processes that fork.

A process that never loads the URL configuration (``manage.py shell``, ``dbshell``)
must not run without a collector: the pause is a threshold too high for start-up to
reach, not ``gc.disable()``, and the first collection it triggers ends the pause. So a
missed ``resume_gc`` costs one late collection, never a process that grows without
bound.
"""

from __future__ import annotations

import gc
from typing import Any

DEFAULT_THRESHOLD = (700, 10, 10)  # CPython's defaults, restored by resume_gc
# Objects allocated (net) before a first collection: start-up stays well below it.
PAUSED_THRESHOLD = 1_000_000

_paused = False


def pause_gc() -> None:
    """Hold the cyclic collector off until :func:`resume_gc` (or a first collection)."""
    global _paused
    if _paused:
        return
    _paused = True
    gc.set_threshold(PAUSED_THRESHOLD, *DEFAULT_THRESHOLD[1:])
    if _first_collection not in gc.callbacks:
        gc.callbacks.append(_first_collection)


def resume_gc() -> None:
    """End of start-up: freeze what it made, and collect as usual from now on. Does
    nothing unless :func:`pause_gc` paused the collector (in tests, for one)."""
    global _paused
    if not _paused:
        return
    _paused = False
    gc.set_threshold(*DEFAULT_THRESHOLD)
    gc.freeze()


def _first_collection(phase: str, info: dict[str, Any]) -> None:
    """A collection while paused: start-up ended without resume_gc (a shell, say). The
    callback stays registered (removing it while the collector calls it would skip the
    next one) and does nothing once the pause is over."""
    global _paused
    if phase == "stop" and _paused:
        _paused = False
        gc.set_threshold(*DEFAULT_THRESHOLD)
