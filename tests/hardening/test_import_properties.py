"""Every importer, given any file: it stores the file whole, or refuses it with the
project's own error (a ``VerityError``: line-numbered for a bad file) and writes no row.

Run on PostgreSQL too (DATABASE_URL): that is where a NUL, a lone surrogate, a long id or
an out-of-range integer used to surface as a DataError from the database itself.
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from django.apps import apps
from hypothesis import example, given

from judgments.formats import parse_bundle, parse_judgments, parse_qrels
from judgments.services import VerityError, import_collection_data
from scoring.services import import_run, import_unit_mapping
from tests.hardening.strategies import DATABASE_PROPERTY, NASTY_LINES, files
from tests.scoring.conftest import RECALL_EXAMPLE

_names = itertools.count()


def _rows() -> dict[str, int]:
    return {m._meta.label: m._default_manager.count() for m in apps.get_models()}


def _imported_or_refused(store, data: bytes, suffix: str) -> None:
    before = _rows()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"in{suffix}"
        path.write_bytes(data)
        try:
            store(path)
        except VerityError as refused:
            assert str(refused).strip()
            assert _rows() == before, "a refused import wrote rows"


@pytest.fixture
def collection(db):
    from django.core.management import call_command

    call_command("import_collection", str(RECALL_EXAMPLE / "bundle.jsonl"), verbosity=0)
    from judgments.models import Collection

    return Collection.objects.get(slug="recall-example")


@DATABASE_PROPERTY
@given(data=files)
@example(data=(NASTY_LINES[5] + "\n").encode())
@example(data=b"A Q0 " + b"d" * 300 + b" 1 1.0 t\n")
@example(data=b"A\x0001 Q0 d1 1 1.0 t\n")
def test_run_import_stores_or_refuses_cleanly(collection, data):
    def store(path):
        import_run(
            collection=collection, path=path, name=f"r{next(_names)}", ignore_unknown_queries=True
        )

    _imported_or_refused(store, data, ".jsonl" if data.lstrip().startswith(b"{") else ".trec")


@DATABASE_PROPERTY
@given(data=files)
@example(data=b"c1\t" + b"x" * 300 + b"\n")
@example(data=b"c1\tc\x002\n")
def test_mapping_import_stores_or_refuses_cleanly(collection, data):
    _imported_or_refused(
        lambda path: import_unit_mapping(collection=collection, path=path), data, ".tsv"
    )


@DATABASE_PROPERTY
@given(data=files)
@example(data=b'{"type": "item", "id": "d1", "metadata": {"k": "\\u0000"}}')
@example(data=b'{"type": "item", "id": "d1", "title": "\\ud800"}')
def test_collection_import_stores_or_refuses_cleanly(collection, data):
    def store(path):
        raw = path.read_bytes()
        for parse in (parse_bundle, parse_judgments, parse_qrels):
            bundle, problems = parse(raw, path.name)
            if problems:
                continue
            import_collection_data(
                data=bundle,
                collection_slug=None if parse is parse_bundle else collection.slug,
                create_missing_items=True,
                set_status=True,
            )

    _imported_or_refused(store, data, ".jsonl")
