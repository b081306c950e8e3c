"""A large TREC run is read a piece at a time (``scoring.services.run_lists``), and on
PostgreSQL stored as it is read: what is stored, pooled and refused is exactly what
reading the file whole gives.

The import tests import the same file twice, into two collections set up alike: once
with pieces of a few hundred bytes, once with pieces larger than the file (read whole).
The stored lists are also checked against the JSON text that Django's ``JSONField``
writes. Run them with ``DATABASE_URL=postgres://…`` too: that is the path that stores as
it reads.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import connection

from judgments.models import Collection, ReviewTask
from judgments.services import InvariantError
from scoring.models import RankedList, Run, RunStage
from scoring.services import RunImportError, import_run, run_lists
from scoring.services import runs as run_services
from tests.factories import BINARY_SCALE, make_collection, make_item, make_judgment, make_query

QUERIES = [f"q{i}" for i in range(12)]


def trec_lines(ids: Callable[[int, int], str], *, depth: int = 15, seed: int = 7) -> list[str]:
    """``depth`` lines per query, grouped by query, scores with ties and in no order."""
    rng = random.Random(seed)
    lines = []
    for qi, qid in enumerate(QUERIES):
        for r in range(depth):
            score = rng.choice([1.0, 2.5, 2.5, 3.0, 4.25]) + rng.randrange(3)
            lines.append(f"{qid} Q0 {ids(qi, r)} {r + 1} {score} tag\n")
    return lines


def plain_ids(qi: int, r: int) -> str:
    return f"d{(qi * 7 + r * 3) % 13}"  # 15 deep: the 14th and 15th repeat the 1st and 2nd


def collection_like(slug: str) -> Collection:
    """Queries q0..q10 (q11 is unknown to it), items d0..d9, q0's d0..d4 judged."""
    c = make_collection(slug=slug, scale=BINARY_SCALE, relevant_grade=1, pool_depth=4)
    queries = {qid: make_query(c, external_id=qid) for qid in QUERIES[:-1]}
    items = [make_item(c, external_id=f"d{i}") for i in range(10)]
    for item in items[:5]:
        make_judgment(query=queries["q0"], item=item, grade=1)
    return c


def stored(run: Run) -> dict[str, object]:
    lists = [
        (s.name, s.depth, s.n_queries, s.n_rows, ql.query_id, ql.items, ql.abstained)
        for s in run.stages.order_by("position")
        for ql in RankedList.objects.filter(stage=s).order_by("pk")
    ]
    tasks = sorted(
        (t.query.external_id, t.item.external_id, t.source, t.best_rank, t.priority)
        for t in ReviewTask.objects.filter(collection=run.collection).select_related(
            "query", "item"
        )
    )
    return {
        "run": (run.source_sha256, run.order_rule, run.dedup_policy, run.duplicates_dropped),
        "lists": lists,
        "tasks": tasks,
    }


def import_both(monkeypatch, path: Path, **options) -> tuple[dict, dict, list[Path]]:
    """(whole-file result, piecewise result, the files the engine read piecewise)."""
    results = []
    reads = []
    real_read = run_lists.engine.read_run_stages

    def counting(*args, **kwargs):
        reads.append(args[0])
        return real_read(*args, **kwargs)

    monkeypatch.setattr(run_lists.engine, "read_run_stages", counting)
    for slug, chunk in (("whole", 1 << 30), ("pieces", 300)):
        monkeypatch.setattr(run_lists, "CHUNK_BYTES", chunk)
        reads.clear()
        report = import_run(collection=collection_like(slug), path=path, name="r", **options)
        # No row of an attempt that was undone (PostgreSQL stores pieces as it reads them;
        # the foreign keys are checked at commit, which a test never reaches).
        assert not RankedList.objects.exclude(stage_id__in=RunStage.objects.values("pk")).exists()
        results.append({**stored(report.run), "report": report.lines(report.run.collection)})
    return results[0], results[1], list(reads)


