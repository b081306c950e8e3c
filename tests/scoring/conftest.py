"""Fixtures for the run, evaluation and command tests.

Every fixture is requested by name (none is autouse). ``recall_example`` is the founding
text's three queries imported through the real command; the run helpers write small run
files into the test's own ``tmp_path``.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import call_command

from judgments.models import Collection, Snapshot
from judgments.services import freeze_snapshot

REPO = Path(__file__).resolve().parents[2]
RECALL_EXAMPLE = REPO / "fixtures" / "recall-example"


@pytest.fixture
def run_command() -> Callable[..., tuple[str, str]]:
    """Run a management command; return (stdout, stderr). CommandError propagates."""

    def run(name: str, *args: object) -> tuple[str, str]:
        out, err = io.StringIO(), io.StringIO()
        call_command(name, *[str(a) for a in args], stdout=out, stderr=err)
        return out.getvalue(), err.getvalue()

    return run


@pytest.fixture
def row_counts(db) -> Callable[[], dict[str, int]]:
    """Rows per model, for every installed model: the "database unchanged" check."""

    def counts() -> dict[str, int]:
        return {m._meta.label: m._default_manager.count() for m in apps.get_models()}

    return counts


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, str], Path]:
    def write(name: str, content: str) -> Path:
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        return path

    return write


@pytest.fixture
def recall_example(db, run_command) -> Collection:
    """The founding text's example (queries A, B, C), imported from its bundle."""
    run_command("import_collection", RECALL_EXAMPLE / "bundle.jsonl")
    return Collection.objects.get(slug="recall-example")


@pytest.fixture
def recall_v1(recall_example) -> Snapshot:
    """Snapshot v1 of the example: every judgment of the bundle, nothing queued."""
    snapshot, created = freeze_snapshot(collection=recall_example, by=None, note="v1")
    assert created and snapshot.number == 1
    return snapshot
