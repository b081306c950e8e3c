"""Snapshots: numbered, content-hashed, immutable versions of a collection's labels.

The expected canonical form of the tiny collection below is written out by hand from
the documentation in ``judgments/snapshots.py``, line by line, so the documented form is
pinned: a change to the form (or to what is hashed) fails here before it silently changes
every hash a user has recorded. Expected hashes are ``sha256`` of those hand-written
bytes, never a value read back from the code under test.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.management.base import CommandError
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError

from judgments.models import (
    Collection,
    Item,
    Query,
    QueryStatus,
    Snapshot,
    SnapshotJudgment,
    SnapshotQuery,
    SnapshotUnjudged,
)
from judgments.selectors import snapshot_canonical_lines
from judgments.services import (
    claim_next_task,
    freeze_snapshot,
    queue_unjudged,
    record_judgment,
    set_evidence_condition,
    set_query_status,
)
from tests.factories import GRADED_SCALE, make_collection, make_item, make_query, make_user

pytestmark = pytest.mark.django_db

# -- the tiny collection --------------------------------------------------------------------
#
# Built through the services, in an order that a test may rearrange. Two ids pin the
# code-point order: "NHS-mmr" sorts before "forum-4411" ("N" U+004E < "f" U+0066, the
# other way round case-folded), and "Ärzteblatt-42" after every ASCII id (U+00C4; first
# in most locales). "Ä" is written as UTF-8, not as \u00c4 (ensure_ascii=False).

ITEMS = ["cdc-mrna-faq", "who-vaccines-qa", "forum-4411", "Ärzteblatt-42", "NHS-mmr"]
QUERIES = ["q-vaccines", "q-measles", "q-zinc"]
# (query, item, rank): queued before the judgments, so the second task is done by then.
TASKS = [("q-zinc", "forum-4411", 1), ("q-vaccines", "who-vaccines-qa", 2)]
JUDGMENTS = [
    ("q-vaccines", "cdc-mrna-faq", 3),
    ("q-vaccines", "who-vaccines-qa", 1),
    ("q-vaccines", "Ärzteblatt-42", 2),
    ("q-measles", "forum-4411", 0),
    ("q-measles", "NHS-mmr", 0),
]
STATUSES = [("q-vaccines", QueryStatus.RELEVANT), ("q-measles", QueryStatus.NO_ANSWER)]
EVIDENCE = [("q-vaccines", [["who-vaccines-qa", "cdc-mrna-faq"]])]  # stored sorted

SCALE_JSON = (
    '[{"grade":0,"name":"not relevant"},{"grade":1,"name":"related"},'
    '{"grade":2,"name":"relevant"},{"grade":3,"name":"perfect"}]'
)


def canonical_text(slug: str = "health-graded") -> str:
    """The tiny collection's canonical form, by hand (form version 1, snapshots.py)."""
    return "".join(
        line + "\n"
        for line in [
            '["verity-snapshot",1]',
            '["collection","' + slug + '","document",2,' + SCALE_JSON + "]",
            '["query","q-measles","no_answer",null]',
            '["query","q-vaccines","relevant",[["cdc-mrna-faq","who-vaccines-qa"]]]',
            '["query","q-zinc","unreviewed",null]',
            '["judgment","q-measles","NHS-mmr",0]',
            '["judgment","q-measles","forum-4411",0]',
            '["judgment","q-vaccines","cdc-mrna-faq",3]',
            '["judgment","q-vaccines","who-vaccines-qa",1]',
            '["judgment","q-vaccines","Ärzteblatt-42",2]',
            # q-vaccines / who-vaccines-qa was queued too, but it is judged: task done.
            '["unjudged","q-zinc","forum-4411"]',
        ]
    )


# The same collection as TREC qrels: (qid, docid) in code-point order.
TREC_V1 = (
    "q-measles 0 NHS-mmr 0\n"
    "q-measles 0 forum-4411 0\n"
    "q-vaccines 0 cdc-mrna-faq 3\n"
    "q-vaccines 0 who-vaccines-qa 1\n"
    "q-vaccines 0 Ärzteblatt-42 2\n"
)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def edited(text: str, replacements: dict[str, str]) -> str:
    """``text`` with whole lines replaced; a replacement may be empty or several lines."""
    lines = text.splitlines()
    for old, new in replacements.items():
        assert lines.count(old) == 1, f"{old} is not one line of the text"
        at = lines.index(old)
        lines[at : at + 1] = new.splitlines()
    return "".join(line + "\n" for line in lines)


