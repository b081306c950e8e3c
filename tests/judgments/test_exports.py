"""export_qrels: deterministic TREC qrels and JSONL bundles that round-trip byte for byte.

A round trip is: import → export (E1) → import E1 under another slug → export (E2); E2
must equal E1 byte for byte except for the slug on the first line. (Under another slug
rather than into an empty database: history rows are append-only, so the first copy
cannot be deleted to make room.)
"""

from __future__ import annotations

import json
import random
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from django.core.management.base import CommandError

from judgments import formats
from judgments.services import normalize_evidence
from tests.judgments.conftest import RECALL_EXAMPLE

GRADED = "0:not relevant,1:related,2:relevant,3:perfect"


def export(run_command, slug: str, *args: str) -> str:
    out, _ = run_command("export_qrels", slug, *args)
    return out


def round_trip(run_command, write_file, slug: str, copy_slug: str) -> tuple[str, str]:
    """Export ``slug`` as JSONL, import that under ``copy_slug``, export again."""
    first = export(run_command, slug, "--format", "jsonl")
    path = write_file(f"{slug}.jsonl", first)
    run_command("import_collection", path, "--collection", copy_slug)
    second = export(run_command, copy_slug, "--format", "jsonl")
    return first, second


def with_slug(bundle_text: str, slug: str) -> str:
    head, rest = bundle_text.split("\n", 1)
    return json.dumps({**json.loads(head), "slug": slug}, ensure_ascii=False) + "\n" + rest


# -- the founding text's example ---------------------------------------------------------------


def test_recall_example_exports_exactly_the_fixture(recall_example, run_command):
    assert (
        export(run_command, "recall-example", "--format", "jsonl").encode()
        == (RECALL_EXAMPLE / "bundle.jsonl").read_bytes()
    )


def test_recall_example_round_trips_byte_identically(recall_example, run_command, write_file):
    first, second = round_trip(run_command, write_file, "recall-example", "recall-copy")

    assert second == with_slug(first, "recall-copy")
    assert export(run_command, "recall-copy") == export(run_command, "recall-example")


def test_recall_example_as_trec_qrels(recall_example, run_command):
    # written by hand from the founding text: A → {a, b, c}, B → {d}, C → {e}; x judged 0
    assert export(run_command, "recall-example") == (
        "A 0 a 1\nA 0 b 1\nA 0 c 1\nA 0 x 0\nB 0 d 1\nB 0 x 0\nC 0 e 1\nC 0 x 0\n"
    )


def test_recall_example_run_lists_the_founding_texts_rankings():
    lines = [line.split() for line in (RECALL_EXAMPLE / "run.trec").read_text().splitlines()]
    rankings: dict[str, list[tuple[str, float]]] = {}
    for qid, q0, docid, rank, score, tag in lines:
        assert (q0, tag) == ("Q0", "example")
        assert int(rank) == len(rankings.setdefault(qid, [])) + 1
        rankings[qid].append((docid, float(score)))
    assert {q: [d for d, _ in r] for q, r in rankings.items()} == {
        "A": ["a", "x", "b", "c"],
        "B": ["x", "d"],
        "C": ["x", "y"],
    }
    for ranking in rankings.values():
        scores = [s for _, s in ranking]
        assert all(a > b for a, b in pairwise(scores))


# -- TREC qrels --------------------------------------------------------------------------------


@pytest.fixture
def unordered(db, run_command, write_file) -> str:
    """Ids whose codepoint order differs from numeric and case-folded order."""
    topics = write_file("t.tsv", "9\tnine\n10\tten\na\tlower\nB\tupper\n")
    qrels = write_file(
        "q.txt",
        "a 0 d9 2\n9 0 é 1\n10 0 d10 0\nB 0 D1 3\n10 0 D1 2\n9 0 d9 -1\n9 0 e 0\na 0 d10 -1\n",
    )
    run_command(
        "import_collection", "--collection", "order", "--create", "--scale", GRADED,
        "--relevant-grade", "2", "--queries", topics, "--qrels", qrels, "--create-missing-items",
    )  # fmt: skip
    return "order"


