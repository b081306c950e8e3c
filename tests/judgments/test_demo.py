"""Demo data and demo logins.

The generator is deterministic and its committed output is current; the bundle keeps the
invariants the importer enforces (read here with ``json``, not with the importer); the
demo users exist only with DEBUG on; ``load_demo`` loads what the bundles hold, and
loading twice changes nothing.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from judgments.models import (
    Collection,
    EvidenceCondition,
    Item,
    Judgment,
    Query,
    ReviewTask,
    TaskStatus,
)

REPO = Path(__file__).resolve().parents[2]
GENERATOR = REPO / "fixtures" / "demo" / "generate.py"
DEMO_BUNDLE = REPO / "fixtures" / "demo" / "bundle.jsonl"
RECALL_BUNDLE = REPO / "fixtures" / "recall-example" / "bundle.jsonl"
DEMO_LOGINS = ("admin", "reviewer", "evaluator")


def read_bundle(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def by_type(lines: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [line for line in lines if line["type"] == kind]


def run(name: str, *args: str) -> str:
    out = io.StringIO()
    call_command(name, *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def row_counts() -> dict[str, int]:
    return {m._meta.label: m._default_manager.count() for m in apps.get_models()}


# -- the generator and its bundle -----------------------------------------------------------


def test_generator_is_deterministic_and_the_committed_bundle_is_current(tmp_path):
    outputs = []
    for name in ("first.jsonl", "second.jsonl"):
        subprocess.run(
            [sys.executable, str(GENERATOR), "--output", str(tmp_path / name)],
            check=True,
            capture_output=True,
        )
        outputs.append((tmp_path / name).read_bytes())

    assert outputs[0] == outputs[1]
    assert outputs[0] == DEMO_BUNDLE.read_bytes(), (
        "fixtures/demo/bundle.jsonl is stale: run python fixtures/demo/generate.py"
    )


@pytest.fixture(scope="module")
def demo_lines() -> list[dict[str, Any]]:
    return read_bundle(DEMO_BUNDLE)


def test_bundle_is_in_canonical_order(demo_lines):
    kinds = [line["type"] for line in demo_lines]
    order = ["collection", "item", "query", "judgment", "unjudged"]
    assert kinds == sorted(kinds, key=order.index)
    assert kinds.count("collection") == 1
    item_ids = [line["id"] for line in by_type(demo_lines, "item")]
    query_ids = [line["id"] for line in by_type(demo_lines, "query")]
    assert item_ids == sorted(item_ids) and len(set(item_ids)) == len(item_ids)
    assert query_ids == sorted(query_ids) and len(set(query_ids)) == len(query_ids)
    for kind in ("judgment", "unjudged"):
        pairs = [(line["query"], line["item"]) for line in by_type(demo_lines, kind)]
        assert pairs == sorted(pairs) and len(set(pairs)) == len(pairs)


def test_bundle_describes_a_graded_chunk_collection(demo_lines):
    collection = demo_lines[0]

    assert collection["slug"] == "demo-handbook"
    assert collection["unit"] == "chunk"
    assert [g["grade"] for g in collection["scale"]] == [0, 1, 2, 3]
    assert collection["relevant_grade"] == 2
    assert collection["pool_depth"] == 10
    assert "Out of scope" in collection["description"]
    assert len(collection["guidelines"]) > 1000


def test_bundle_has_the_promised_size_and_statuses(demo_lines):
    items, queries = by_type(demo_lines, "item"), by_type(demo_lines, "query")
    judgments, unjudged = by_type(demo_lines, "judgment"), by_type(demo_lines, "unjudged")

    assert len(items) >= 1000
    assert all(item["title"] and len(item["text"]) > 40 for item in items)
    assert len({item["text"] for item in items}) == len(items), "duplicate item texts"
    assert len(queries) == 50
    assert Counter(q["status"] for q in queries) == {
        "relevant": 20,
        "no_answer": 5,
        "unreviewed": 25,
    }
    assert all(q["tags"] for q in queries)
    assert 250 <= len(judgments) <= 350
    assert 350 <= len(unjudged) <= 450
    assert {j["reviewer"] for j in judgments} <= {"reviewer", "admin", None}
    assert {"reviewer", "admin"} <= {j["reviewer"] for j in judgments}


def test_bundle_keeps_the_status_invariants(demo_lines):
    relevant_grade = demo_lines[0]["relevant_grade"]
    grades_on_scale = {g["grade"] for g in demo_lines[0]["scale"]}
    item_ids = {line["id"] for line in by_type(demo_lines, "item")}
    queries = {q["id"]: q for q in by_type(demo_lines, "query")}
    best: dict[str, int] = defaultdict(lambda: -1)
    for j in by_type(demo_lines, "judgment"):
        assert j["query"] in queries and j["item"] in item_ids
        assert j["grade"] in grades_on_scale
        best[j["query"]] = max(best[j["query"]], j["grade"])

    for qid, query in queries.items():
        if query["status"] == "relevant":
            assert best[qid] >= relevant_grade, f"{qid} is relevant without a relevant judgment"
        elif query["status"] == "no_answer":
            assert 0 <= best[qid] < relevant_grade, f"{qid}: no_answer needs judgments, all < 2"
    partly_judged = [
        qid for qid, q in queries.items() if q["status"] == "unreviewed" and best[qid] >= 0
    ]
    assert len(partly_judged) >= 10


def test_bundle_unjudged_markers_are_top_ten_pairs_without_judgments(demo_lines):
    judged = {(j["query"], j["item"]) for j in by_type(demo_lines, "judgment")}
    item_ids = {line["id"] for line in by_type(demo_lines, "item")}
    unjudged = by_type(demo_lines, "unjudged")

    assert all((u["query"], u["item"]) not in judged for u in unjudged)
    assert all(u["item"] in item_ids for u in unjudged)
    assert all(1 <= u["rank"] <= 10 for u in unjudged)
    assert all(u["source"].startswith("run ") for u in unjudged)


def test_bundle_evidence_conditions_name_judged_relevant_items(demo_lines):
    relevant_grade = demo_lines[0]["relevant_grade"]
    grades = {(j["query"], j["item"]): j["grade"] for j in by_type(demo_lines, "judgment")}
    with_evidence = [q for q in by_type(demo_lines, "query") if "evidence" in q]

    assert len(with_evidence) >= 2
    for query in with_evidence:
        assert query["status"] == "relevant"
        for group in query["evidence"]:
            assert group and group == sorted(group)
            assert all(grades.get((query["id"], i), -1) >= relevant_grade for i in group)


# -- demo users -------------------------------------------------------------------------------


@pytest.fixture
def fast_passwords(settings):
    """The commands store real password hashes; a fast hasher keeps these tests quick."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.mark.django_db