@dataclass
class Tiny:
    collection: Collection
    queries: dict[str, Query]
    items: dict[str, Item]


def fill(collection: Collection, arrange: Callable[[list[Any]], list[Any]] = list) -> Tiny:
    """Build the tiny collection's content; ``arrange`` reorders each kind of record."""
    items = {i: make_item(collection, external_id=i) for i in arrange(ITEMS)}
    queries = {q: make_query(collection, external_id=q) for q in arrange(QUERIES)}
    for q, i, rank in arrange(TASKS):
        queue_unjudged(
            collection=collection,
            pairs=[(queries[q].pk, items[i].pk, rank)],
            source="run bm25",
        )
    for q, i, grade in arrange(JUDGMENTS):
        record_judgment(
            query=queries[q], item=items[i], grade=grade, reviewer=None, expected_version=None
        )
    for q, status in arrange(STATUSES):
        set_query_status(query=queries[q], status=status, by=None)
    for q, groups in arrange(EVIDENCE):
        set_evidence_condition(query=queries[q], groups=groups, by=None)
    return Tiny(collection, queries, items)


@pytest.fixture
def tiny(collection_graded) -> Tiny:
    """``collection_graded`` (slug health-graded) holding the content of canonical_text()."""
    return fill(collection_graded)


@pytest.fixture
def v1(tiny) -> Snapshot:
    snapshot, created = freeze_snapshot(collection=tiny.collection, by=None, note="first")
    assert created
    return snapshot


EXPORT_ARGS = [(), ("--with-unjudged",), ("--format", "jsonl")]


def export(run_command, *args: Any) -> str:
    out, _ = run_command("export_qrels", "health-graded", *args)
    return out


# -- freezing and the content hash -----------------------------------------------------------


def test_freeze_makes_v1_whose_hash_is_sha256_of_the_documented_canonical_form(tiny, reviewer_ana):
    snapshot, created = freeze_snapshot(collection=tiny.collection, by=reviewer_ana, note="n")

    assert created
    # 3 queries, 5 judgments, 1 open task (the other task is done: its pair is judged)
    counts = (snapshot.number, snapshot.n_queries, snapshot.n_judgments, snapshot.n_unjudged)
    assert counts == (1, 3, 5, 1)
    assert snapshot.content_hash == sha256(canonical_text())
    assert b"".join(snapshot_canonical_lines(snapshot)) == canonical_text().encode("utf-8")
    assert (snapshot.scale, snapshot.relevant_grade, snapshot.unit) == (GRADED_SCALE, 2, "document")
    assert (snapshot.note, snapshot.created_by) == ("n", reviewer_ana)
    assert snapshot.label == f"v1 sha256:{sha256(canonical_text())[:12]}"


def test_freeze_copies_every_label_into_the_snapshots_rows(v1):
    judgments = SnapshotJudgment.objects.of(v1)
    assert sorted(judgments.values_list("query__external_id", "item__external_id", "grade")) == [
        ("q-measles", "NHS-mmr", 0),
        ("q-measles", "forum-4411", 0),
        ("q-vaccines", "cdc-mrna-faq", 3),
        ("q-vaccines", "who-vaccines-qa", 1),
        ("q-vaccines", "Ärzteblatt-42", 2),
    ]
    queries = SnapshotQuery.objects.of(v1)
    assert sorted(queries.values_list("query__external_id", "status", "evidence")) == [
        ("q-measles", "no_answer", None),
        ("q-vaccines", "relevant", [["cdc-mrna-faq", "who-vaccines-qa"]]),
        ("q-zinc", "unreviewed", None),
    ]
    unjudged = SnapshotUnjudged.objects.of(v1)
    assert list(unjudged.values_list("query__external_id", "item__external_id")) == [
        ("q-zinc", "forum-4411")
    ]


def test_freezing_unchanged_content_returns_the_latest_version(v1):
    again, created = freeze_snapshot(collection=v1.collection, by=None, note="again")

    assert not created
    assert (again.pk, again.number, again.note) == (v1.pk, 1, "first")
    assert Snapshot.objects.count() == 1


def test_content_equal_to_an_older_version_gets_that_versions_hash(tiny, v1):
    vaccines, who = tiny.queries["q-vaccines"], tiny.items["who-vaccines-qa"]
    record_judgment(query=vaccines, item=who, grade=0, reviewer=None, expected_version=1)
    v2, _ = freeze_snapshot(collection=tiny.collection, by=None)
    record_judgment(query=vaccines, item=who, grade=1, reviewer=None, expected_version=2)

    v3, created = freeze_snapshot(collection=tiny.collection, by=None)

    # Only the latest version is compared: v3 is new, with v1's content and so v1's hash.
    assert created
    assert (v3.number, v3.content_hash) == (3, sha256(canonical_text()))
    assert v2.content_hash != v1.content_hash