def test_trec_lines_are_sorted_by_query_then_item_in_codepoint_order(unordered, run_command):
    assert export(run_command, unordered) == (
        "10 0 D1 2\n10 0 d10 0\n9 0 e 0\n9 0 é 1\nB 0 D1 3\na 0 d9 2\n"
    )


def test_with_unjudged_adds_minus_one_lines_for_open_tasks_only(unordered, run_command, write_file):
    judge = write_file("j.txt", "a 0 d10 1\n")  # completes the task of (a, d10)
    run_command("import_collection", "--collection", unordered, "--qrels", judge)

    assert export(run_command, unordered, "--with-unjudged") == (
        "10 0 D1 2\n10 0 d10 0\n9 0 d9 -1\n9 0 e 0\n9 0 é 1\nB 0 D1 3\na 0 d10 1\na 0 d9 2\n"
    )


def test_output_file_holds_the_same_bytes_as_stdout(unordered, run_command, tmp_path):
    path = tmp_path / "out.jsonl"

    out, _ = run_command("export_qrels", unordered, "--format", "jsonl", "--output", path)

    assert out == ""
    assert path.read_bytes() == export(run_command, unordered, "--format", "jsonl").encode()


def test_unknown_collection_is_refused_with_the_known_ones(recall_example, run_command):
    with pytest.raises(CommandError, match="no collection 'nope'; the collections are: recall-"):
        run_command("export_qrels", "nope")


# -- a bigger generated bundle -----------------------------------------------------------------


