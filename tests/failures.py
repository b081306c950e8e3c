"""Failure injection for the all-or-nothing tests (tests/*/test_failures.py).

``fail_on`` replaces one database call of a service (a manager's ``bulk_create``, say)
with one that first counts the rows already written, to prove that writing had started,
and then raises ``InjectedFailure``. The test then checks that every table holds what it
held before (``table_counts``), undoes the patch, and runs the service again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps


class InjectedFailure(RuntimeError):
    """Raised by a patched database call: a crash in the middle of a service."""


def table_counts() -> dict[str, int]:
    """Rows per model, for every installed model."""
    return {m._meta.label: m._default_manager.count() for m in apps.get_models()}


@dataclass
class Injection:
    """What the patched call saw: the rows written when it failed, per model label."""

    seen: list[dict[str, int]] = field(default_factory=list)

    def written_before_failing(self, before: dict[str, int]) -> dict[str, int]:
        assert self.seen, "the patched call was never reached"
        return {k: v - before[k] for k, v in self.seen[0].items() if v != before[k]}


def fail_on(
    monkeypatch: pytest.MonkeyPatch, target: Any, name: str, *, after: int = 0
) -> Injection:
    """Make ``target.name(...)`` raise ``InjectedFailure`` after recording the counts; the
    first ``after`` calls go through."""
    injection = Injection()
    original = getattr(target, name)
    calls = [0]

    def boom(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] <= after:
            return original(*args, **kwargs)
        injection.seen.append(table_counts())
        raise InjectedFailure(f"injected failure in {name}")

    monkeypatch.setattr(target, name, boom)
    return injection


def assert_all_or_nothing(
    monkeypatch: pytest.MonkeyPatch,
    target: Any,
    name: str,
    action: Callable[[], Any],
    *,
    after: int = 0,
) -> Any:
    """Fail ``action`` at ``target.name`` (after ``after`` calls that go through) once it
    has written something; check that no row is left; then run it again unpatched and
    return what it returns."""
    before = table_counts()
    injection = fail_on(monkeypatch, target, name, after=after)
    with pytest.raises(InjectedFailure):
        action()
    written = injection.written_before_failing(before)
    assert written, f"nothing was written before {name} failed: move the injection later"
    assert table_counts() == before, f"rows left behind after a failure in {name}"
    monkeypatch.undo()
    return action()