def _regrade(t: Tiny) -> None:
    record_judgment(
        query=t.queries["q-vaccines"],
        item=t.items["who-vaccines-qa"],
        grade=0,
        reviewer=None,
        expected_version=1,
    )


def _new_judgment_completes_the_task(t: Tiny) -> None:
    record_judgment(
        query=t.queries["q-zinc"],
        item=t.items["forum-4411"],
        grade=1,
        reviewer=None,
        expected_version=None,
    )


def _new_open_task(t: Tiny) -> None:
    pair = (t.queries["q-measles"].pk, t.items["cdc-mrna-faq"].pk, 4)
    queue_unjudged(collection=t.collection, pairs=[pair], source="run dense")


def _status(t: Tiny) -> None:
    set_query_status(query=t.queries["q-zinc"], status=QueryStatus.NO_ANSWER, by=None)


def _evidence(t: Tiny) -> None:
    groups = [["Ärzteblatt-42"], ["cdc-mrna-faq"]]
    set_evidence_condition(query=t.queries["q-vaccines"], groups=groups, by=None)


def _evidence_removed(t: Tiny) -> None:
    set_evidence_condition(query=t.queries["q-vaccines"], groups=None, by=None)


def _new_query(t: Tiny) -> None:
    make_query(t.collection, external_id="q-flu")


@pytest.mark.parametrize(
    ("change", "replacements", "counts"),
    [
        pytest.param(
            _regrade,
            {
                '["judgment","q-vaccines","who-vaccines-qa",1]': (
                    '["judgment","q-vaccines","who-vaccines-qa",0]'
                )
            },
            (3, 5, 1),
            id="grade",
        ),
        pytest.param(
            _new_judgment_completes_the_task,
            {
                '["judgment","q-vaccines","Ärzteblatt-42",2]': (
                    '["judgment","q-vaccines","Ärzteblatt-42",2]\n'
                    '["judgment","q-zinc","forum-4411",1]'
                ),
                '["unjudged","q-zinc","forum-4411"]': "",
            },
            (3, 6, 0),
            id="judgment-added-task-done",
        ),
        pytest.param(
            _new_open_task,
            {
                '["unjudged","q-zinc","forum-4411"]': (
                    '["unjudged","q-measles","cdc-mrna-faq"]\n["unjudged","q-zinc","forum-4411"]'
                )
            },
            (3, 5, 2),
            id="open-task",
        ),
        pytest.param(
            _status,
            {'["query","q-zinc","unreviewed",null]': '["query","q-zinc","no_answer",null]'},
            (3, 5, 1),
            id="status",
        ),
        pytest.param(
            _evidence,
            {  # groups sorted by code point: "c" (U+0063) before "Ä" (U+00C4)
                '["query","q-vaccines","relevant",[["cdc-mrna-faq","who-vaccines-qa"]]]': (
                    '["query","q-vaccines","relevant",[["cdc-mrna-faq"],["Ärzteblatt-42"]]]'
                )
            },
            (3, 5, 1),
            id="evidence",
        ),
        pytest.param(
            _evidence_removed,
            {
                '["query","q-vaccines","relevant",[["cdc-mrna-faq","who-vaccines-qa"]]]': (
                    '["query","q-vaccines","relevant",null]'
                )
            },
            (3, 5, 1),
            id="evidence-removed",
        ),
        pytest.param(
            _new_query,
            {
                '["query","q-measles","no_answer",null]': (
                    '["query","q-flu","unreviewed",null]\n["query","q-measles","no_answer",null]'
                )
            },
            (4, 5, 1),
            id="query-added",
        ),
    ],
)
def test_changed_content_makes_v2_with_the_hash_of_the_changed_form(
    tiny, v1, change, replacements, counts
):
    change(tiny)

    v2, created = freeze_snapshot(collection=tiny.collection, by=None)

    assert created
    assert v2.number == 2
    assert (v2.n_queries, v2.n_judgments, v2.n_unjudged) == counts
    expected = edited(canonical_text(), replacements)
    assert v2.content_hash == sha256(expected) != v1.content_hash
    assert b"".join(snapshot_canonical_lines(v2)) == expected.encode("utf-8")


