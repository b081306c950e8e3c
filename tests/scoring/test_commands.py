"""import_run, import_mapping and score as a user runs them: output, JSON, and refusals."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judgments.models import Item, Query
from judgments.services import freeze_snapshot, record_judgment, set_query_status
from scoring.models import Evaluation, Run, UnitMapping

from .conftest import RECALL_EXAMPLE

RUN = RECALL_EXAMPLE / "run.trec"
STAGED_RUN = """\
{"query": "A", "stages": {"candidates": ["x", "a", "b"], "context": ["a"]}}
{"query": "B", "stages": {"candidates": ["x", "d"], "context": ["d"]}}
"""


@pytest.fixture
def example_run(recall_v1, run_command) -> Run:
    run_command("import_run", "recall-example", RUN, "--name", "example", "--quiet")
    return Run.objects.get(name="example")


# -- import_run -----------------------------------------------------------------------------


def test_import_run_reports_stages_pool_and_progress(recall_v1, run_command) -> None:
    out, err = run_command("import_run", "recall-example", RUN, "--name", "example")
    run = Run.objects.get(name="example")
    assert out.startswith("Imported run 'example' into 'recall-example' in ")
    assert f"(sha256:{run.source_sha256[:12]}, order: score, dedup: error, 0 duplicates" in out
    assert "  stage default: 3 queries, 8 rows, depth 4\n" in out
    # Within pool depth 10, only (C, y) has no judgment.
    assert (
        "  pool depth 10: 1 unjudged item found, 1 new to the review queue, "
        "0 placeholder items created"
    ) in out
    # Off a terminal (here: a StringIO) there is no progress bar at all.
    assert err == ""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_import_run_draws_a_bar_per_phase_on_a_terminal(recall_v1) -> None:
    err = Terminal()
    call_command(
        "import_run", "recall-example", str(RUN), "--name", "t", stdout=io.StringIO(), stderr=err
    )

    # Each bar is drawn empty when its phase starts, then redrawn on the same line: the
    # file's 168 bytes are read at once, its 8 lines stored in one batch; finding the
    # pooled items is three steps; 3 queries (A, B, C) are pooled in one chunk.
    full, empty = "#" * 25, " " * 25
    size = RUN.stat().st_size
    assert err.getvalue() == (
        f"\rreading run.trec [{empty}]   0% (0/{size})"
        f"\rreading run.trec [{full}] 100% ({size}/{size})\n"
        f"\rstoring ranked lists [{empty}]   0% (0/8)"
        f"\rstoring ranked lists [{full}] 100% (8/8)\n"
        f"\rpooling: finding the pooled items [{empty}]   0% (0/3)"
        f"\rpooling: finding the pooled items [{'#' * 8}{' ' * 17}]  33% (1/3)"
        f"\rpooling: finding the pooled items [{'#' * 16}{' ' * 9}]  66% (2/3)"
        f"\rpooling: finding the pooled items [{full}] 100% (3/3)\n"
        f"\rpooling unjudged items [{empty}]   0% (0/3)"
        f"\rpooling unjudged items [{full}] 100% (3/3)\n"
    )


def test_import_run_quiet_and_multi_stage(recall_v1, run_command, write_file) -> None:
    extra = '{"query": "Z", "stages": {"candidates": ["a"], "context": []}}\n'
    path = write_file("rag.jsonl", STAGED_RUN + extra)
    with pytest.raises(CommandError) as refused:  # Z is no query of recall-example
        run_command("import_run", "recall-example", path, "--name", "rag", "--quiet")
    assert str(refused.value).splitlines()[1:] == [
        "rag.jsonl line 3: query 'Z' is not in collection 'recall-example'"
    ]
    assert not Run.objects.filter(name="rag").exists()
    out, err = run_command(
        "import_run", "recall-example", path, "--name", "rag", "--quiet", "--ignore-unknown-queries"
    )
    assert err == ""
    # Z's line is left out: candidates A (3) + B (2), context A (1) + B (1).
    assert "  stage candidates: 2 queries, 5 rows, depth 3\n" in out
    assert "  stage context: 2 queries, 2 rows, depth 1\n" in out
    assert "  unknown ids: 1 unknown query id: their 1 line was skipped; " in out
    assert "  skipped queries: Z\n" in out


def test_import_run_refusals_name_the_problem(recall_v1, run_command, write_file) -> None:
    with pytest.raises(CommandError, match="no collection 'nope'; the collections are: recall"):
        run_command("import_run", "nope", RUN, "--name", "x")
    with pytest.raises(CommandError, match=r"missing\.trec: no such file"):
        run_command("import_run", "recall-example", "missing.trec", "--name", "x")
    bad = write_file("bad.trec", "A Q0 a 1 4.0 t\nA Q0 b 2\n")
    with pytest.raises(CommandError) as refused:
        run_command("import_run", "recall-example", bad, "--name", "x")
    assert str(refused.value).splitlines() == [
        "bad.trec: the run was refused; nothing was imported.",
        f"{bad} line 2: expected 6 fields 'qid Q0 docid rank score tag', found 4; "
        "put one ranked item per line",
    ]
    run_command("import_run", "recall-example", RUN, "--name", "x", "--quiet")
    with pytest.raises(CommandError, match="has a run named 'x' already"):
        run_command("import_run", "recall-example", RUN, "--name", "x", "--quiet")
    assert Run.objects.count() == 1


# -- score ----------------------------------------------------------------------------------


def test_score_defaults_to_the_latest_snapshot_and_says_so(example_run, run_command) -> None:
    collection = example_run.collection
    query = Query.objects.get(collection=collection, external_id="C")
    y = Item.objects.get(collection=collection, external_id="y")
    record_judgment(query=query, item=y, grade=1, reviewer=None, expected_version=None)
    v2, _ = freeze_snapshot(collection=collection, by=None)

    out, _ = run_command("score", "recall-example", "example", "--k", "2")
    lines = out.splitlines()
    assert lines[0] == f"evaluation {Evaluation.objects.get().pk}"
    assert (
        f"snapshot: v2 sha256:{v2.content_hash[:12]} (the latest; pass --snapshot N to pin another)"
    ) in lines
    # v2: C's G = {e, y}; macro R@2 = (1/3 + 1 + 1/2)/3 = 11/18, pooled 3/6.
    assert f"{'R@2':<14}{'0.6111':>20}{'0.5000':>20}{3:>7}" in lines

    out, _ = run_command("score", "recall-example", "example", "--k", "2", "--snapshot", "1")
    assert "snapshot: v1 sha256:" in out and "the latest" not in out
    # v1: the founding numbers, macro 4/9, pooled 2/5.
    assert f"{'R@2':<14}{'0.4444':>20}{'0.4000':>20}{3:>7}" in out.splitlines()

    out, _ = run_command("score", "recall-example", "example", "--k", "2", "--snapshot", "1")
    assert "(same inputs as before: stored result)" in out.splitlines()[0]
    assert Evaluation.objects.count() == 2


def test_score_json_carries_every_header_field(example_run, recall_v1, run_command) -> None:
    out, _ = run_command(
        "score", "recall-example", "example", "--k", "2,5", "--unjudged", "bounds", "--json"
    )
    report = json.loads(out)
    assert report["status"] == "ok"
    assert report["snapshot"] == {
        "number": 1,
        "content_hash": recall_v1.content_hash,
        "relevant_grade": 1,
        # The 8 lines of fixtures/recall-example/qrels.trec, every one a person's.
        "labels": {"total": 8, "human": 8, "model": {}, "summary": "all 8 by people"},
    }
    assert report["collection"]["unit"] == "document"
    assert report["stage"] == "default"
    assert report["run"]["name"] == "example"
    assert (report["run"]["order"], report["run"]["dedup"]) == ("score", "error")
    p = report["params"]
    assert (p["ks"], p["rel_level"], p["unjudged"]) == ([2, 5], 1, "bounds")
    assert (p["order"], p["dedup"], p["stage"], p["snapshot"]) == ("score", "error", "default", 1)
    assert report["counts"]["scorable"] == 3 and report["counts"]["excluded"] == {}
    # Bounds at 2 (see test_evaluations): macro R@2 in [4/9, 11/18], pooled in [2/5, 1/2].
    r2 = report["aggregates"]["R@2"]
    assert r2["macro"] == pytest.approx({"low": 4 / 9, "high": 11 / 18})
    assert r2["pooled"] == pytest.approx({"low": 2 / 5, "high": 1 / 2})
    assert sorted(report["per_query"]) == ["A", "B", "C"]
    assert report["fingerprint"] == Evaluation.objects.get().fingerprint


def test_score_rel_level_defaults_to_the_snapshots_relevant_grade(example_run, run_command) -> None:
    report = json.loads(run_command("score", "recall-example", "example", "--json")[0])
    assert report["params"]["rel_level"] == 1 and report["params"]["ks"] == [5, 10]


def test_score_prints_undefined_not_zero(example_run, run_command) -> None:
    # Every query back to unreviewed in v2: none is scorable. (A threshold above the
    # scale, which did this before, is refused now: test_parameter_bounds.)
    for query in Query.objects.filter(collection=example_run.collection):
        set_query_status(query=query, status="unreviewed", by=None)
    freeze_snapshot(collection=example_run.collection, by=None, note="nothing reviewed")
    out, _ = run_command("score", "recall-example", "example", "--k", "2", "--snapshot", "2")
    lines = out.splitlines()
    assert "queries: 0 scorable; excluded: unreviewed 3; empty ranking: 0" in lines
    assert "status: undefined — no scorable query, so every aggregate is undefined (not 0)" in lines
    assert f"{'R@2':<14}{'undefined':>20}{'undefined':>20}{0:>7}" in lines


def test_score_a_stage_of_a_multi_stage_run(recall_v1, run_command, write_file) -> None:
    path = write_file("rag.jsonl", STAGED_RUN)
    run_command("import_run", "recall-example", path, "--name", "rag", "--quiet")
    with pytest.raises(CommandError) as refused:
        run_command("score", "recall-example", "rag")
    assert str(refused.value) == (
        "run 'rag' has several stages (candidates, context); choose one with --stage"
    )
    # context: A [a] 1/3, B [d] 1, C absent 0 -> macro 4/9; pooled 2/5.
    report = json.loads(
        run_command("score", "recall-example", "rag", "--stage", "context", "--k", "2", "--json")[0]
    )
    assert report["stage"] == "context"
    assert report["counts"]["empty_ranking"] == 1
    assert report["aggregates"]["R@2"]["macro"] == pytest.approx(4 / 9)
    assert report["aggregates"]["R@2"]["pooled"] == pytest.approx(2 / 5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["nope", "example"],
            "no collection 'nope'; the collections are: recall-example",
        ),
        (
            ["recall-example", "nope"],
            "collection 'recall-example' has no run 'nope'; its runs are: example",
        ),
        (
            ["recall-example", "example", "--stage", "context"],
            "run 'example' has no stage 'context'; its stages: default",
        ),
        (
            ["recall-example", "example", "--snapshot", "7"],
            "collection 'recall-example' has no snapshot v7; it has v1",
        ),
        (
            ["recall-example", "example", "--mapping", "3"],
            "'recall-example' has no unit mapping v3; import one with manage.py import_mapping",
        ),
        (
            ["recall-example", "example", "--measures", "Recall@5"],
            "unknown measure 'Recall@5'",
        ),
    ],
    ids=["collection", "run", "stage", "snapshot", "mapping", "measure"],
)
def test_score_refusals_name_what_exists(example_run, run_command, args, message) -> None:
    with pytest.raises(CommandError) as refused:
        run_command("score", *args)
    assert str(refused.value).startswith(message)
    assert Evaluation.objects.count() == 0


def test_score_before_any_snapshot_says_to_freeze(recall_example, run_command) -> None:
    run_command("import_run", "recall-example", RUN, "--name", "example", "--quiet")
    with pytest.raises(CommandError) as refused:
        run_command("score", "recall-example", "example")
    assert str(refused.value) == (
        "collection 'recall-example' has no snapshot yet; freeze one with manage.py freeze_snapshot"
    )


def test_score_refuses_a_bad_cutoff(example_run, run_command) -> None:
    with pytest.raises(CommandError, match="--k"):
        run_command("score", "recall-example", "example", "--k", "0")


# -- import_mapping --------------------------------------------------------------------------


def test_import_mapping_and_score_with_it(example_run, run_command, write_file) -> None:
    """Map x and y onto one document 'x' (say they were two chunks of it). Then C ranks
    [x, x] -> [x] and B [x, d]; A [a, x, b, c]: nothing relevant moves, so R@2 stays the
    founding 4/9, and one row collapsed (C's y)."""
    path = write_file("map.tsv", "# chunk\tdocument\nx\tx\ny\tx\n")
    out, _ = run_command("import_mapping", "recall-example", path, "--note", "x and y merged")
    mapping = UnitMapping.objects.get()
    assert out.startswith("Stored unit mapping v1 of 'recall-example': 2 chunk → document ids")
    assert (mapping.number, mapping.n_entries, mapping.note) == (1, 2, "x and y merged")
    out, _ = run_command("import_mapping", "recall-example", path)
    assert out.strip() == "Same content as unit mapping v1; nothing stored."

    report = json.loads(
        run_command("score", "recall-example", "example", "--k", "2", "--mapping", "1", "--json")[0]
    )
    assert report["mapping"] == {"number": 1, "content_hash": mapping.content_hash}
    assert report["params"]["engine"]["mapping"]["collapsed"] == 1
    assert report["per_query"]["C"]["retrieved"] == 1
    assert report["aggregates"]["R@2"]["macro"] == pytest.approx(4 / 9)
    with pytest.raises(CommandError, match="has no unit mapping v2; it has v1"):
        run_command("score", "recall-example", "example", "--mapping", "2")


def test_import_mapping_refuses_a_bad_file(recall_example, run_command, write_file) -> None:
    path = write_file("map.tsv", "x\tx\nno tab here\nx\ty\n")
    with pytest.raises(CommandError) as refused:
        run_command("import_mapping", "recall-example", path)
    assert str(refused.value).splitlines() == [
        "map.tsv: the mapping was refused.",
        f"{path} line 2: expected 'fine<TAB>coarse', found 1 tab-separated field(s); "
        "separate the two ids with one tab",
        f"{path} line 3: fine id 'x' already mapped at line 1; map each fine id once",
    ]
    assert not UnitMapping.objects.exists()
    with pytest.raises(CommandError, match="no collection 'nope'"):
        run_command("import_mapping", "nope", path)