@pytest.mark.django_db
@pytest.mark.parametrize("order", ["score", "rank"])
def test_pieces_store_and_pool_what_the_whole_file_does(monkeypatch, tmp_path, order):
    path = tmp_path / "run.trec"
    path.write_text("".join(trec_lines(plain_ids)), encoding="utf-8")

    whole, pieces, reads = import_both(
        monkeypatch, path, order=order, dedup="first", ignore_unknown_queries=True
    )

    assert len(reads) > 5 and path not in reads  # a piece at a time, whole queries each
    assert pieces == whole
    assert whole["run"][3] > 0  # duplicates were dropped, in several pieces
    assert any("skipped queries: q11" in line for line in whole["report"])


@pytest.mark.django_db
def test_ids_that_json_escapes_are_stored_as_django_would(monkeypatch, tmp_path):
    # Control characters (which JSON escapes too) are no ids: verity_limits.id_problem.
    odd = ['say"hi"', "back\\slash", "caf\u00e9", "\u65e5\u672c", "snow\u2603man"]

    def ids(qi: int, r: int) -> str:
        return odd[r % len(odd)] + str(r) if qi % 3 == 0 else plain_ids(qi, r)

    path = tmp_path / "run.trec"
    path.write_text("".join(trec_lines(ids)), encoding="utf-8")

    whole, pieces, _ = import_both(monkeypatch, path, dedup="first", ignore_unknown_queries=True)

    assert pieces == whole
    assert any("caf\u00e9" in item for row in whole["lists"] for item in row[5])
    # The text in the database is what Django's JSONField writes (on PostgreSQL, jsonb
    # keeps the value and the server prints it in its own form).
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT items FROM {RankedList._meta.db_table}")
        texts = [row[0] for row in cursor.fetchall()]
    if connection.vendor == "sqlite":
        assert all(text == json.dumps(json.loads(text)) for text in texts)
    assert sorted(json.loads(t) if isinstance(t, str) else t for t in texts) == sorted(
        row[5] for result in (whole, pieces) for row in result["lists"]
    )


@pytest.mark.django_db
def test_a_file_not_grouped_by_query_is_read_whole(monkeypatch, tmp_path):
    lines = trec_lines(plain_ids)
    lines.append(lines.pop(0))  # q0's first line comes last: q0 is in two places
    path = tmp_path / "run.trec"
    path.write_text("".join(lines), encoding="utf-8")

    whole, pieces, reads = import_both(
        monkeypatch, path, dedup="first", ignore_unknown_queries=True
    )

    assert pieces == whole
    # The last piece repeats q0: the file is then read whole.
    assert len(reads) > 2 and reads[-1] == path and path not in reads[:-1]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("bad_line", "options"),
    [
        ("q9 Q0 d1 3 not-a-score tag\n", {}),
        ("q9 Q0 d1 1 1.0\n", {}),  # 5 fields
        (None, {"dedup": "error"}),  # a duplicate in a late piece
        (None, {"ignore_unknown_queries": False}),  # q11 is unknown
    ],
    ids=["bad-score", "short-line", "duplicate", "unknown-query"],
)
def test_a_refusal_names_the_file_and_its_lines_as_before(
    monkeypatch, tmp_path, row_counts, bad_line, options
):
    lines = trec_lines(plain_ids)
    if bad_line is not None:
        lines.insert(len(lines) - 40, bad_line)
    path = tmp_path / "run.trec"
    path.write_text("".join(lines), encoding="utf-8")
    options = {"dedup": "first", "ignore_unknown_queries": True, **options}
    refusals = []
    for slug, chunk in (("whole", 1 << 30), ("pieces", 300)):
        monkeypatch.setattr(run_lists, "CHUNK_BYTES", chunk)
        collection = collection_like(slug)
        before = row_counts()
        with pytest.raises(RunImportError) as refused:
            import_run(collection=collection, path=path, name="r", **options)
        assert row_counts() == before
        named = f"'{slug}'"  # the collection's slug, the one difference allowed
        refusals.append(
            [m.replace(named, "'C'") for m in (str(refused.value), *refused.value.errors)]
        )

    assert refusals[0] == refusals[1]
    assert "line" in " ".join(refusals[0][1:])