def generated_bundle(seed: int) -> list[dict[str, Any]]:
    """A shuffled, non-canonical bundle: unicode, nested metadata, placeholders, every
    status, evidence, reviewers and notes, unjudged pairs with sources and ranks."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    item_ids = [f"doc-{n}" for n in range(220)] + ["Ä-1", "a10", "a9", "Z", "日本-3", "x#1"]
    for item_id in item_ids:
        if rng.random() < 0.1:
            records.append({"type": "item", "id": item_id, "placeholder": True})
            continue
        records.append(
            {
                "metadata": {"z": rng.randint(0, 9), "a": {"y": [1, 2.5], "b": None}, "ü": "ç"},
                "text": rng.choice(["Plain text.", 'Quotes " and \\ and\nnewlines ✓', "日本語"]),
                "id": item_id,
                "type": "item",
                "title": f"Title {item_id}",
                "url": rng.choice(["", f"https://example.org/{item_id}"]),
            }
        )
    for n in range(1, 61):
        query_id = f"q{n}"
        judged = rng.sample(item_ids, rng.randint(0, 30))
        grades = {i: rng.randint(0, 3) for i in judged}
        if rng.random() < 0.2:  # some queries have nothing relevant at all
            grades = {i: min(g, 1) for i, g in grades.items()}
        has_relevant = any(g >= 2 for g in grades.values())
        status = rng.choice(["relevant", "unreviewed"] if has_relevant else ["no_answer", None])
        query: dict[str, Any] = {"type": "query", "text": f"Question {n}: “why?”", "id": query_id}
        if status:
            query["status"] = status
        if rng.random() < 0.5:
            query["tags"] = rng.sample(["faq", "billing", "ünicode"], rng.randint(1, 2))
        if has_relevant and rng.random() < 0.3:
            # unsorted groups with a repeat; stored in canonical DNF
            query["evidence"] = [judged[:2][::-1], judged[-1:], judged[:2]]
        records.append(query)
        for item_id, grade in grades.items():
            records.append(
                {
                    "grade": grade,
                    "item": item_id,
                    "type": "judgment",
                    "query": query_id,
                    "reviewer": rng.choice(["ana", "ben", None]),
                    "note": rng.choice(["", "borderline", "cites §4 — “verbatim”"]),
                }
            )
        for item_id in rng.sample([i for i in item_ids if i not in grades], rng.randint(0, 4)):
            records.append(
                {
                    "type": "unjudged",
                    "query": query_id,
                    "item": item_id,
                    "source": rng.choice(["run bm25", "run dense / reranked"]),
                    "rank": rng.choice([None, rng.randint(1, 100)]),
                }
            )
    rng.shuffle(records)
    collection = {
        "type": "collection",
        "slug": "generated",
        "name": "Generated",
        "description": "Generated for the round-trip test — ünïcödé.",
        "unit": "chunk",
        "scale": [
            {"grade": g, "name": n}
            for g, n in enumerate(["not relevant", "related", "relevant", "perfect"])
        ],
        "relevant_grade": 2,
        "guidelines": "Be strict.",
        "pool_depth": 20,
    }
    return [collection, *records]


def content(records: list[dict[str, Any]]) -> dict[str, Any]:
    """What a bundle says, independent of order, key order, defaults and DNF spelling."""
    out: dict[str, Any] = {"items": {}, "queries": {}, "judgments": {}, "unjudged": {}}
    for r in records:
        if r["type"] == "item":
            out["items"][r["id"]] = (
                r.get("title", ""), r.get("text", ""), r.get("url", ""),
                r.get("metadata") or {}, r.get("placeholder", False),
            )  # fmt: skip
        elif r["type"] == "query":
            evidence = r.get("evidence")
            out["queries"][r["id"]] = (
                r["text"], r.get("tags") or [], r.get("status") or "unreviewed",
                normalize_evidence(evidence) if evidence else None,
            )  # fmt: skip
        elif r["type"] == "judgment":
            out["judgments"][(r["query"], r["item"])] = (
                r["grade"], r.get("note", ""), r.get("reviewer"),
            )  # fmt: skip
        elif r["type"] == "unjudged":
            out["unjudged"][(r["query"], r["item"])] = (r.get("source"), r.get("rank"))
    return out


def test_generated_bundle_round_trips_byte_identically(
    db, reviewer_ana, reviewer_ben, run_command, write_file
):
    records = generated_bundle(seed=20191)
    path = write_file("generated.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    run_command("import_collection", path)

    first, second = round_trip(run_command, write_file, "generated", "generated-copy")

    assert second == with_slug(first, "generated-copy")
    exported = [json.loads(line) for line in first.splitlines()]
    # a format 1 line comes back as format 2, with the settings it left out at their defaults
    assert exported[0] == {
        **records[0],
        "slug": "generated",
        "format_version": formats.BUNDLE_FORMAT,
        **formats.SETTING_DEFAULTS,
    }
    assert content(exported) == content(records)  # nothing lost, nothing invented
    for kind in ("item", "query"):
        ids = [r["id"] for r in exported if r["type"] == kind]
        assert ids == sorted(ids)  # Python compares strings by code point
    for kind in ("judgment", "unjudged"):
        pairs = [(r["query"], r["item"]) for r in exported if r["type"] == kind]
        assert pairs == sorted(pairs)
    fields = {"item": 7, "query": 6, "judgment": 6, "unjudged": 5}
    assert all(len(r) == fields[r["type"]] for r in exported[1:])  # defaults written out
    assert export(run_command, "generated", "--with-unjudged") == export(
        run_command, "generated-copy", "--with-unjudged"
    )


# -- real data: TREC DL 2019 passage judgments -------------------------------------------------


def normalised_qrels(path: Path) -> set[tuple[str, str, str]]:
    return {(q, d, g) for q, _, d, g in (line.split() for line in path.read_text().splitlines())}


def test_trec_dl_2019_qrels_export_as_imported_and_round_trip(
    db, run_command, write_file, trec_dl_2019
):
    run_command(
        "import_collection", "--collection", "dl19", "--create", "--unit", "chunk",
        "--scale", "0:irrelevant,1:related,2:highly relevant,3:perfectly relevant",
        "--relevant-grade", "2", "--queries", trec_dl_2019 / "topics.tsv",
        "--qrels", trec_dl_2019 / "qrels.txt", "--create-missing-items",
    )  # fmt: skip

    exported = export(run_command, "dl19")

    lines = exported.splitlines()
    assert len(lines) == 9260
    assert {(q, d, g) for q, _, d, g in (line.split() for line in lines)} == normalised_qrels(
        trec_dl_2019 / "qrels.txt"
    )
    assert {line.split()[1] for line in lines} == {"0"}
    first, second = round_trip(run_command, write_file, "dl19", "dl19-copy")
    assert second == with_slug(first, "dl19-copy")
    assert formats.parse_bundle(first.encode(), "dl19.jsonl")[1] == []
