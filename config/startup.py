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
import importlib.util
import operator
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

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
    if _first_collection in gc.callbacks:
        gc.callbacks.remove(_first_collection)


def _first_collection(phase: str, info: dict[str, Any]) -> None:
    """A collection while paused: start-up ended without resume_gc (a shell, say).

    A Python callback must not outlive the pause: a signal handler that raises (the
    worker's second SIGTERM raises SystemExit to stop the job) runs at the next bytecode,
    and an exception raised inside a gc callback is printed and ignored, so the job went
    on (tests/jobs/test_signals.py caught it). Removing the callback while the collector
    calls it would skip the next one in the list, so it is replaced in place by a C
    function that takes the same arguments and runs no bytecode."""
    global _paused
    if phase == "stop" and _paused:
        _paused = False
        gc.set_threshold(*DEFAULT_THRESHOLD)
        callbacks = gc.callbacks
        if _first_collection in callbacks:
            callbacks[callbacks.index(_first_collection)] = operator.is_


# What a library imports only to learn whether it is installed, and Verity does not use
# through it, hidden from that import (any other module imports them as usual):
# - rest_framework.compat: psycopg (~70 modules, even on SQLite) by way of
#   django.contrib.postgres.fields, for serializer fields of PostgreSQL-only model fields
#   (Verity's models have none: tests/test_startup.py); PyYAML for DRF's own OpenAPI
#   renderer (drf-spectacular's YAML output imports it itself); requests for DRF's
#   RequestsClient; Pygments and Markdown for the browsable API (Verity renders JSON).
# - django.test.utils (drf-spectacular imports the test client at import, for the mock
#   requests of schema generation): Jinja2, for the ``require_jinja2`` test decorator.
# ~0.1 s of every process's start-up.
HIDDEN_FROM = {
    "rest_framework.compat": (
        "django.contrib.postgres.fields",
        "yaml",
        "requests",
        "pygments",
        "markdown",
    ),
    "django.test.utils": ("jinja2",),
}


class _HidingFinder:  # a meta path finder (not importlib.abc's: ~10 ms of imports)
    """Finds the modules of HIDDEN_FROM the usual way, and runs each with its optional
    modules unavailable (None in ``sys.modules``, as Python documents for a module that
    cannot be imported), so that it takes its 'not installed' branches."""

    def __init__(self) -> None:
        self.pending = dict(HIDDEN_FROM)

    def find_spec(self, name: str, path: Any, target: Any = None) -> ModuleSpec | None:
        hidden = self.pending.pop(name, None)
        if hidden is None:
            return None
        if not self.pending:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)  # this finder does not see its own look-up
        if spec is None or spec.loader is None:  # pragma: no cover - both are requirements
            return spec
        spec.loader = _HidingLoader(spec.loader, hidden)
        return spec


class _HidingLoader:
    def __init__(self, loader: Any, hidden: tuple[str, ...]) -> None:
        self.loader = loader
        self.hidden = hidden

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        hidden = [name for name in self.hidden if name not in sys.modules]
        for name in hidden:
            sys.modules[name] = None  # type: ignore[assignment]
        try:
            self.loader.exec_module(module)
        finally:
            for name in hidden:
                if sys.modules.get(name, ...) is None:
                    del sys.modules[name]

    def __getattr__(self, attribute: str) -> Any:  # get_source, get_code, ...
        return getattr(self.loader, attribute)


def hide_optional_modules() -> None:
    """Called by the settings, before anything imports DRF or Django's test tools."""
    if any(isinstance(finder, _HidingFinder) for finder in sys.meta_path):
        return
    finder = _HidingFinder()
    for name in list(finder.pending):
        if name in sys.modules:  # too late for it
            del finder.pending[name]
    if finder.pending:
        sys.meta_path.insert(0, finder)
