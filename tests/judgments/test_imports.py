"""import_collection: all or nothing, every refusal names file and line and says how to fix.

The table of defects runs each bad input against a database that already holds the
founding text's example (and a user ``ana``), and checks that the command fails with
the file, the line and the hint, and that no table gained or lost a row.
"""

from __future__ import annotations

import json
from shlex import split
from typing import Any

import pytest
from django.core.management.base import CommandError

from judgments import formats
from judgments.models import (
    ChangeSource,
    Collection,
    EvidenceCondition,
    Item,
    Judgment,
    JudgmentChange,
    Query,
    QueryStatus,
    QueryStatusChange,
    ReviewTask,
    TaskStatus,
)
from judgments.services import set_membership, set_query_status
from tests.judgments.conftest import RECALL_EXAMPLE

BINARY = [{"grade": 0, "name": "not relevant"}, {"grade": 1, "name": "relevant"}]
FRESH = {"type": "collection", "slug": "fresh", "name": "Fresh", "scale": BINARY,
         "relevant_grade": 1}  # fmt: skip


def jl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def item(id: str, **fields: Any) -> dict[str, Any]:
    return {"type": "item", "id": id, "text": f"text of {id}", **fields}


def query(id: str, **fields: Any) -> dict[str, Any]:
    return {"type": "query", "id": id, "text": f"query {id}", **fields}


def judgment(q: str, i: str, grade: Any, **fields: Any) -> dict[str, Any]:
    return {"type": "judgment", "query": q, "item": i, "grade": grade, **fields}


INTO_EXAMPLE = ["--collection", "recall-example"]