def test_create_demo_users_refuses_without_debug(settings):
    settings.DEBUG = False

    with pytest.raises(CommandError, match="DEBUG is off"):
        run("create_demo_users")

    assert not get_user_model().objects.exists()


def test_create_demo_users_exits_non_zero_without_debug(tmp_path):
    env = {**os.environ, "DEBUG": "0", "SECRET_KEY": "test-only", "VERITY_VAR_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)  # refused before any database is touched

    result = subprocess.run(
        [sys.executable, str(REPO / "manage.py"), "create_demo_users"],
        env=env,
        capture_output=True,
        text=True,
    )

    assert result.returncode != 0
    assert "refusing to create demo users: DEBUG is off" in result.stderr


@pytest.mark.django_db
def test_create_demo_users_creates_the_three_logins(settings, fast_passwords):
    settings.DEBUG = True

    out = run("create_demo_users")

    for name in DEMO_LOGINS:
        assert authenticate(username=name, password=name) is not None
        assert f"{name} / {name}" in out
    assert "DEMO ONLY" in out
    admin = get_user_model().objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff
    reviewer = get_user_model().objects.get(username="reviewer")
    assert not (reviewer.is_superuser or reviewer.is_staff)


@pytest.mark.django_db
def test_create_demo_users_again_resets_the_passwords(settings, fast_passwords):
    settings.DEBUG = True
    run("create_demo_users")
    reviewer = get_user_model().objects.get(username="reviewer")
    reviewer.set_password("changed-meanwhile")
    reviewer.save()

    out = run("create_demo_users")

    assert authenticate(username="reviewer", password="reviewer") is not None
    assert "password reset" in out
    assert get_user_model().objects.count() == 3


# -- load_demo --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_load_demo_loads_both_bundles(settings, fast_passwords, demo_lines):
    settings.DEBUG = True
    queries = by_type(demo_lines, "query")

    out = run("load_demo")

    demo = Collection.objects.get(slug="demo-handbook")
    assert Item.objects.filter(collection=demo).count() == len(by_type(demo_lines, "item"))
    assert Query.objects.filter(collection=demo).count() == len(queries) == 50
    assert Counter(Query.objects.filter(collection=demo).values_list("status", flat=True)) == (
        Counter(q["status"] for q in queries)
    )
    assert Judgment.objects.filter(query__collection=demo).count() == len(
        by_type(demo_lines, "judgment")
    )
    assert ReviewTask.objects.filter(collection=demo, status=TaskStatus.PENDING).count() == len(
        by_type(demo_lines, "unjudged")
    )
    assert EvidenceCondition.objects.filter(query__collection=demo).count() == sum(
        "evidence" in q for q in queries
    )
    recall = Collection.objects.get(slug="recall-example")
    recall_lines = read_bundle(RECALL_BUNDLE)
    assert recall.queries.count() == len(by_type(recall_lines, "query"))
    assert Judgment.objects.filter(query__collection=recall).count() == len(
        by_type(recall_lines, "judgment")
    )
    for name in DEMO_LOGINS:
        assert authenticate(username=name, password=name) is not None
    # The bundle's reviewers are members before its judgments are imported (issue 22
    # item 4: a name that is not a member stays a name), so the labels are theirs.
    named = Counter(j["reviewer"] for j in by_type(demo_lines, "judgment") if j["reviewer"])
    stored = Counter(
        Judgment.objects.filter(query__collection=demo, reviewer__isnull=False).values_list(
            "reviewer__username", flat=True
        )
    )
    assert stored == named
    assert not Judgment.objects.filter(query__collection=demo).exclude(reviewer_name="").exists()
    assert "demo-handbook: 1040 items, 50 queries" in out
    assert "http://127.0.0.1:8000/" in out and "DEMO ONLY" in out


@pytest.mark.django_db
def test_load_demo_twice_changes_nothing(settings, fast_passwords):
    settings.DEBUG = True
    run("load_demo")
    before = row_counts()

    out = run("load_demo")

    assert row_counts() == before
    assert "demo-handbook: already loaded" in out
    assert "recall-example: already loaded" in out
    assert authenticate(username="evaluator", password="evaluator") is not None


@pytest.mark.django_db
def test_load_demo_refuses_without_debug_and_imports_nothing(settings):
    settings.DEBUG = False
    before = row_counts()

    with pytest.raises(CommandError, match="DEBUG is off"):
        run("load_demo")

    assert row_counts() == before


# -- the demo's runs, snapshots and evaluations -----------------------------------------------

RUNS = REPO / "fixtures" / "demo" / "runs"


def test_the_committed_demo_runs_are_current():
    result = subprocess.run(
        [sys.executable, str(REPO / "fixtures" / "demo" / "make_runs.py"), "--check"],
        capture_output=True,
        text=True,
    )

    assert result.returncode == 0, result.stdout + result.stderr


def run_lists() -> dict[str, dict[str, list[str]]]:
    """Every demo run's lists, read with plain Python: {run/stage: {query: items}}."""
    lists: dict[str, dict[str, list[str]]] = {}
    for name in ("lexical", "titles"):
        for line in (RUNS / f"{name}.trec").read_text(encoding="utf-8").splitlines():
            qid, _, item, rank, _, _ = line.split()
            lists.setdefault(name, {}).setdefault(qid, []).append(item)
            assert len(lists[name][qid]) == int(rank)
    for line in (RUNS / "pipeline.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for stage, items in record["stages"].items():
            lists.setdefault(f"pipeline/{stage}", {})[record["query"]] = items
    return lists


def test_demo_runs_pool_only_what_the_bundle_judged_or_queued(demo_lines):
    poolable = {(j["query"], j["item"]) for j in by_type(demo_lines, "judgment")}
    poolable |= {(u["query"], u["item"]) for u in by_type(demo_lines, "unjudged")}
    depth = demo_lines[0]["pool_depth"]

    lists = run_lists()

    assert sorted(lists) == [
        "lexical", "pipeline/candidates", "pipeline/context", "pipeline/reranked", "titles"
    ]  # fmt: skip
    for name, per_query in lists.items():
        assert len(per_query) == 50, name
        for qid, items in per_query.items():
            assert len(set(items)) == len(items), (name, qid)
            assert all((qid, item) in poolable for item in items[:depth]), (name, qid)


@pytest.mark.django_db
def test_load_demo_freezes_imports_the_runs_and_scores_them(settings, fast_passwords, demo_lines):
    from scoring.models import Evaluation, Run

    settings.DEBUG = True

    out = run("load_demo")

    demo = Collection.objects.get(slug="demo-handbook")
    recall = Collection.objects.get(slug="recall-example")
    for collection in (demo, recall):
        (v1,) = collection.snapshots.all()
        assert v1.number == 1 and v1.created_by.username == "evaluator"
    assert demo.snapshots.get().n_unjudged == len(by_type(demo_lines, "unjudged"))
    runs = {r.name: [s.name for s in r.stages.order_by("position")] for r in demo.runs.all()}
    assert runs == {
        "lexical": ["default"],
        "titles": ["default"],
        "pipeline": ["candidates", "reranked", "context"],
    }
    assert not Run.objects.filter(collection=recall).exists()
    scored = sorted(
        (e.run.name, e.stage.name, tuple(e.params["ks"]), e.snapshot.number)
        for e in Evaluation.objects.filter(collection=demo)
    )
    assert scored == [
        ("lexical", "default", (5, 10), 1),
        ("pipeline", "candidates", (5,), 1),
        ("pipeline", "context", (5,), 1),
        ("pipeline", "reranked", (5,), 1),
        ("titles", "default", (5, 10), 1),
    ]
    # The runs add no review task: the queue is the bundle's.
    assert ReviewTask.objects.filter(collection=demo, status=TaskStatus.PENDING).count() == len(
        by_type(demo_lines, "unjudged")
    )
    assert "demo-handbook: snapshot v1, runs lexical, titles, pipeline and 5 evaluations" in out
