"""Run ids checked against the collection: a query id the collection lacks refuses the
file (line numbers, 25 ids at most, counts) unless the lines are skipped on purpose; an
unknown item id within the pool depth becomes a placeholder, unless the collection holds
its whole corpus. Counts below are worked out by hand from the files written here.
"""

from __future__ import annotations

import pytest

from judgments.models import Item
from judgments.services import update_collection_settings
from scoring.models import RankedList
from scoring.services import RunImportError, import_run
from scoring.upload_options import RunImportOptions
from tests.factories import BINARY_SCALE, make_collection, make_item, make_query

# q1 and q2 are collection queries; Z (lines 3, 4) and Y (line 6) are not.
MIXED = """\
q1 Q0 d1 1 2.0 t
q1 Q0 d2 2 1.0 t
Z Q0 zzz 1 1.0 t
Z Q0 d1 2 0.5 t
q2 Q0 d2 1 1.0 t
Y Q0 d1 1 1.0 t
"""


@pytest.fixture
def collection(db):
    """Pool depth 1; queries q1, q2; items d1, d2 (none judged)."""
    c = make_collection(slug="ids", scale=BINARY_SCALE, relevant_grade=1, pool_depth=1)
    for qid in ("q1", "q2"):
        make_query(c, external_id=qid)
    for item in ("d1", "d2"):
        make_item(c, external_id=item)
    return c


def test_unknown_queries_refuse_the_file_with_their_lines(collection, write_file, row_counts):
    before = row_counts()
    with pytest.raises(RunImportError) as refused:
        import_run(collection=collection, path=write_file("mixed.trec", MIXED), name="m")
    assert str(refused.value).startswith(
        "mixed.trec: 3 line(s) name 2 query id(s) that collection 'ids' lacks; nothing was "
        "imported."
    )
    assert "--ignore-unknown-queries" in str(refused.value)
    assert refused.value.errors == [
        "mixed.trec line 6: query 'Y' is not in collection 'ids'",
        "mixed.trec lines 3, 4: query 'Z' is not in collection 'ids'",
    ]
    assert row_counts() == before


def test_at_most_25_unknown_queries_are_listed_with_their_counts(collection, write_file):
    # 30 unknown queries, u00..u29, with 7 lines each: lines 1-7 are u00's, and so on.
    text = "".join(f"u{q:02d} Q0 d{r} {r} {10 - r} t\n" for q in range(30) for r in range(1, 8))
    with pytest.raises(RunImportError) as refused:
        import_run(collection=collection, path=write_file("many.trec", text), name="m")
    assert "210 line(s) name 30 query id(s)" in str(refused.value)
    errors = refused.value.errors
    assert len(errors) == 26
    assert (
        errors[0]
        == "many.trec lines 1, 2, 3, 4, 5, … (7 lines): query 'u00' is not in collection 'ids'"
    )
    assert errors[-1] == "… and 5 more unknown query ids"


def test_skipping_unknown_queries_stores_the_rest_and_counts_them(collection, write_file):
    report = import_run(
        collection=collection,
        path=write_file("mixed.trec", MIXED),
        name="m",
        ignore_unknown_queries=True,
    )
    assert (report.unknown.query_ids, report.unknown.query_lines) == (["Y", "Z"], 3)
    stage = report.run.stages.get()
    assert (stage.n_queries, stage.n_rows, stage.depth) == (2, 3, 2)
    assert sorted(RankedList.objects.filter(stage=stage).values_list("query_id", flat=True)) == [
        "q1",
        "q2",
    ]
    assert not Item.objects.filter(external_id="zzz").exists()  # Z's item: no placeholder
    assert report.unknown.item_ids == 0
    assert report.unknown.describe(collection) == (
        "2 unknown query ids: their 3 lines were skipped; no unknown item id, at any rank"
    )


UNKNOWN_ITEMS = """\
q1 Q0 n1 1 2.0 t
q1 Q0 n2 2 1.0 t
q2 Q0 d2 1 1.0 t
"""


def test_unknown_items_in_the_pool_become_placeholders(collection, write_file):
    report = import_run(collection=collection, path=write_file("u.trec", UNKNOWN_ITEMS), name="u")
    # Pool depth 1: n1 (rank 1) is pooled and unknown; n2 (rank 2) is below the depth.
    assert report.unknown.item_ids == report.placeholders_created == 1
    assert Item.objects.get(collection=collection, external_id="n1").placeholder
    assert not Item.objects.filter(external_id="n2").exists()
    # Issue 24 item 4: n2, ranked only below the depth, is counted and said too (on main
    # the answer named the pool depth only).
    assert report.unknown.item_ids_beyond == 1
    assert report.unknown.describe(collection) == (
        "no unknown query id; 2 unknown item ids: 1 within the pool depth 1 (created as "
        "placeholder items to judge); 1 ranked only below it (kept in the run as ranked, "
        "unjudged: scored as the unjudged policy says, and queued if a deeper pool reaches "
        "them)"
    )


def test_unknown_items_only_below_the_depth_are_counted(collection, write_file):
    """Many ids the collection lacks, every one below the pool depth: on main the answer
    said "no unknown item id within the pool depth" and nothing more."""
    lines = "".join(
        f"q{q} Q0 {'d1' if r == 1 else f'x{q}-{r}'} {r} {100 - r} t\n"
        for q in (1, 2)
        for r in range(1, 51)
    )
    report = import_run(collection=collection, path=write_file("deep.trec", lines), name="deep")

    assert (report.unknown.item_ids, report.unknown.item_ids_beyond) == (0, 98)
    assert "98 unknown item ids: none within the pool depth 1; 98 ranked only below it" in (
        report.unknown.describe(collection)
    )


def test_a_whole_corpus_collection_refuses_unknown_pooled_items(collection, write_file, row_counts):
    collection = update_collection_settings(collection=collection, holds_whole_corpus=True)
    before = row_counts()
    with pytest.raises(RunImportError) as refused:
        import_run(collection=collection, path=write_file("u.trec", UNKNOWN_ITEMS), name="u")
    assert str(refused.value).startswith(
        "u.trec line 1: 1 item id(s) within the pool depth 1 are not in collection 'ids', "
        "which holds its whole corpus; nothing was imported."
    )
    assert refused.value.errors == ["u.trec: item 'n1' is not in the collection"]
    assert row_counts() == before
    # Known items only: accepted.
    ok = "q1 Q0 d1 1 2.0 t\nq1 Q0 n2 2 1.0 t\n"
    assert import_run(collection=collection, path=write_file("ok.trec", ok), name="ok").run


def test_the_upload_form_option_defaults_to_refusing():
    form = RunImportOptions({"ignore_unknown_queries": "on"})
    assert form.is_valid() and form.cleaned_data["ignore_unknown_queries"] is True
    unticked = RunImportOptions({})
    unticked.is_valid()
    assert unticked.cleaned_data["ignore_unknown_queries"] is False
