"""``import_trec``: a collection from standard TREC files in one command.

The real TREC DL 2019 passage files (from ../shared) must round-trip: ``export_qrels``
gives back the same (qid, docid, grade) lines, and the queries with a judgment at the
relevant grade are the ones marked relevant, both read from the input file itself. The
format variants people meet (``0`` or ``Q0``, tabs or spaces, CRLF, documents as TSV or
JSON Lines) are generated from a slice of the same files and must import identically.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management.base import CommandError

from judgments.models import Collection, Item, Query, QueryStatus

pytestmark = pytest.mark.django_db

DL_SCALE = "0:not relevant,1:related,2:highly relevant,3:perfectly relevant"


def qrels_triples(text: str) -> set[tuple[str, str, int]]:
    return {(f[0], f[2], int(f[3])) for f in (line.split() for line in text.splitlines()) if f}


def relevant_queries(triples: set[tuple[str, str, int]], level: int) -> set[str]:
    return {q for q, _, g in triples if g >= level}


def test_dl19_round_trips_through_export_qrels(trec_dl_2019, run_command, tmp_path):
    qrels, topics = trec_dl_2019 / "qrels.txt", trec_dl_2019 / "topics.tsv"
    out, _ = run_command(
        "import_trec",
        "dl19",
        "--qrels",
        qrels,
        "--topics",
        topics,
        "--scale",
        DL_SCALE,
        "--relevant-grade",
        "2",
    )
    given = qrels_triples(qrels.read_text())
    expected_relevant = relevant_queries(given, 2)
    collection = Collection.objects.get(slug="dl19")
    assert collection.relevant_grade == 2
    statuses = dict(collection.queries.values_list("external_id", "status"))
    assert {q for q, s in statuses.items() if s == QueryStatus.RELEVANT} == expected_relevant
    assert set(statuses) == {line.split("\t")[0] for line in topics.read_text().splitlines()}
    assert f"{len(expected_relevant)} queries marked relevant" in out
    run_command("freeze_snapshot", "dl19")
    exported, _ = run_command("export_qrels", "dl19", "--snapshot", "1")
    assert qrels_triples(exported) == given
    assert len(exported.splitlines()) == len(given)


def dl19_slice(folder: Path, n_queries: int = 3) -> tuple[list[list[str]], dict[str, str]]:
    """The qrels lines (as fields) and topics of the first ``n_queries`` topics."""
    topics = dict(line.split("\t", 1) for line in (folder / "topics.tsv").read_text().splitlines())
    keep = set(list(topics)[:n_queries])
    rows = [f for f in (ln.split() for ln in (folder / "qrels.txt").read_text().splitlines())]
    return [f for f in rows if f[0] in keep], {q: topics[q] for q in keep}


def doc_text(docid: str) -> str:
    return f"passage {docid}: a generated text for the import test"


VARIANTS = {
    # name: (qrels line, topics line, line end, docs format)
    "Q0-tab-topics-LF-tsv": (lambda f: f"{f[0]} Q0 {f[2]} {f[3]}", "{q}\t{t}", "\n", "tsv"),
    "0-space-topics-CRLF-jsonl": (lambda f: f"{f[0]} 0 {f[2]} {f[3]}", "{q} {t}", "\r\n", "jsonl"),
    "tabs-qrels-CRLF-tsv3": (
        lambda f: "\t".join([f[0], "0", f[2], f[3]]),
        "{q}\t{t}",
        "\r\n",
        "tsv3",
    ),
    "beir-jsonl": (lambda f: f"{f[0]} Q0 {f[2]} {f[3]}", "{q}\t{t}", "\n", "beir"),
}


def write_docs(path: Path, ids: list[str], kind: str, end: str) -> None:
    extra = ["not-judged-1", "not-judged-2"]  # a corpus holds more than the qrels name
    lines = []
    for docid in ids + extra:
        if kind == "tsv":
            lines.append(f"{docid}\t{doc_text(docid)}")
        elif kind == "tsv3":
            lines.append(f"{docid}\tTitle {docid}\t{doc_text(docid)}")
        elif kind == "jsonl":
            lines.append(json.dumps({"id": docid, "text": doc_text(docid)}))
        else:  # BEIR corpus.jsonl: _id, title, text
            lines.append(json.dumps({"_id": docid, "title": "", "text": doc_text(docid)}))
    path.write_bytes((end.join(lines) + end).encode())


@pytest.mark.parametrize("variant", VARIANTS)
def test_format_variants_import_the_same(variant, trec_dl_2019, run_command, tmp_path):
    qrels_line, topic_line, end, docs_kind = VARIANTS[variant]
    rows, topics = dl19_slice(trec_dl_2019)
    qrels = tmp_path / "qrels"
    qrels.write_bytes((end.join(qrels_line(f) for f in rows) + end).encode())
    topic_file = tmp_path / "topics"
    topic_file.write_bytes(
        (end.join(topic_line.format(q=q, t=t) for q, t in topics.items()) + end).encode()
    )
    docs = tmp_path / "docs"
    ids = sorted({f[2] for f in rows})
    write_docs(docs, ids, docs_kind, end)

    out, _ = run_command(
        "import_trec", "v", "--qrels", qrels, "--topics", topic_file, "--docs", docs,
        "--scale", DL_SCALE, "--relevant-grade", "2",
    )  # fmt: skip

    assert "2 documents of" in out and "skipped: no qrels line names them" in out
    collection = Collection.objects.get(slug="v")
    assert dict(collection.queries.values_list("external_id", "text")) == topics
    items = dict(Item.objects.filter(collection=collection).values_list("external_id", "text"))
    assert items == {docid: doc_text(docid) for docid in ids}  # texts read, extras skipped
    assert not Item.objects.filter(collection=collection, placeholder=True).exists()
    run_command("freeze_snapshot", "v")
    exported, _ = run_command("export_qrels", "v", "--snapshot", "1")
    given = {(f[0], f[2], int(f[3])) for f in rows}
    assert qrels_triples(exported) == given
    relevant = dict(
        collection.queries.filter(status=QueryStatus.RELEVANT).values_list("external_id", "pk")
    )
    assert set(relevant) == relevant_queries(given, 2)


def test_defaults_unreviewed_and_refusals(run_command, write_file, row_counts):
    qrels = write_file("q.txt", "1 0 a 2\n1 0 b 0\n2 0 c 0\n3 0 d -1\n")
    topics = write_file("t.tsv", "1\tone\n2\ttwo\n3\tthree\n4\tfour\n")
    out, _ = run_command("import_trec", "small", "--qrels", qrels, "--topics", topics)
    collection = Collection.objects.get(slug="small")
    # No --scale: the grades the qrels use (0..2), relevant from 1.
    assert collection.scale == [
        {"grade": 0, "name": "not relevant"},
        {"grade": 1, "name": "grade 1"},
        {"grade": 2, "name": "grade 2"},
    ]
    assert collection.relevant_grade == 1
    statuses = dict(collection.queries.values_list("external_id", "status"))
    assert statuses == {"1": "relevant", "2": "unreviewed", "3": "unreviewed", "4": "unreviewed"}
    # Query 2 is judged non-relevant only; 3 has only an unjudged marker; 4 nothing.
    assert "1 queries marked relevant; left unreviewed: 0 with a relevant judgment, " in out
    assert "1 judged non-relevant only, 2 without judgments" in out
    assert "unjudged pairs queued: 1" in out
    assert Item.objects.filter(collection=collection, placeholder=True).count() == 4

    run_command(
        "import_trec", "later", "--qrels", qrels, "--topics", topics, "--status", "unreviewed"
    )
    assert set(Query.objects.filter(collection__slug="later").values_list("status", flat=True)) == {
        "unreviewed"
    }

    before = row_counts()
    unknown = write_file("u.txt", "1 0 a 1\n9 0 b 1\n")
    with pytest.raises(CommandError) as refused:
        run_command("import_trec", "bad", "--qrels", unknown, "--topics", topics)
    assert "u.txt, line 2" in str(refused.value) and "'9'" in str(refused.value)
    with pytest.raises(CommandError, match="exists already"):
        run_command("import_trec", "small", "--qrels", qrels, "--topics", topics)
    assert row_counts() == before


@pytest.mark.parametrize("grade", ["32768", "99999999999999999999", "-32768", "1" * 5000])
def test_a_grade_past_the_column_is_refused_naming_file_and_line(
    run_command, write_file, row_counts, grade
):
    # Issue 23, item 12: 10**20 built a scale of 10**20 grades (20 s, 1.68 GB, killed);
    # 32768 reached PostgreSQL's smallint as an unhandled DataError.
    qrels = write_file("big.txt", f"1 0 a 1\n1 0 b {grade}\n")
    topics = write_file("t.tsv", "1\tone\n")
    before = row_counts()
    with pytest.raises(CommandError) as refused:
        run_command("import_trec", "big", "--qrels", qrels, "--topics", topics)
    message = str(refused.value)
    assert "big.txt, line 2" in message
    assert "out of range; grades are between -32767 and 32767" in message
    assert row_counts() == before


def test_the_largest_grade_is_stored_and_the_default_scale_stays_short(run_command, write_file):
    qrels = write_file("top.txt", "1 0 a 32767\n1 0 b 3\n")
    topics = write_file("t.tsv", "1\tone\n")
    run_command("import_trec", "top", "--qrels", qrels, "--topics", topics)
    collection = Collection.objects.get(slug="top")
    assert [g["grade"] for g in collection.scale] == [*range(11), 32767]
    assert collection.queries.get().judgments.get(item__external_id="a").grade == 32767


def test_a_scale_option_grade_past_the_column_is_refused(run_command, write_file, row_counts):
    qrels = write_file("q.txt", "1 0 a 1\n")
    topics = write_file("t.tsv", "1\tone\n")
    before = row_counts()
    with pytest.raises(CommandError, match=r"--scale: .*grade 40000 is out of range"):
        run_command(
            "import_trec", "s", "--qrels", qrels, "--topics", topics, "--scale", "0:no,40000:yes"
        )
    assert row_counts() == before