def test_pieces_end_where_a_query_ends(monkeypatch, tmp_path):
    lines = trec_lines(plain_ids)
    path = tmp_path / "run.trec"
    path.write_text("".join(lines), encoding="utf-8")
    monkeypatch.setattr(run_lists, "CHUNK_BYTES", 256)
    digest = hashlib.sha256()
    pieces = [bytes(p) for p in run_lists._query_pieces(path, digest)]

    assert b"".join(pieces) == path.read_bytes()
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    firsts = [p.split(b" ", 1)[0] for p in pieces]
    lasts = [p.rstrip(b"\n").rsplit(b"\n", 1)[-1].split(b" ", 1)[0] for p in pieces]
    assert len(pieces) > 5
    assert all(a != b for a, b in zip(lasts, firsts[1:], strict=False))


@pytest.mark.parametrize("seed", range(40))
def test_the_cut_falls_where_the_last_query_begins(seed):
    """Random buffers: queries of 1 to 3,000 lines (some far deeper than the gallop's
    first step), now and then a blank line between them, an unfinished line at the end.
    Grouped by query, the cut is where the last query begins; not grouped (a query comes
    back), it is still a line start (the reader then finds the query in two pieces)."""
    rng = random.Random(seed)
    grouped = seed % 4 != 0
    lines: list[bytes] = []
    for q in range(rng.randrange(1, 6)):
        qid = (f"q{q}" if grouped else rng.choice([f"q{q}", "q7"])).encode()
        lines += [qid + b" Q0 d%d 1 1.0 t\n" % r for r in range(rng.choice([1, 2, 50, 3000]))]
        if rng.random() < 0.2:
            lines.append(b"\n")
    buf = b"".join(lines) + rng.choice([b"", b"q9 Q0 d1", b"q0 Q0"])

    cut = run_lists._last_query_start(buf)

    assert cut == 0 or buf[cut - 1 : cut] == b"\n"  # a line start
    if grouped:
        complete = buf[: buf.rfind(b"\n") + 1].splitlines(keepends=True)
        last = complete[-1].split(None, 1)[:1]
        start = len(complete)
        while start > 0 and complete[start - 1].split(None, 1)[:1] == last:
            start -= 1
        assert cut == (0 if start == 0 else len(b"".join(complete[:start])))


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_run_of_the_same_name_stored_meanwhile_wins(monkeypatch, tmp_path, row_counts):
    """Stored as it is read (PostgreSQL), the run's row is written after its lists: the
    unique constraint decides then, and the loser hears the usual sentence and leaves
    nothing behind. (Read whole, the race is tests/scoring/test_cli_edges.py's.)"""
    path = tmp_path / "run.trec"
    path.write_text("".join(trec_lines(plain_ids)), encoding="utf-8")
    monkeypatch.setattr(run_lists, "CHUNK_BYTES", 300)
    collection = collection_like("race")
    real_draw = run_services._draw_pks

    other = tmp_path / "other.trec"
    other.write_text("q0 Q0 d1 1 1.0 other\n", encoding="utf-8")

    def draw_while_another_import_stores_r(*models):
        import_run(collection=collection, path=other, name="r")
        return real_draw(*models)

    monkeypatch.setattr(run_services, "_draw_pks", draw_while_another_import_stores_r)
    before = row_counts()

    with pytest.raises(InvariantError, match="has a run named 'r' already"):
        import_run(
            collection=collection, path=path, name="r", dedup="first", ignore_unknown_queries=True
        )

    # Here the other import ran on this connection, so its rows went with the rollback.
    assert row_counts() == before
