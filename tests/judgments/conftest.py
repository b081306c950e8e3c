"""Fixtures for the import and export tests: run the commands, count rows, find data."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import call_command

from judgments.models import AdjudicationTask, Collection, QueryStatus
from judgments.services import (
    adjudicate,
    queue_unjudged,
    record_assessment,
    set_evidence_condition,
    set_membership,
    set_query_status,
    update_collection_settings,
)
from tests.factories import make_collection, make_item, make_query, make_user
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


ODD_IDS = ["d/1?x=ü", "日本語-文書", "😀", "%2F..", 'quote"d', "back\\slash", "plain"]


@pytest.fixture
def rt_world(db) -> Collection:
    """Two blind assessors per item, the adjudicate policy at distance 0: a resolved pair,
    one awaiting adjudication, one decided, one half assessed, one not assessed, one by
    an imported assessor's name; a no-answer query, an evidence condition, unicode."""
    ana, ben, cat, boss = (make_user(n) for n in ("ana", "bén", "cat", "boss"))
    c = make_collection(
        slug="rt",
        name="Round trip ✓",
        unit="chunk",
        description="Corpus: ünïcode…\nline 2 «quoted»",
        guidelines="# Héading\n\nGrade *3* when…",
    )
    update_collection_settings(
        collection=c,
        pool_depth=7,
        holds_whole_corpus=True,
        assessors_per_item=2,
        resolution_policy="adjudicate",
        adjudicate_distance=0,
    )
    for user, role in ((ana, "reviewer"), (ben, "reviewer"), (cat, "reviewer"), (boss, "admin")):
        set_membership(collection=c, user=user, role=role)
    items = {
        i: make_item(c, external_id=i, metadata={"z": 1, "a": [1, {"b": "ü"}]}) for i in ODD_IDS
    }
    items["ph"] = make_item(c, external_id="ph", title="", text="", placeholder=True)
    q1 = make_query(c, external_id="Q/1", text="Wie viel? ÄÖÜ", tags=["t1", "ü"])
    q2 = make_query(c, external_id="Q-2")
    q_no = make_query(c, external_id="Q-no", text="nothing answers this")
    q_ev = make_query(c, external_id="Q-ev")
    pairs = [(q1, i) for i in ("d/1?x=ü", "日本語-文書", "😀")]
    pairs += [(q2, i) for i in ('quote"d', "back\\slash", "plain")]
    queue_unjudged(
        collection=c,
        pairs=[(q.pk, items[i].pk, rank) for rank, (q, i) in enumerate(pairs, 1)],
        source="run bm25",
    )

    def assess(q, i, grade, who, note=""):
        return record_assessment(
            query=q, item=items[i], grade=grade, assessor=who, note=note, source="ui"
        )

    assess(q1, "d/1?x=ü", 3, ana, note="ünï note")
    assess(q1, "d/1?x=ü", 3, ben)  # agree: resolved 3
    assess(q1, "日本語-文書", 0, ana)
    assess(q1, "日本語-文書", 2, ben)  # disagree: awaits adjudication
    assess(q1, "😀", 1, ana)
    assess(q1, "😀", 3, ben)
    task = AdjudicationTask.objects.get(query=q1, item=items["😀"])
    adjudicate(task=task, grade=2, by=boss)  # decided
    assess(q2, 'quote"d', 2, ana)  # half assessed: one slot open
    record_assessment(query=q2, item=items["plain"], grade=0, assessor=None, assessor_name="ext Ω")
    assess(q2, "plain", 0, cat)  # resolved 0
    set_query_status(query=q1, status=QueryStatus.RELEVANT, by=boss)
    set_query_status(query=q_no, status=QueryStatus.NO_ANSWER, by=boss)
    set_evidence_condition(query=q_ev, groups=[["d/1?x=ü", "😀"], ["plain"]], by=boss)
    return c
