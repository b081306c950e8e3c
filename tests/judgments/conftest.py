"""Fixtures for the import and export tests: run the commands, count rows, find data."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import call_command

from judgments.models import Collection
from tests.shared_data import need_shared, shared_dir

REPO = Path(__file__).resolve().parents[2]
RECALL_EXAMPLE = REPO / "fixtures" / "recall-example"


@pytest.fixture
def trec_dl_2019() -> Path:
    """The TREC DL 2019 passage qrels and topics from the shared folder (not in the repo)."""
    folder = shared_dir() / "realdata" / "trec-dl-2019-passage"
    need_shared(folder / "qrels.txt", "TREC DL 2019 qrels")
    return folder


@pytest.fixture
def trec_eval_tests() -> Path:
    """trec_eval 10's own test data from the shared folder (not in the repo)."""
    folder = shared_dir() / "conformance" / "trec_eval"
    need_shared(folder / "qrels.test", "trec_eval conformance data")
    return folder


@pytest.fixture
def run_command() -> Callable[..., tuple[str, str]]:
    """Run a management command; return (stdout, stderr). CommandError propagates."""

    def run(name: str, *args: str) -> tuple[str, str]:
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
def write_file(tmp_path: Path) -> Callable[[str, str | bytes], Path]:
    def write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    return write


@pytest.fixture
def recall_example(db, run_command) -> Collection:
    """The founding text's example, imported from fixtures/recall-example/bundle.jsonl."""
    run_command("import_collection", RECALL_EXAMPLE / "bundle.jsonl")
    return Collection.objects.get(slug="recall-example")