def _note_only(t: Tiny) -> None:
    record_judgment(
        query=t.queries["q-vaccines"],
        item=t.items["cdc-mrna-faq"],
        grade=3,
        reviewer=make_user("ana"),
        expected_version=1,
        note="same grade, new note and reviewer",
    )


def _item_text(t: Tiny) -> None:
    Item.objects.filter(pk=t.items["forum-4411"].pk).update(title="new title", text="new text")


def _query_text_and_tags(t: Tiny) -> None:
    Query.objects.filter(pk=t.queries["q-zinc"].pk).update(text="zinc?", tags=["new"])


def _status_there_and_back(t: Tiny) -> None:
    set_query_status(query=t.queries["q-zinc"], status=QueryStatus.NO_ANSWER, by=None)
    set_query_status(query=t.queries["q-zinc"], status=QueryStatus.UNREVIEWED, by=None)


def _task_claimed(t: Tiny) -> None:
    assert claim_next_task(reviewer=make_user("ana"), collection=t.collection) is not None


def _task_surfaced_again(t: Tiny) -> None:
    pair = (t.queries["q-zinc"].pk, t.items["forum-4411"].pk, 1)
    assert queue_unjudged(collection=t.collection, pairs=[pair], source="run dense") == (1, 0)


def _collection_text(t: Tiny) -> None:
    Collection.objects.filter(pk=t.collection.pk).update(
        name="renamed", description="d", guidelines="g", pool_depth=50
    )


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_note_only, id="note-and-reviewer"),
        pytest.param(_item_text, id="item-text"),
        pytest.param(_query_text_and_tags, id="query-text-and-tags"),
        pytest.param(_status_there_and_back, id="status-there-and-back"),
        pytest.param(_task_claimed, id="task-claimed"),
        pytest.param(_task_surfaced_again, id="task-surfaced-by-another-run"),
        pytest.param(_collection_text, id="collection-name-guidelines-pool-depth"),
    ],
)
def test_changes_outside_the_canonical_form_make_no_new_version(tiny, v1, change):
    """Only labels are content: texts, notes, reviewers and task bookkeeping are not."""
    change(tiny)

    latest, created = freeze_snapshot(collection=tiny.collection, by=None)

    assert not created
    assert latest.pk == v1.pk
    assert Snapshot.objects.count() == 1


def frozen_hash(slug: str, arrange: Callable[[list[Any]], list[Any]]) -> str:
    """Build and freeze the tiny collection under ``slug``, then roll it all back (slugs
    are unique, and frozen rows cannot be deleted)."""
    with transaction.atomic():
        collection = make_collection(slug=slug, name="Health answers", scale=GRADED_SCALE)
        fill(collection, arrange)
        snapshot, _ = freeze_snapshot(collection=collection, by=None)
        transaction.set_rollback(True)
    return snapshot.content_hash


def test_hash_depends_on_content_and_slug_not_on_the_order_rows_were_made(db):
    orders = {
        "as-listed": list,
        "reversed": lambda rows: rows[::-1],
        "shuffled": lambda rows: random.Random(7).sample(rows, len(rows)),
    }
    hashes = {name: frozen_hash("health-graded", arrange) for name, arrange in orders.items()}

    assert hashes == dict.fromkeys(orders, sha256(canonical_text("health-graded")))
    other = frozen_hash("health-graded-2", list)
    assert other == sha256(canonical_text("health-graded-2"))
    assert other != hashes["as-listed"]


def test_two_collections_with_the_same_labels_differ_only_in_the_slug_line(db):
    first = make_collection(slug="alpha", scale=GRADED_SCALE)
    fill(first)
    second = make_collection(slug="beta", scale=GRADED_SCALE)
    fill(second, lambda rows: rows[::-1])

    a, _ = freeze_snapshot(collection=first, by=None)
    b, _ = freeze_snapshot(collection=second, by=None)

    assert (a.number, b.number) == (1, 1)  # numbered per collection
    assert a.content_hash == sha256(canonical_text("alpha"))
    assert b.content_hash == sha256(canonical_text("beta"))
    lines_a, lines_b = list(snapshot_canonical_lines(a)), list(snapshot_canonical_lines(b))
    assert [n for n, (x, y) in enumerate(zip(lines_a, lines_b, strict=True)) if x != y] == [1]


# -- frozen rows never change ----------------------------------------------------------------


def _one_of_each(snapshot: Snapshot) -> dict[str, Any]:
    return {
        "snapshot": snapshot,
        "query": SnapshotQuery.objects.of(snapshot).first(),
        "judgment": SnapshotJudgment.objects.of(snapshot).first(),
        "unjudged": SnapshotUnjudged.objects.of(snapshot).first(),
    }


