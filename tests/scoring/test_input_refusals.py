"""Ids and JSON at the edges (issue 10, items 1 and 2): refused with file, line and the
limit, on the CLI and the API, with nothing written; long URL-like ids that fit are kept."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from judgments.models import Item
from judgments.services import set_membership
from judgments.services.tokens import create_api_token
from scoring.models import RankedList, Run, UnitMapping
from tests.factories import make_user
from verity_limits import ID_MAX

URL_ID = "https://example.org/" + "a/" * 150 + "page.html"  # 320 characters: a URL as id
LONG = "d" * (ID_MAX + 1)
BAD_RUNS = [
    ("docid-2049-bytes", "run.trec", f"A Q0 {LONG} 1 1.0 t\n", "line 1: docid", "2,048 bytes"),
    ("docid-5MB", "run.trec", "A Q0 a 1 2.0 t\nA Q0 " + "x" * 5_000_000 + " 2 1.0 t\n",
     "line 2: docid", "5,000,000 bytes long; ids have at most 2,048 bytes"),
    ("nul-in-qid", "run.trec", "A\x0001 Q0 a 1 1.0 t\n", "line 1: query id", "NUL character"),
    ("nul-in-jsonl-id", "run.jsonl", '{"query": "A", "ranking": ["a\\u0000b"]}\n', "line 1",
     "NUL character"),
    ("multibyte-over-limit", "run.trec", "A Q0 " + "é" * 1025 + " 1 1.0 t\n", "line 1: docid",
     "2,050 bytes"),
    ("deep-nesting", "run.jsonl",
     '{"query": "A", "ranking": ["a"]}\n{"query": "B", "ranking": '
     + "[" * 200_000 + "]" * 200_000 + "}\n", "line 2", "nested more than 64 levels"),
    ("5000-digit-integer", "run.jsonl", '{"query": "A", "ranking": ["a"], "n": ' + "7" * 5000
     + "}\n", "line 1", "5,000 digits"),
    ("lone-surrogate", "run.jsonl", '{"query": "A", "ranking": ["\\ud800"]}\n', "line 1",
     "lone UTF-16 surrogate"),
    ("duplicate-key", "run.jsonl", '{"query": "A", "ranking": ["a"], "ranking": ["b"]}\n',
     "line 1", "'ranking' appears twice"),
    # Issue 23, item 10: the ids every other importer refuses (verity_limits.id_problem),
    # on the fast (tabs), careful (spaces) and JSON Lines paths.
    ("control-char-fast", "run.trec", "A\tQ0\ta\x01b\t1\t1.0\tt\n", "line 1: docid",
     "control character (U+0001)"),
    ("rlo-fast", "run.trec", "A\tQ0\ta\u202eb\t1\t1.0\tt\n", "line 1: docid", "(U+202E)"),
    ("zwsp-careful", "run.trec", "A Q0 a 1 2.0 t\nA\u200b Q0 b 1 1.0 t\n", "line 2: query id",
     "(U+200B)"),
    ("del-careful", "run.trec", "A Q0 a\x7f 1 1.0 t\n", "line 1: docid", "(U+007F)"),
    ("zwsp-jsonl", "run.jsonl", '{"query": "A", "ranking": ["a\\u200bb"]}\n', "line 1",
     "(U+200B)"),
    ("nbsp-jsonl", "run.jsonl", '{"query": "A\\u00a0", "ranking": ["a"]}\n', "line 1",
     "whitespace"),
    ("long-stage-name", "run.jsonl", '{"query": "A", "stages": {"' + "s" * 101 + '": ["a"]}}\n',
     "line 1", "1 to 100 characters"),
]  # fmt: skip


@pytest.mark.parametrize(
    "filename,content,where,what", [row[1:] for row in BAD_RUNS], ids=[r[0] for r in BAD_RUNS]
)
def test_cli_run_import_refuses_with_file_line_and_limit(
    recall_example, run_command, row_counts, write_file, filename, content, where, what
):
    path = write_file(filename, content)
    before = row_counts()
    with pytest.raises(CommandError) as refused:
        run_command("import_run", "recall-example", path, "--name", "bad")
    message = str(refused.value)
    assert f"{path} {where}" in message and what in message, message[:500]
    assert len(message) < 5000  # a 5 MB id is quoted by its first characters only
    assert row_counts() == before


@pytest.mark.parametrize(
    "filename,content,where,what",
    [row[1:] for row in BAD_RUNS[:4]],
    ids=[r[0] for r in BAD_RUNS[:4]],
)
def test_api_run_upload_refuses_with_400_naming_the_line(
    recall_example, settings, filename, content, where, what
):
    settings.VERITY_INLINE_MAX_BYTES = 10_000_000  # the 5 MB file in the request, not a job
    user = make_user("eve")
    set_membership(collection=recall_example, user=user, role="evaluator")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {create_api_token(user=user).key}")
    response = client.post(
        "/api/collections/recall-example/runs/",
        {"file": SimpleUploadedFile(filename, content.encode("utf-8")), "name": "bad"},
        format="multipart",
    )
    assert response.status_code == 400, response.content[:300]
    messages = " ".join(e["message"] for e in response.json()["errors"])
    assert where in messages and what in messages
    assert not Run.objects.filter(name="bad").exists()


def test_a_url_as_id_longer_than_200_characters_is_stored(recall_example, run_command, write_file):
    path = write_file("urls.trec", f"A Q0 {URL_ID} 1 2.0 t\nA Q0 a 2 1.0 t\n")
    run_command("import_run", "recall-example", path, "--name", "urls")
    assert Item.objects.filter(external_id=URL_ID, placeholder=True).exists()
    assert RankedList.objects.get(stage__run__name="urls").items == [URL_ID, "a"]


@pytest.mark.parametrize(
    "content,where,what",
    [
        ("c1\t" + "x" * 3000 + "\n", "line 1: coarse id", "3,000 bytes long"),
        ("c1\tok\n" + "c\x002\tdoc\n", "line 2: fine id", "NUL character"),
        ("c1\tok\n" + "c\u200b2\tdoc\n", "line 2: fine id", "(U+200B)"),
        ("c1\tok\n" + "c2\td\u202eoc\n", "line 2: coarse id", "(U+202E)"),
    ],
    ids=["coarse-3000", "nul-fine", "zwsp-fine", "rlo-coarse"],
)
def test_mapping_import_refuses_long_and_nul_ids(
    recall_example, run_command, write_file, content, where, what
):
    path = write_file("map.tsv", content)
    with pytest.raises(CommandError) as refused:
        run_command("import_mapping", "recall-example", path)
    assert f"{path} {where}" in str(refused.value) and what in str(refused.value)
    assert not UnitMapping.objects.exists()


BAD_BUNDLE_LINES = [
    ('{"type": "item", "id": "z", "metadata": {"k": "a\\u0000b"}}', "NUL character"),
    ('{"type": "item", "id": "z", "title": "\\udc00"}', "lone UTF-16 surrogate"),
    ('{"type": "item", "id": "z", "metadata": {"n": ' + "1" * 5000 + "}}", "5,000 digits"),
    ('{"type": "item", "id": "z", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}",
     "nested more than 64 levels"),
    ('{"type": "item", "id": "z", "metadata": {"x": 1e999}}', "too large"),
    ('{"type": "item", "id": "' + "z" * 2049 + '"}', "2,049 bytes long"),
    ('{"type": "query", "id": "q\\u0000", "text": "t"}', "NUL character"),
    ('{"type": "judgment", "query": "A", "item": "a", "grade": 1, "note": "' + "n" * 2001
     + '"}', "at most 2000"),
]  # fmt: skip


@pytest.mark.parametrize("line,what", BAD_BUNDLE_LINES, ids=range(len(BAD_BUNDLE_LINES)))
def test_bundle_json_edge_cases_are_line_numbered_refusals(
    recall_example, run_command, row_counts, write_file, line, what
):
    header = (
        '{"type": "collection", "slug": "edge", "name": "Edge cases", '
        '"scale": [{"grade": 0, "name": "not relevant"}, {"grade": 1, "name": "relevant"}], '
        '"relevant_grade": 1}\n'
    )
    path = write_file("b.jsonl", header + line + "\n")
    before = row_counts()
    with pytest.raises(CommandError) as refused:
        run_command("import_collection", path)
    assert f"{path}, line 2:" in str(refused.value) and what in str(refused.value)
    assert row_counts() == before


def test_the_with_unjudged_export_imports_again(recall_example, run_command, write_file):
    """Issue 23, item 10: the run uploader took ids every other importer refuses, so the
    collection's own ``--with-unjudged`` export could not be imported again."""
    hostile = write_file("hostile.trec", "A\tQ0\tnew\u200bdoc\t1\t2.0\tt\n")
    with pytest.raises(CommandError, match=r"line 1: docid .*\(U\+200B\)"):
        run_command("import_run", "recall-example", hostile, "--name", "hostile")
    clean = write_file("clean.trec", "A\tQ0\tnew-doc\t1\t2.0\tt\nC\tQ0\tz\t1\t1.0\tt\n")
    run_command("import_run", "recall-example", clean, "--name", "clean")
    run_command("freeze_snapshot", "recall-example")
    exported, _ = run_command(
        "export_qrels", "recall-example", "--snapshot", "1", "--with-unjudged"
    )
    assert "A 0 new-doc -1" in exported
    topics = "".join(
        f"{q.external_id}\t{q.text}\n" for q in recall_example.queries.order_by("external_id")
    )
    run_command(
        "import_trec",
        "again",
        "--qrels",
        write_file("export.qrels", exported),
        "--topics",
        write_file("topics.tsv", topics),
    )
    again = Item.objects.filter(collection__slug="again")
    assert {"new-doc", "z"} <= set(again.values_list("external_id", flat=True))