# (id, files {name: content}, extra arguments ("@name" = that file's path),
#  (file, line) the message must name, fragments it must contain)
DEFECTS = [
    ("qrels-field-count", {"q.txt": "A 0 a 1\nA 0 b\n"}, [*INTO_EXAMPLE, "--qrels", "@q.txt"],
     ("q.txt", 2), ["expected 4 fields", "found 3"]),
    ("qrels-grade-not-integer", {"q.txt": "A 0 a 1\nA 0 b 1.5\n"},
     [*INTO_EXAMPLE, "--qrels", "@q.txt"], ("q.txt", 2), ["'1.5' is not an integer"]),
    ("qrels-grade-off-scale", {"q.txt": "A 0 y 0\nA 0 y2 3\n"},
     [*INTO_EXAMPLE, "--qrels", "@q.txt", "--create-missing-items"], ("q.txt", 2),
     ["grade 3 is not on the scale", "0 not relevant, 1 relevant"]),
    ("qrels-grade-below-minus-one", {"q.txt": "# pooled\nA 0 y -2\n"},
     [*INTO_EXAMPLE, "--qrels", "@q.txt"], ("q.txt", 2), ["below -1"]),
    ("qrels-unknown-query", {"q.txt": "A 0 y 0\nZ 0 a 1\n"}, [*INTO_EXAMPLE, "--qrels", "@q.txt"],
     ("q.txt", 2), ["unknown query 'Z'", "--queries"]),
    ("qrels-unknown-item", {"q.txt": "A\t0\ty\t0\nB\t0\tnew-doc\t0\n"},
     [*INTO_EXAMPLE, "--qrels", "@q.txt"], ("q.txt", 2),
     ["unknown item 'new-doc'", "--create-missing-items"]),
    ("qrels-duplicate-line", {"q.txt": "A 0 y 0\nB 0 y 0\nA Q0 y 0\n"},
     [*INTO_EXAMPLE, "--qrels", "@q.txt"], ("q.txt", 3), ["duplicate", "same as line 1"]),
    ("qrels-duplicate-pair", {"q.txt": "A 0 y 0\nA 0 y 1\n"}, [*INTO_EXAMPLE, "--qrels", "@q.txt"],
     ("q.txt", 2), ["appears twice", "grade 0 at line 1"]),
    ("qrels-conflicts-with-stored", {"q.txt": "A 0 y 0\nA 0 a 0\n"},
     [*INTO_EXAMPLE, "--qrels", "@q.txt"], ("q.txt", 2),
     ["already judged grade 1", "never overwrites", "review screen"]),
    ("qrels-bad-utf8", {"q.txt": b"A 0 y 0\nA 0 \xff\xfe 1\n"},
     [*INTO_EXAMPLE, "--qrels", "@q.txt"], ("q.txt", 2), ["not valid UTF-8", "save the file as"]),
    ("qrels-empty", {"q.txt": ""}, [*INTO_EXAMPLE, "--qrels", "@q.txt"], ("q.txt", 1),
     ["the file is empty"]),
    ("bundle-empty", {"b.jsonl": ""}, ["@b.jsonl"], ("b.jsonl", 1), ["the file is empty"]),
    ("bundle-missing-collection-line", {"b.jsonl": jl(item("a"), query("q"))}, ["@b.jsonl"],
     ("b.jsonl", 1), ["first line must be the collection record"]),
    ("bundle-bad-json", {"b.jsonl": jl(FRESH, item("a")) + '{"type": "item", "id": }\n'},
     ["@b.jsonl"], ("b.jsonl", 3), ["not valid JSON"]),
    ("bundle-grade-is-a-string",
     {"b.jsonl": jl(FRESH, item("a"), query("q"), judgment("q", "a", "1"))},
     ["@b.jsonl"], ("b.jsonl", 4), ["'grade' must be an integer", "without quotes"]),
    ("bundle-id-is-a-number", {"b.jsonl": jl(FRESH, item(7))}, ["@b.jsonl"], ("b.jsonl", 2),
     ["'id' must be a string", 'write "7"']),
    ("bundle-unknown-record-type", {"b.jsonl": jl(FRESH, {"type": "document", "id": "a"})},
     ["@b.jsonl"], ("b.jsonl", 2), ["unknown record type 'document'"]),
    ("bundle-unknown-field", {"b.jsonl": jl(FRESH, item("a", grdae=1))}, ["@b.jsonl"],
     ("b.jsonl", 2), ["unknown field(s) 'grdae'"]),
    ("bundle-blank-line", {"b.jsonl": jl(FRESH) + "\n" + jl(item("a"))}, ["@b.jsonl"],
     ("b.jsonl", 2), ["blank line"]),
    ("bundle-second-collection", {"b.jsonl": jl(FRESH, item("a"), FRESH)}, ["@b.jsonl"],
     ("b.jsonl", 3), ["first line only"]),
    ("bundle-duplicate-item", {"b.jsonl": jl(FRESH, item("a"), item("b"), item("a"))},
     ["@b.jsonl"], ("b.jsonl", 4), ["duplicate item id 'a'", "first at line 2"]),
    ("bundle-duplicate-query", {"b.jsonl": jl(FRESH, query("q"), query("q"))}, ["@b.jsonl"],
     ("b.jsonl", 3), ["duplicate query id 'q'"]),
    ("bundle-relevant-without-relevant-judgment",
     {"b.jsonl": jl(FRESH, item("a"), query("q", status="relevant"), judgment("q", "a", 0))},
     ["@b.jsonl"], ("b.jsonl", 3), ["status 'relevant' needs a relevant judgment"]),
    ("bundle-no-answer-with-relevant-judgment",
     {"b.jsonl": jl(FRESH, item("a"), query("q", status="no_answer"), judgment("q", "a", 1))},
     ["@b.jsonl"], ("b.jsonl", 3), ["'no_answer'", "1 relevant judgment"]),
    ("bundle-unknown-status",
     {"b.jsonl": jl(FRESH, query("q", status="reviewed"))}, ["@b.jsonl"], ("b.jsonl", 2),
     ["status 'reviewed' is not one of unreviewed, relevant, no_answer"]),
    ("bundle-evidence-names-unknown-item",
     {"b.jsonl": jl(FRESH, item("a"), query("q", evidence=[["a", "zz"]]))}, ["@b.jsonl"],
     ("b.jsonl", 3), ["evidence condition names unknown item(s) 'zz'"]),
    ("bundle-evidence-wrong-shape",
     {"b.jsonl": jl(FRESH, item("a"), query("q", evidence=["a"]))}, ["@b.jsonl"],
     ("b.jsonl", 3), ["'evidence'", "AND-groups"]),
    ("bundle-unknown-unit", {"b.jsonl": jl({**FRESH, "unit": "page"})}, ["@b.jsonl"],
     ("b.jsonl", 1), ["unit 'page' must be one of document, chunk, evidence"]),
    ("bundle-relevant-grade-off-scale", {"b.jsonl": jl({**FRESH, "relevant_grade": 2})},
     ["@b.jsonl"], ("b.jsonl", 1), ["relevant grade 2 is not on the scale"]),
    ("bundle-scale-not-ascending",
     {"b.jsonl": jl({**FRESH, "scale": [BINARY[1], BINARY[0]]})}, ["@b.jsonl"],
     ("b.jsonl", 1), ["distinct and ascending"]),
    ("bundle-unjudged-and-judged-pair",
     {"b.jsonl": jl(FRESH, item("a"), query("q"), judgment("q", "a", 1),
                    {"type": "unjudged", "query": "q", "item": "a"})},
     ["@b.jsonl"], ("b.jsonl", 5), ["appears twice", "unjudged here, grade 1 at line 4"]),
    ("bundle-nul-in-text", {"b.jsonl": jl(FRESH, item("a", text="bad\u0000text"))},
     ["@b.jsonl"], ("b.jsonl", 2), ["NUL character"]),
    ("bundle-placeholder-with-text", {"b.jsonl": jl(FRESH, item("a", placeholder=True))},
     ["@b.jsonl"], ("b.jsonl", 2), ["a placeholder item has no title or text"]),
    ("bundle-existing-collection-differs",
     {"b.jsonl": jl({**FRESH, "slug": "recall-example", "name": "Other"})}, ["@b.jsonl"],
     ("b.jsonl", 1), ["collection 'recall-example' exists with", "--collection NEW-SLUG"]),
    ("topics-without-text", {"t.tsv": "D\tWhat is new?\nE\n", "q.txt": "D 0 a 0\n"},
     [*INTO_EXAMPLE, "--queries", "@t.tsv", "--qrels", "@q.txt"], ("t.tsv", 2),
     ["only one field"]),
    ("topics-duplicate-id", {"t.tsv": "D\tWhat is new?\nD\tAgain\n"},
     [*INTO_EXAMPLE, "--queries", "@t.tsv"], ("t.tsv", 2), ["duplicate query id 'D'"]),
    ("items-conflict-with-stored", {"i.jsonl": jl(item("y"), item("a", title="Other title"))},
     [*INTO_EXAMPLE, "--items", "@i.jsonl"], ("i.jsonl", 2),
     ["item 'a' exists", "title, text", "never overwrites an item"]),
    ("queries-conflict-with-stored", {"t.tsv": "D\tNew one\nA\tA different text\n"},
     [*INTO_EXAMPLE, "--queries", "@t.tsv"], ("t.tsv", 2),
     ["query 'A' exists", "different text"]),
    ("judgments-status-changes-reviewed-query",
     {"j.jsonl": jl({"type": "status", "query": "A", "status": "no_answer"})},
     [*INTO_EXAMPLE, "--judgments", "@j.jsonl"], ("j.jsonl", 1),
     ["stored with status 'relevant'", "never changes a reviewed status"]),
    ("judgments-item-record-misplaced", {"j.jsonl": jl(judgment("A", "y", 0), item("z"))},
     [*INTO_EXAMPLE, "--judgments", "@j.jsonl"], ("j.jsonl", 2),
     ["does not belong in a judgments file", "--items"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("files", "args", "where", "fragments"),
    [pytest.param(*case[1:], id=case[0]) for case in DEFECTS],
)
def test_defect_is_refused_naming_file_and_line_and_changes_nothing(
    recall_example, reviewer_ana, run_command, row_counts, write_file, files, args, where, fragments
):
    paths = {name: write_file(name, content) for name, content in files.items()}
    argv = [str(paths[a[1:]]) if a.startswith("@") else a for a in args]
    before = row_counts()

    with pytest.raises(CommandError) as refused:
        run_command("import_collection", *argv)

    message = str(refused.value)
    name, line = where
    assert f"{paths[name]}, line {line}: " in message
    for fragment in fragments:
        assert fragment in message
    assert message.startswith("Nothing was imported")
    assert row_counts() == before


def test_every_problem_is_collected_and_at_most_25_are_listed(
    recall_example, run_command, row_counts, write_file
):
    lines = "".join(f"A 0 doc{n} {n % 7}\n" for n in range(40))  # grades 2..6 are off scale
    path = write_file("many.txt", lines)
    before = row_counts()

    with pytest.raises(CommandError) as refused:
        run_command("import_collection", *INTO_EXAMPLE, "--qrels", path)

    message = str(refused.value)
    # 40 unknown items (with the fix in full only once) + 28 grades off the scale
    assert message.splitlines()[0] == "Nothing was imported: 68 problems in the input."
    assert len(message.splitlines()) == 1 + 25 + 1
    assert message.splitlines()[-1] == "… and 43 more"
    assert f"{path}, line 1: unknown item 'doc0'" in message
    assert f"{path}, line 2: unknown item 'doc1'; see {path}, line 1 for the fix" in message
    assert row_counts() == before


def test_a_relevant_judgment_for_a_no_answer_query_is_refused(
    recall_example, run_command, row_counts, write_file
):
    run_command("import_collection", *INTO_EXAMPLE, "--queries", write_file("t.tsv", "N\tNone\n"))
    set_query_status(query=Query.objects.get(external_id="N"), status="no_answer", by=None)
    path = write_file("q.txt", "N 0 x 0\nN 0 a 1\n")
    before = row_counts()

    with pytest.raises(CommandError) as refused:
        run_command("import_collection", *INTO_EXAMPLE, "--qrels", path)

    assert f"{path}, line 2: query 'N' is marked 'confirmed no answer'" in str(refused.value)
    assert row_counts() == before


CREATE = "--create --scale 0:a,1:b --relevant-grade 1"
USAGE_ERRORS = [
    ("--collection nope --qrels @q", "collection 'nope' does not exist"),
    (f"--collection recall-example {CREATE} --qrels @q", "'recall-example' exists already"),
    ("--collection new --create --scale 0:a,1:b --relevant-grade 0 --qrels @q",
     "relevant grade 0 is the lowest grade"),
    ("--collection new --create --scale 0:a,b --relevant-grade 1 --qrels @q",
     "--scale: scale entry 'b' must be GRADE:NAME"),
    ("--collection new --create --qrels @q", "--create needs --scale"),
    (f"--collection 'Not a slug!' {CREATE} --qrels @q", "may hold only letters, digits"),
    ("--collection recall-example --qrels @q --by ghost", "--by: no user"),
    ("--collection recall-example --qrels /no/such/file", "cannot read it"),
    (f"{RECALL_EXAMPLE / 'bundle.jsonl'} --qrels @q", "a bundle holds everything"),
    ("--collection recall-example", "nothing to import"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "fragment"), USAGE_ERRORS)
def test_service_and_usage_errors_surface_as_command_errors(
    recall_example, run_command, row_counts, write_file, args, fragment
):
    path = write_file("q.txt", "A 0 y 0\n")
    before = row_counts()

    with pytest.raises(CommandError) as refused:
        run_command("import_collection", *[str(path) if a == "@q" else a for a in split(args)])

    assert fragment in str(refused.value)
    assert row_counts() == before


# -- what a good import writes ---------------------------------------------------------------


def test_recall_example_bundle_creates_everything_with_history(recall_example):
    c = recall_example
    assert (c.unit, c.relevant_grade, c.grades) == ("document", 1, [0, 1])
    assert sorted(Item.objects.filter(collection=c).values_list("external_id", flat=True)) == [
        "a", "b", "c", "d", "e", "x", "y",
    ]  # fmt: skip
    relevant = {
        q.external_id: sorted(
            q.judgments.filter(grade__gte=1).values_list("item__external_id", flat=True)
        )
        for q in Query.objects.filter(collection=c)
    }
    assert relevant == {"A": ["a", "b", "c"], "B": ["d"], "C": ["e"]}
    assert set(Query.objects.filter(collection=c).values_list("status", flat=True)) == {
        QueryStatus.RELEVANT
    }
    history = JudgmentChange.objects.filter(query__collection=c)
    assert history.count() == Judgment.objects.filter(query__collection=c).count() == 8
    assert {(h.old_grade is None, h.version, h.source) for h in history} == {
        (True, 1, ChangeSource.IMPORT)
    }
    status_history = QueryStatusChange.objects.filter(query__collection=c)
    assert sorted((s.query.external_id, s.old_status, s.new_status, s.source)
                  for s in status_history) == [
        (q, "unreviewed", "relevant", "import") for q in "ABC"
    ]  # fmt: skip
    assert not ReviewTask.objects.exists()


def test_reimporting_the_same_bundle_skips_and_counts_everything(
    recall_example, run_command, row_counts
):
    before = row_counts()

    out, _ = run_command("import_collection", RECALL_EXAMPLE / "bundle.jsonl")

    assert "items: 0 created" in out and "7 already there" in out
    assert "judgments: 0 created, 8 identical ones already there (skipped)" in out
    assert "statuses set: none" in out
    assert row_counts() == before


def test_bundle_imports_under_another_slug(recall_example, run_command):
    out, _ = run_command(
        "import_collection", RECALL_EXAMPLE / "bundle.jsonl", "--collection", "copy"
    )

    assert "Imported into collection 'copy' (created)" in out
    copy = Collection.objects.get(slug="copy")
    assert copy.name == recall_example.name
    assert Judgment.objects.filter(query__collection=copy).count() == 8


def test_qrels_with_topics_comments_tabs_q0_and_unjudged(db, run_command, write_file):
    topics = write_file("topics.tsv", "# topics\n301\tforeign minorities\n302\tpolio\tvaccine\n")
    qrels = write_file(
        "qrels.txt",
        "# judged by assessor 3\n"
        "301 0 FBIS3-10082 1\n"
        "301\tQ0\tCR#93E-1860\t0\n"  # '#' inside a docid is data
        "\n"
        "302  0   FT921-9 -1\n"
        "#302 0 commented-out 1\n",
    )

    out, _ = run_command(
        "import_collection", "--collection", "trec", "--create", "--scale", "0:no,1:yes",
        "--relevant-grade", "1", "--queries", topics, "--qrels", qrels, "--create-missing-items",
    )  # fmt: skip

    c = Collection.objects.get(slug="trec")
    assert dict(Query.objects.filter(collection=c).values_list("external_id", "text")) == {
        "301": "foreign minorities",
        "302": "polio\tvaccine",
    }
    judged = Judgment.objects.filter(query__collection=c)
    assert sorted(judged.values_list("query__external_id", "item__external_id", "grade")) == [
        ("301", "CR#93E-1860", 0),
        ("301", "FBIS3-10082", 1),
    ]
    task = ReviewTask.objects.get(collection=c)
    assert (task.query.external_id, task.item.external_id, task.status, task.source) == (
        "302", "FT921-9", TaskStatus.PENDING, "qrels -1",
    )  # fmt: skip
    placeholders = Item.objects.filter(collection=c)
    assert placeholders.count() == 3
    assert all(i.placeholder and i.text == "" for i in placeholders)
    assert "3 placeholders created" in out
    assert "1 unjudged pairs queued (1 new tasks)" in out
    # without --set-status, statuses stay as they were, and the output says how to set them
    assert set(Query.objects.filter(collection=c).values_list("status", flat=True)) == {
        "unreviewed"
    }
    assert "1 queries with a relevant judgment are left unreviewed" in out
    assert "--set-status" in out


def test_set_status_marks_queries_with_a_relevant_judgment_relevant(
    db, reviewer_ana, run_command, write_file
):
    topics = write_file("topics.tsv", "1\tone\n2\ttwo\n3\tthree\n")
    qrels = write_file("qrels.txt", "1 0 d1 2\n1 0 d2 0\n2 0 d1 1\n3 0 d3 -1\n")

    out, _ = run_command(
        "import_collection", "--collection", "graded", "--create", "--scale",
        "0:not relevant,1:related,2:relevant,3:perfect", "--relevant-grade", "2",
        "--queries", topics, "--qrels", qrels, "--create-missing-items", "--set-status",
        "--by", "ana",
    )  # fmt: skip

    statuses = dict(Query.objects.values_list("external_id", "status"))
    assert statuses == {"1": "relevant", "2": "unreviewed", "3": "unreviewed"}
    change = QueryStatusChange.objects.get()
    assert (change.query.external_id, change.new_status, change.changed_by) == (
        "1", "relevant", reviewer_ana,
    )  # fmt: skip
    assert "statuses set: 1 relevant" in out
    assert "--set-status: queries of this import with a judgment at grade ≥ 2" in out


def test_item_import_fills_in_placeholders(db, run_command, write_file):
    run_command(
        "import_collection", "--collection", "p", "--create", "--scale", "0:no,1:yes",
        "--relevant-grade", "1", "--queries", write_file("t.tsv", "q\tquestion\n"),
        "--qrels", write_file("q.txt", "q 0 d1 1\n"), "--create-missing-items",
    )  # fmt: skip
    items = write_file("items.jsonl", jl(item("d1", title="Doc one", metadata={"lang": "en"})))

    out, _ = run_command("import_collection", "--collection", "p", "--items", items)

    d1 = Item.objects.get(external_id="d1")
    assert (d1.placeholder, d1.title, d1.text, d1.metadata) == (
        False, "Doc one", "text of d1", {"lang": "en"},
    )  # fmt: skip
    assert "1 placeholders filled in" in out


def test_imported_judgment_completes_the_open_review_task(db, run_command, write_file):
    args = ["--collection", "t", "--create-missing-items"]
    run_command(
        "import_collection", *args, "--create", "--scale", "0:no,1:yes", "--relevant-grade",
        "1", "--queries", write_file("t.tsv", "q\tquestion\n"),
        "--qrels", write_file("q1.txt", "q 0 d1 -1\nq 0 d2 -1\n"),
    )  # fmt: skip
    assert ReviewTask.objects.filter(status=TaskStatus.PENDING).count() == 2

    out, _ = run_command("import_collection", *args, "--qrels", write_file("q2.txt", "q 0 d1 1\n"))

    done = ReviewTask.objects.get(item__external_id="d1")
    assert done.status == TaskStatus.DONE
    assert ReviewTask.objects.get(item__external_id="d2").status == TaskStatus.PENDING
    assert "1 open tasks completed by imported judgments" in out


def test_judgments_file_with_reviewers_notes_statuses_and_unjudged(
    recall_example, reviewer_ana, run_command, write_file, django_user_model
):
    # ana is a member, so she stays the judgment's reviewer; the history names the importer.
    set_membership(collection=recall_example, user=reviewer_ana, role="reviewer")
    importer = django_user_model.objects.create_user(username="imp")
    run_command("import_collection", *INTO_EXAMPLE, "--queries", write_file("t.tsv", "D\tnew\n"))
    path = write_file(
        "j.jsonl",
        jl(
            judgment("D", "y", 1, reviewer="ana", note="says it plainly"),
            judgment("A", "x", 0),  # identical to the stored one: skipped
            {"type": "unjudged", "query": "D", "item": "x", "source": "run bm25", "rank": 3},
            {"type": "status", "query": "D", "status": "relevant"},
        ),
    )

    out, _ = run_command("import_collection", *INTO_EXAMPLE, "--judgments", path, "--by", "imp")

    j = Judgment.objects.get(query__external_id="D")
    assert (j.item.external_id, j.grade, j.reviewer, j.note, j.version) == (
        "y", 1, reviewer_ana, "says it plainly", 1,
    )  # fmt: skip
    change = JudgmentChange.objects.get(query__external_id="D")
    assert (change.changed_by, change.new_note, change.source) == (
        importer, "says it plainly", "import",
    )  # fmt: skip
    assert Query.objects.get(external_id="D").status == QueryStatus.RELEVANT
    task = ReviewTask.objects.get()
    assert (task.item.external_id, task.source, task.best_rank) == ("x", "run bm25", 3)
    assert "judgments: 1 created, 1 identical ones already there" in out


def test_trec_dl_2019_qrels_import(db, run_command, trec_dl_2019):
    # Its speed is measured by bench/qrels_import_bench.py, not asserted here.
    out, err = run_command(
        "import_collection", "--collection", "dl19", "--create", "--unit", "chunk",
        "--scale", "0:irrelevant,1:related,2:highly relevant,3:perfectly relevant",
        "--relevant-grade", "2", "--queries", trec_dl_2019 / "topics.tsv",
        "--qrels", trec_dl_2019 / "qrels.txt", "--create-missing-items", "--set-status",
    )  # fmt: skip

    assert Judgment.objects.count() == JudgmentChange.objects.count() == 9260
    assert Query.objects.count() == 43
    assert Item.objects.filter(placeholder=True).count() == Item.objects.count()
    assert Query.objects.filter(status="relevant").count() == 43  # each has a grade ≥ 2
    assert err == ""  # progress bars only on a terminal (tests/jobs: TerminalProgress)
    assert "judgments: 9260 created" in out


# -- the pure parsers --------------------------------------------------------------------------


def test_comment_lines_in_qrels_match_trec_eval(trec_eval_tests):
    """trec_eval's own test files: the commented copy reads as the plain one."""
    plain, plain_problems = formats.parse_qrels(
        (trec_eval_tests / "qrels.test").read_bytes(), "qrels.test"
    )
    commented, problems = formats.parse_qrels(
        (trec_eval_tests / "qrels.test.with-comments").read_bytes(), "with-comments"
    )

    assert plain_problems == problems == []
    # three '#' lines are comments; the copy's one other change is a '#' inside a docid
    expected = [
        (j.query, "CR#93E-1860" if j.item == "CR93E-1860" else j.item, j.grade)
        for j in plain.judgments
    ]
    assert [(j.query, j.item, j.grade) for j in commented.judgments] == expected
    assert ("301", "CR#93E-1860", 0) in expected


def test_qrels_parser_reads_crlf_bom_and_any_whitespace():
    bundle, problems = formats.parse_qrels(b"\xef\xbb\xbfq1 0 d1 1\r\nq1\tQ0\t d2 \t0\r\n", "q")

    assert problems == []
    assert [(j.query, j.item, j.grade, j.where.line) for j in bundle.judgments] == [
        ("q1", "d1", 1, 1),
        ("q1", "d2", 0, 2),
    ]


def test_json_duplicate_keys_and_nan_are_refused():
    data = jl(FRESH) + '{"type": "item", "id": "a", "id": "b"}\n{"type": "item", "id": NaN}\n'

    _, problems = formats.parse_bundle(data.encode(), "b.jsonl")

    assert [str(p) for p in problems] == [
        "b.jsonl, line 2: the key 'id' appears twice in one object; keep one",
        "b.jsonl, line 3: NaN is not a JSON number; write a finite number or null",
    ]


def test_ids_of_another_collection_are_other_items_and_queries(
    recall_example, run_command, write_file
):
    """Ids are per collection: a bundle reusing the example's item and query ids (with other
    texts, an evidence condition and judgments) creates its own, and leaves the example's
    as they were."""
    example_items = dict(Item.objects.filter(collection=recall_example).values_list(
        "external_id", "text"))  # fmt: skip
    bundle = write_file("fresh.jsonl", jl(
        FRESH, item("a"), item("x"), query("A", evidence=[["a", "x"]]),
        judgment("A", "a", 1), judgment("A", "x", 0),
    ))  # fmt: skip

    run_command("import_collection", bundle)

    fresh = Collection.objects.get(slug="fresh")
    assert dict(Item.objects.filter(collection=fresh).values_list("external_id", "text")) == {
        "a": "text of a",
        "x": "text of x",
    }
    assert Query.objects.get(collection=fresh, external_id="A").text == "query A"
    assert EvidenceCondition.objects.get(query__collection=fresh).groups == [["a", "x"]]
    assert dict(
        Judgment.objects.filter(query__collection=fresh).values_list("item__external_id", "grade")
    ) == {"a": 1, "x": 0}
    assert dict(Item.objects.filter(collection=recall_example).values_list(
        "external_id", "text")) == example_items  # fmt: skip
    assert Query.objects.get(collection=recall_example, external_id="A").text != "query A"


def test_a_long_collection_difference_is_shortened_in_the_message(
    recall_example, run_command, write_file
):
    record = json.loads((RECALL_EXAMPLE / "bundle.jsonl").read_text().splitlines()[0])
    record["description"] = "d" * 80
    record["name"] = "n" * 58  # its repr is 60 characters: shown whole
    bundle = write_file("b.jsonl", jl(record))

    with pytest.raises(CommandError) as refused:
        run_command("import_collection", bundle)

    # Each value's repr, cut to 57 characters and an ellipsis when longer than 60.
    message = str(refused.value)
    assert f"(this file: '{'n' * 58}')" in message
    assert (
        "description 'Invented teaching data, not a real corpus: the three-que… "
        f"(this file: '{'d' * 56}…)"
    ) in message