# (row kind, field, new value): a plausible edit of each kind of frozen row
EDITS = {
    "snapshot": ("note", "rewritten"),
    "query": ("status", QueryStatus.UNREVIEWED),
    "judgment": ("grade", 0),
    "unjudged": ("item_id", None),  # None: point it at another item (set in the test)
}


@pytest.mark.parametrize("kind", list(EDITS))
@pytest.mark.parametrize(
    "attempt",
    [
        pytest.param(lambda row, f, v: row.save(), id="save"),
        pytest.param(lambda row, f, v: row.save(update_fields=[f]), id="save-update-fields"),
        pytest.param(lambda row, f, v: row.delete(), id="delete"),
        pytest.param(
            lambda row, f, v: type(row).objects.filter(pk=row.pk).update(**{f: v}),
            id="queryset-update",
        ),
        pytest.param(
            lambda row, f, v: type(row).objects.filter(pk=row.pk).delete(), id="queryset-delete"
        ),
        pytest.param(lambda row, f, v: type(row).objects.all().delete(), id="delete-all"),
        pytest.param(lambda row, f, v: type(row).objects.bulk_update([row], [f]), id="bulk-update"),
    ],
)
def test_orm_refuses_to_change_frozen_rows(tiny, v1, kind, attempt):
    row = _one_of_each(v1)[kind]
    model = type(row)
    field, value = EDITS[kind]
    if value is None:
        value = tiny.items["cdc-mrna-faq"].pk
    before = list(model.objects.order_by("pk").values())
    setattr(row, field, value)

    # bulk_update runs in atomic(savepoint=False), so its refusal would break the
    # test's transaction without a savepoint of our own.
    refusal = "frozen: a snapshot, run or evaluation never changes"
    with pytest.raises(TypeError, match=refusal), transaction.atomic():
        attempt(row, field, value)

    assert list(model.objects.order_by("pk").values()) == before


def test_queries_and_items_held_by_a_snapshot_cannot_be_deleted(tiny, v1):
    for row in [tiny.queries["q-zinc"], tiny.items["forum-4411"], tiny.collection]:
        with pytest.raises(ProtectedError), transaction.atomic():
            row.delete()
    assert b"".join(snapshot_canonical_lines(v1)) == canonical_text().encode("utf-8")


def test_deleting_the_user_who_froze_a_snapshot_is_refused_and_the_row_unchanged(
    tiny, reviewer_ana
):
    # Authors of frozen rows are PROTECT: SET_NULL would make Django rewrite the frozen
    # row with a plain UPDATE. Such users are deactivated, never deleted.
    snapshot, _ = freeze_snapshot(collection=tiny.collection, by=reviewer_ana)
    before = Snapshot.objects.values().get(pk=snapshot.pk)

    with pytest.raises(ProtectedError), transaction.atomic():
        reviewer_ana.delete()

    assert Snapshot.objects.values().get(pk=snapshot.pk) == before


# table -> (its model, an UPDATE of every row of snapshot %s); the DELETE is of the same rows
RAW_EDITS = {
    "judgments_snapshot": (Snapshot, "UPDATE {table} SET note = 'rewritten' WHERE id = %s"),
    "judgments_snapshotquery": (
        SnapshotQuery,
        "UPDATE {table} SET status = 'unreviewed' WHERE frozen_in_id = %s",
    ),
    "judgments_snapshotjudgment": (
        SnapshotJudgment,
        "UPDATE {table} SET grade = 0 WHERE block_id IN (SELECT id FROM "
        "judgments_snapshotquery WHERE frozen_in_id = %s)",
    ),
    "judgments_snapshotunjudged": (  # a no-op update is refused as well
        SnapshotUnjudged,
        "UPDATE {table} SET item_id = item_id WHERE block_id IN (SELECT id FROM "
        "judgments_snapshotquery WHERE frozen_in_id = %s)",
    ),
}


@pytest.mark.postgres
@pytest.mark.parametrize("table", list(RAW_EDITS))
@pytest.mark.parametrize("statement", ["update", "delete"])
def test_postgresql_refuses_raw_sql_changes_to_frozen_rows(v1, table, statement):
    model, update = RAW_EDITS[table]
    sql = (
        update
        if statement == "update"
        else "DELETE FROM {table}" + update[update.index(" WHERE") :]
    )
    before = list(model.objects.order_by("pk").values())
    assert before

    with (
        pytest.raises(IntegrityError, match=f"rows of {table} are immutable"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql.format(table=table), [v1.pk])

    assert list(model.objects.order_by("pk").values()) == before
    assert b"".join(snapshot_canonical_lines(v1)) == canonical_text().encode("utf-8")


BLOCK_EDITS = [  # (an UPDATE, whether the blocks ended at v2 first)
    pytest.param("SET end_number = 2, status = 'unreviewed'", False, id="end-and-another-column"),
    pytest.param("SET first_number = 2", False, id="another-column"),
    pytest.param("SET end_number = NULL", True, id="end-to-null"),
    pytest.param("SET end_number = 3", True, id="end-again"),
]


@pytest.mark.postgres
@pytest.mark.parametrize(("edit", "ended"), BLOCK_EDITS)
def test_postgresql_lets_a_block_end_once_and_nothing_else(v1, edit, ended):
    """A freeze sets ``end_number`` on the blocks a version replaces, once, from null:
    the one UPDATE the trigger lets through (every other change is refused)."""
    table = SnapshotQuery._meta.db_table
    before = list(SnapshotQuery.objects.order_by("pk").values())
    with connection.cursor() as cursor:
        if ended:
            cursor.execute(f"UPDATE {table} SET end_number = 2 WHERE frozen_in_id = %s", [v1.pk])
        with (
            pytest.raises(IntegrityError, match=f"rows of {table} are immutable"),
            transaction.atomic(),
        ):
            cursor.execute(f"UPDATE {table} {edit} WHERE frozen_in_id = %s", [v1.pk])
    after = list(SnapshotQuery.objects.order_by("pk").values())
    assert after == [{**row, "end_number": 2 if ended else None} for row in before]


def _frozen_columns(model):
    """Every column but a block's ``end_number`` (set once, when a version replaces it)."""
    return [f.attname for f in model._meta.concrete_fields if f.name != "end_number"]


def test_later_edits_never_change_an_old_snapshot(tiny, v1, run_command):
    rows = {
        model: sorted(model.objects.of(v1).values_list(*_frozen_columns(model)))
        for model in (SnapshotQuery, SnapshotJudgment, SnapshotUnjudged)
    }
    exports = {args: export(run_command, "--snapshot", "1", *args) for args in EXPORT_ARGS}
    vaccines = tiny.queries["q-vaccines"]

    # Every kind of label change, then a new version.
    _regrade(tiny)
    _new_judgment_completes_the_task(tiny)
    _new_open_task(tiny)
    _evidence(tiny)
    set_query_status(query=vaccines, status=QueryStatus.UNREVIEWED, by=None)
    record_judgment(
        query=vaccines,
        item=tiny.items["cdc-mrna-faq"],
        grade=0,
        reviewer=None,
        expected_version=1,
    )
    _, created = freeze_snapshot(collection=tiny.collection, by=None)
    assert created

    v1.refresh_from_db()
    assert (v1.number, v1.content_hash, v1.n_queries, v1.n_judgments, v1.n_unjudged) == (
        1,
        sha256(canonical_text()),
        3,
        5,
        1,
    )
    for model, before in rows.items():
        assert sorted(model.objects.of(v1).values_list(*_frozen_columns(model))) == before
    # Every query changed since: v1's blocks all ended at v2.
    assert sorted(SnapshotQuery.objects.of(v1).values_list("query__external_id", "end_number")) == [
        ("q-measles", 2),
        ("q-vaccines", 2),
        ("q-zinc", 2),
    ]
    for args, before in exports.items():
        assert export(run_command, "--snapshot", "1", *args) == before
    assert exports[()] == TREC_V1
    assert export(run_command, "--snapshot", "2") != TREC_V1


# -- export_qrels --snapshot ------------------------------------------------------------------


def test_snapshot_trec_export_is_the_hand_written_qrels_every_time(v1, run_command):
    first = export(run_command, "--snapshot", "1")
    second = export(run_command, "--snapshot", "1")

    assert first == second == TREC_V1


def test_snapshot_trec_export_with_unjudged_adds_minus_one_for_open_tasks(v1, run_command):
    # q-zinc / forum-4411 is open; q-vaccines / who-vaccines-qa was queued but is judged.
    assert export(run_command, "--snapshot", "1", "--with-unjudged") == (
        TREC_V1 + "q-zinc 0 forum-4411 -1\n"
    )


def test_snapshot_trec_export_keeps_the_ids_it_was_frozen_with_like_the_jsonl_export(
    tiny, v1, run_command
):
    # Renamed behind the application's back (the admin and the API never rename): v1's
    # exports both say what v1 froze, as its content hash does.
    Item.objects.filter(pk=tiny.items["NHS-mmr"].pk).update(external_id="nhs-renamed")
    Query.objects.filter(pk=tiny.queries["q-measles"].pk).update(external_id="q-renamed")

    assert export(run_command, "--snapshot", "1") == TREC_V1
    assert export(run_command, "--snapshot", "1", "--with-unjudged") == (
        TREC_V1 + "q-zinc 0 forum-4411 -1\n"
    )
    assert export(run_command, "--snapshot", "1", "--format", "jsonl") == canonical_text()


def test_snapshot_trec_export_of_ids_that_json_escapes_or_that_look_like_its_syntax(
    collection_graded, run_command
):
    # The qrels are read from the stored canonical lines: ids with '"', '\\', ']', a
    # space, or U+2028 (which JSON leaves unescaped and str.splitlines would split at)
    # come out as stored, sorted by item within the query, unjudged markers merged in.
    c = collection_graded
    plain, odd = make_query(c, external_id="p"), make_query(c, external_id='q "x"')
    labels = [
        (plain, "d1", 2),
        (odd, "a]", 0),
        (odd, 'b"q', 1),
        (odd, "c\\d", 2),
        (odd, "e\u2028f", 3),
    ]
    items = {
        i: make_item(c, external_id=i) for i in ["d1", "d2", "a]", 'b"q', "c\\d", "e\u2028f", "z"]
    }
    queue_unjudged(
        collection=c,
        pairs=[(plain.pk, items["d2"].pk, 1), (odd.pk, items["z"].pk, 1)],
        source="run bm25",
    )
    for query, item, grade in labels:
        record_judgment(
            query=query, item=items[item], grade=grade, reviewer=None, expected_version=None
        )
    freeze_snapshot(collection=c, by=None)
    trec = 'p 0 d1 2\nq "x" 0 a] 0\nq "x" 0 b"q 1\nq "x" 0 c\\d 2\nq "x" 0 e\u2028f 3\n'

    assert export(run_command, "--snapshot", "1") == trec
    assert export(run_command, "--snapshot", "1", "--with-unjudged") == (
        'p 0 d1 2\np 0 d2 -1\nq "x" 0 a] 0\nq "x" 0 b"q 1\nq "x" 0 c\\d 2\n'
        'q "x" 0 e\u2028f 3\nq "x" 0 z -1\n'
    )


def test_snapshot_jsonl_export_is_the_canonical_form_so_its_sha256_is_the_hash(v1, run_command):
    out = export(run_command, "--snapshot", "1", "--format", "jsonl")

    assert out == canonical_text()
    assert hashlib.sha256(out.encode("utf-8")).hexdigest() == v1.content_hash


@pytest.mark.parametrize("args", EXPORT_ARGS, ids=["trec", "trec-with-unjudged", "jsonl"])
def test_snapshot_export_to_a_file_holds_the_same_bytes_as_stdout(v1, run_command, tmp_path, args):
    path = tmp_path / "export.out"

    out, _ = run_command(
        "export_qrels", "health-graded", "--snapshot", "1", *args, "--output", path
    )

    assert out == ""
    assert path.read_bytes() == export(run_command, "--snapshot", "1", *args).encode("utf-8")


def test_exporting_an_unknown_snapshot_names_the_versions_that_exist(tiny, v1, run_command):
    _regrade(tiny)
    freeze_snapshot(collection=tiny.collection, by=None)

    with pytest.raises(CommandError, match=r"^collection 'health-graded' has no snapshot v7; "
                                           r"it has v1, v2$"):  # fmt: skip
        export(run_command, "--snapshot", "7")


def test_exporting_a_snapshot_before_any_freeze_says_how_to_make_one(tiny, run_command):
    with pytest.raises(
        CommandError, match=r"has no snapshot v1; freeze one with manage\.py freeze_snapshot$"
    ):
        export(run_command, "--snapshot", "1")


# -- freeze_snapshot and diff_snapshots commands -----------------------------------------------


def test_freeze_snapshot_command_reports_the_version_its_counts_and_hash(tiny, run_command):
    out, _ = run_command("freeze_snapshot", "health-graded", "--note", "first")
    again, _ = run_command("freeze_snapshot", "health-graded")

    digest = sha256(canonical_text())
    assert re.fullmatch(
        r"Froze 'health-graded' v1 in \d+\.\d s: 5 judgments, 3 queries, 1 unjudged marker\.\n"
        rf"sha256:{digest}\n",
        out,
    )
    assert again == (
        f"Nothing changed since v1 of 'health-graded' (sha256:{digest}); no new snapshot made.\n"
    )
    assert Snapshot.objects.get().note == "first"


def test_freeze_snapshot_command_refuses_an_unknown_author(tiny, run_command):
    with pytest.raises(CommandError, match="no user 'nobody'"):
        run_command("freeze_snapshot", "health-graded", "--by", "nobody")
    assert not Snapshot.objects.exists()


def test_diff_lists_exactly_the_regrade_the_new_judgment_and_the_status_change(
    tiny, v1, run_command
):
    _regrade(tiny)  # q-vaccines / who-vaccines-qa 1 → 0
    zinc = tiny.queries["q-zinc"]
    record_judgment(
        query=zinc, item=tiny.items["cdc-mrna-faq"], grade=2, reviewer=None, expected_version=None
    )
    set_query_status(query=zinc, status=QueryStatus.RELEVANT, by=None)
    v2, _ = freeze_snapshot(collection=tiny.collection, by=None)
    v2_text = edited(
        canonical_text(),
        {
            '["query","q-zinc","unreviewed",null]': '["query","q-zinc","relevant",null]',
            '["judgment","q-vaccines","who-vaccines-qa",1]': (
                '["judgment","q-vaccines","who-vaccines-qa",0]'
            ),
            '["judgment","q-vaccines","Ärzteblatt-42",2]': (
                '["judgment","q-vaccines","Ärzteblatt-42",2]\n'
                '["judgment","q-zinc","cdc-mrna-faq",2]'
            ),
        },
    )
    h1, h2 = sha256(canonical_text())[:12], sha256(v2_text)[:12]
    assert v2.content_hash[:12] == h2

    forward, _ = run_command("diff_snapshots", "health-graded", "1", "2")
    backward, _ = run_command("diff_snapshots", "health-graded", "2", "1")

    assert forward.splitlines() == [
        f"'health-graded' v1 (sha256:{h1}) → v2 (sha256:{h2})",
        "judgments added: 1",
        "  + q-zinc cdc-mrna-faq 2",
        "judgments removed: 0",
        "judgments regraded: 1",
        "  ~ q-vaccines who-vaccines-qa 1 → 0",
        "query status changes: 1",
        "  ~ q-zinc unreviewed → relevant",
        "unjudged markers: +0 -0",
    ]
    assert backward.splitlines() == [
        f"'health-graded' v2 (sha256:{h2}) → v1 (sha256:{h1})",
        "judgments added: 0",
        "judgments removed: 1",
        "  - q-zinc cdc-mrna-faq 2",
        "judgments regraded: 1",
        "  ~ q-vaccines who-vaccines-qa 0 → 1",
        "query status changes: 1",
        "  ~ q-zinc relevant → unreviewed",
        "unjudged markers: +0 -0",
    ]


def test_diff_lists_evidence_changes_and_counts_unjudged_markers(tiny, v1, run_command):
    _evidence(tiny)  # [[cdc-mrna-faq, who-vaccines-qa]] → [[cdc-mrna-faq], [Ärzteblatt-42]]
    _new_judgment_completes_the_task(tiny)  # q-zinc / forum-4411 = 1: one marker gone
    _new_open_task(tiny)  # q-measles / cdc-mrna-faq: one marker new
    freeze_snapshot(collection=tiny.collection, by=None)

    out, _ = run_command("diff_snapshots", "health-graded", "1", "2")

    assert out.splitlines()[1:] == [
        "judgments added: 1",
        "  + q-zinc forum-4411 1",
        "judgments removed: 0",
        "judgments regraded: 0",
        "query status changes: 0",
        "evidence condition changes: 1",
        "  ~ q-vaccines [['cdc-mrna-faq', 'who-vaccines-qa']] → "
        "[['cdc-mrna-faq'], ['Ärzteblatt-42']]",
        "unjudged markers: +1 -1",
    ]


def test_diff_of_a_snapshot_with_itself_is_empty(v1, run_command):
    out, _ = run_command("diff_snapshots", "health-graded", "1", "1")

    h1 = sha256(canonical_text())[:12]
    assert out == f"'health-graded' v1 (sha256:{h1}) → v1 (sha256:{h1})\nNo differences.\n"


def test_diff_with_an_unknown_version_names_the_versions_that_exist(v1, run_command):
    with pytest.raises(CommandError, match=r"has no snapshot v3; it has v1$"):
        run_command("diff_snapshots", "health-graded", "1", "3")
