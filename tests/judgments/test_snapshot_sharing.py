"""Snapshots share the query blocks that did not change, and a freeze that renders only the
changed queries gives exactly the hash a whole rendering gives.

The oracle is ``whole_form``: the canonical form rendered whole from the live tables
through ``canonical_lines``, the way every freeze worked before blocks (kept here, in the
tests, so that the code under test is not its own judge). The changes are made straight in the
tables (ORM saves, deletes and raw SQL), not through the services, because the change
triggers must see every writer.
"""

from __future__ import annotations

import hashlib
import random
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from jobs.progress import Progress
from judgments.models import (
    Assessment,
    Collection,
    EvidenceCondition,
    Item,
    Judgment,
    Query,
    QueryStatus,
    ReviewTask,
    Snapshot,
    SnapshotJudgment,
    SnapshotQuery,
    SnapshotUnjudged,
    TaskStatus,
    UnfrozenChange,
)
from judgments.selectors import snapshot_canonical_lines
from judgments.selectors.assessments import live_assessments, unresolved_pairs
from judgments.selectors.snapshots import rendered_canonical_lines
from judgments.services import freeze_snapshot, snapshot_blocks, snapshot_forms
from judgments.services.snapshot_blocks import TRIGGERS, triggers_in_place
from judgments.snapshots import Overlap, canonical_lines, content_hash, render_block
from tests.factories import make_collection, make_item, make_query, make_user

KINDS = {
    b'["query"': "n_queries",
    b'["judgment"': "n_judgments",
    b'["unjudged"': "n_unjudged",
    b'["assessment"': "n_assessments",
    b'["unresolved"': "n_unresolved",
}


def whole_form(collection: Collection) -> list[bytes]:
    """The canonical form of the collection's live labels (no model label), rendered whole."""
    judgments = Judgment.objects.filter(query__collection=collection).values_list(
        "query__external_id", "item__external_id", "grade"
    )
    unjudged = (
        ReviewTask.objects.filter(collection=collection)
        .exclude(status=TaskStatus.DONE)
        .values_list("query__external_id", "item__external_id")
        .distinct()
    )
    overlap = None
    if collection.has_overlap:
        overlap = Overlap(
            policy=collection.resolution_policy,
            assessors_per_item=collection.assessors_per_item,
            distance=collection.adjudicate_distance,
            assessments=live_assessments(collection),
            unresolved=unresolved_pairs(collection),
        )
    return list(
        canonical_lines(
            slug=collection.slug,
            unit=collection.unit,
            relevant_grade=collection.relevant_grade,
            scale=collection.scale,
            queries=Query.objects.filter(collection=collection).values_list(
                "external_id", "status", "evidence__groups"
            ),
            judgments=judgments,
            unjudged=unjudged,
            overlap=overlap,
        )
    )


def live_form(collection: Collection) -> tuple[str, dict[str, int]]:
    """The hash of the live labels rendered whole, and the lines per kind."""
    lines = whole_form(Collection.objects.get(pk=collection.pk))
    counts = dict.fromkeys(KINDS.values(), 0)
    for line in lines:
        kind = line[: line.index(b",")]
        if kind in KINDS:
            counts[KINDS[kind]] += 1
    return content_hash(lines), counts


def blocks_of(snapshot: Snapshot) -> set[int]:
    return set(SnapshotQuery.objects.of(snapshot).values_list("pk", flat=True))


class Phases(Progress):
    """The names of the phases a freeze reports."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def phase(self, name: str, total: int | None = None) -> None:
        self.names.append(name)
        super().phase(name, total)


def freeze_and_check(collection: Collection, progress: Progress | None = None) -> Snapshot:
    """Freeze; the version's hash, counts and row-based export all equal the oracle's."""
    expected, counts = live_form(collection)
    snapshot, _ = freeze_snapshot(
        collection=Collection.objects.get(pk=collection.pk), by=None, progress=progress
    )
    assert snapshot.content_hash == expected
    assert {k: getattr(snapshot, k) for k in counts} == counts
    # The stored bytes, and the rows rendered again, both give the hash.
    for lines in (snapshot_canonical_lines(snapshot), rendered_canonical_lines(snapshot)):
        assert hashlib.sha256(b"".join(lines)).hexdigest() == expected
    assert SnapshotQuery.objects.of(snapshot).count() == snapshot.n_queries
    # The latest version holds one block per query, and only those.
    held = SnapshotQuery.objects.filter(collection=collection, end_number__isnull=True)
    assert sorted(held.values_list("pk", flat=True)) == sorted(blocks_of(snapshot))
    assert not UnfrozenChange.objects.filter(
        query_id__in=Query.objects.filter(collection=collection).values("pk")
    ).exists()
    return snapshot


class Scene:
    """A collection and random changes to its tables."""

    def __init__(self, rng: random.Random, collection: Collection, overlap: bool) -> None:
        self.rng, self.collection, self.overlap = rng, collection, overlap
        self.queries = [make_query(collection, external_id=f"q{n}") for n in range(6)]
        self.items = [make_item(collection, external_id=f"d{n}") for n in range(10)]
        self.users = [make_user(f"assessor-{collection.slug}-{n}") for n in range(3)]
        self.serial = 0

    def _name(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial}é"  # a non-ASCII id, to keep the byte order honest

    def step(self) -> str:
        rng, c = self.rng, self.collection
        kinds = [
            "judge",
            "judge",
            "unjudge",
            "raw-regrade",
            "task",
            "task-done",
            "task-reopen",
            "status",
            "evidence",
            "evidence-off",
            "new-query",
            "rename-query",
            "rename-item",
            "delete-query",
        ]
        if self.overlap:
            kinds += ["assess", "assess", "unassess", "rename-user"]
        kind = rng.choice(kinds)
        q, i = rng.choice(self.queries), rng.choice(self.items)
        judgments = list(Judgment.objects.filter(query__collection=c))
        tasks = list(ReviewTask.objects.filter(collection=c))
        if kind == "judge":
            Judgment.objects.update_or_create(
                query=q, item=i, defaults={"grade": rng.randint(0, 3)}
            )
        elif kind == "unjudge" and judgments:
            rng.choice(judgments).delete()
        elif kind == "raw-regrade" and judgments:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"UPDATE {Judgment._meta.db_table} SET grade = %s WHERE id = %s",
                    [rng.randint(0, 3), rng.choice(judgments).pk],
                )
        elif kind == "task":
            ReviewTask.objects.get_or_create(
                collection=c, query=q, item=i, slot=1, defaults={"source": "run r"}
            )
        elif kind in ("task-done", "task-reopen") and tasks:
            task = rng.choice(tasks)
            task.status = TaskStatus.DONE if kind == "task-done" else TaskStatus.PENDING
            task.save()
        elif kind == "status":
            Query.objects.filter(pk=q.pk).update(status=rng.choice(QueryStatus.values))
        elif kind == "evidence":
            groups = sorted([sorted(rng.sample(["a", "b", "c"], rng.randint(1, 2)))])
            EvidenceCondition.objects.update_or_create(query=q, defaults={"groups": groups})
        elif kind == "evidence-off":
            EvidenceCondition.objects.filter(query=q).delete()
        elif kind == "new-query":
            self.queries.append(make_query(c, external_id=self._name("new-")))
        elif kind == "rename-query":
            Query.objects.filter(pk=q.pk).update(external_id=self._name("q-"))
        elif kind == "delete-query" and len(self.queries) > 1:
            # Raw SQL: the ORM protects a frozen query, a database does not stop anyone.
            self.queries.remove(q)
            with connection.cursor() as cursor:
                for table in ("judgment", "reviewtask", "assessment", "evidencecondition"):
                    cursor.execute(f"DELETE FROM judgments_{table} WHERE query_id = %s", [q.pk])
                cursor.execute("DELETE FROM judgments_query WHERE id = %s", [q.pk])
        elif kind == "rename-item":
            Item.objects.filter(pk=i.pk).update(external_id=self._name("d-"))
        elif kind == "assess":
            Assessment.objects.update_or_create(
                collection=c,
                query=q,
                item=i,
                assessor=rng.choice(self.users),
                defaults={"grade": rng.randint(0, 3)},
            )
        elif kind == "unassess":
            assessments = list(Assessment.objects.filter(collection=c))
            if assessments:
                rng.choice(assessments).delete()
        elif kind == "rename-user":
            user = rng.choice(self.users)
            user.username = self._name(f"{user.username.split('~')[0]}~")
            user.save()
        return kind


def spoil_forms(rng: random.Random, collection: Collection) -> str:
    """Do something bad to the collection's kept canonical form (``snapshot_forms``)."""
    snapshot_forms.settle()  # (kept on a second thread)
    where = snapshot_forms.directory(collection.pk)
    files = sorted(where.iterdir()) if where.exists() else []
    body = [f for f in files if f.suffix == ".form"]
    index = [f for f in files if f.suffix == ".npz"]
    how = rng.choice(["keep", "delete", "flip-a-byte", "truncate-index", "swap-index"])
    if how != "keep":  # as another process would find it (this one trusts what it wrote)
        snapshot_forms._written.clear()
    if how == "delete":
        for f in files:
            f.unlink()
    elif how == "flip-a-byte" and body and body[-1].stat().st_size:
        data = bytearray(body[-1].read_bytes())
        data[rng.randrange(len(data))] ^= 0x01
        body[-1].write_bytes(bytes(data))
    elif how == "truncate-index" and index:
        index[-1].write_bytes(index[-1].read_bytes()[:-20])
    elif how == "swap-index" and index:  # another version's index under this one's name
        snapshot_forms.np.savez(
            index[-1],
            meta=snapshot_forms.np.frombuffer(b'{"format": 1}', dtype="uint8"),
            header=snapshot_forms.np.frombuffer(b"", dtype="uint8"),
            pks=snapshot_forms.np.zeros(0, dtype="int64"),
            lens=snapshot_forms.np.zeros((0, 6), dtype="int64"),
            counts=snapshot_forms.np.zeros((0, 5), dtype="int64"),
        )
    return how


@pytest.mark.parametrize("forms", ["kept", "spoilt"])
@pytest.mark.parametrize("overlap", [False, True], ids=["one-assessor", "several-assessors"])
@pytest.mark.parametrize("seed", range(4))
def test_freezing_only_what_changed_gives_the_hash_of_freezing_everything(
    db, seed, overlap, forms, settings, tmp_path
):
    settings.VERITY_FORM_DIR = tmp_path
    collection = make_collection(slug=f"random-{seed}-{int(overlap)}")
    if overlap:
        Collection.objects.filter(pk=collection.pk).update(assessors_per_item=2)
    scene = Scene(random.Random(seed), collection, overlap)
    versions = []
    for _round in range(8):
        for _ in range(scene.rng.randint(0, 6)):
            scene.step()
        if forms == "spoilt":
            spoil_forms(scene.rng, collection)
        versions.append(freeze_and_check(collection))

    # Every version still exports exactly what it hashed when it was frozen, whatever
    # was renamed since.
    for snapshot in {v.pk: v for v in versions}.values():
        exported = hashlib.sha256(b"".join(snapshot_canonical_lines(snapshot))).hexdigest()
        assert exported == snapshot.content_hash


def test_a_freeze_with_the_kept_form_reads_no_block_of_the_database(frozen, monkeypatch, settings):
    collection, _v1 = frozen
    judgment = Judgment.objects.filter(query__external_id="q7").first()
    judgment.grade = (judgment.grade + 1) % 4
    judgment.save()
    Query.objects.filter(collection=collection, external_id="q8").update(external_id="q10")
    query = make_query(collection, external_id="q05")
    Judgment.objects.create(query=query, item=judgment.item, grade=3)

    def refuse(*args, **kwargs):
        raise AssertionError("read every block of the latest version")

    monkeypatch.setattr("judgments.services.snapshots.held_blocks", refuse)
    v2 = freeze_and_check(collection)

    assert (v2.number, v2.n_queries) == (2, 11)
    assert sorted(
        SnapshotQuery.objects.filter(frozen_in=v2).values_list("query__external_id", flat=True)
    ) == ["q05", "q10", "q7"]
    # The next one splices v2's form, kept under v2's name.
    Judgment.objects.filter(query__external_id="q1").update(grade=0)
    assert freeze_and_check(collection).number == 3


def test_a_freeze_does_not_wait_for_its_form_to_be_written(
    frozen, monkeypatch, django_capture_on_commit_callbacks
):
    """The body file is written on a second thread; the freeze returns once it has the
    hash, and the next freeze waits for the file and splices it."""
    collection, _v1 = frozen
    snapshot_forms.settle()
    release = threading.Event()
    write = snapshot_forms._write

    def slow_write(out, part):
        assert release.wait(30)
        write(out, part)

    monkeypatch.setattr(snapshot_forms, "_write", slow_write)
    Judgment.objects.filter(query__external_id="q3").update(grade=0)
    v2 = freeze_and_check(collection)  # returns while the body is held back

    assert v2.number == 2
    where = snapshot_forms.directory(collection.pk)
    assert not list(where.glob("v2-*")), "the form was named before it was written"
    release.set()
    monkeypatch.setattr(
        "judgments.services.snapshots.held_blocks",
        lambda s: pytest.fail("read every block of the latest version"),
    )
    Judgment.objects.filter(query__external_id="q4").update(grade=0)
    with django_capture_on_commit_callbacks(execute=True):  # (the earlier forms go)
        assert freeze_and_check(collection).number == 3  # from v2's form, once written
    snapshot_forms.settle()
    assert sorted(p.name.split("-")[0] for p in where.iterdir()) == ["v3", "v3"]


def test_a_form_that_cannot_be_written_costs_the_next_freeze_a_read(frozen, monkeypatch):
    collection, _v1 = frozen

    def full_disk(out, part):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot_forms, "_write", full_disk)
    Judgment.objects.filter(query__external_id="q3").update(grade=0)
    v2 = freeze_and_check(collection)
    snapshot_forms.settle()
    assert not list(snapshot_forms.directory(collection.pk).glob("*tmp-*"))
    monkeypatch.undo()
    read = []
    monkeypatch.setattr(
        "judgments.services.snapshots.held_blocks",
        lambda s: read.append(s) or snapshot_blocks.held_blocks(s),
    )
    Judgment.objects.filter(query__external_id="q4").update(grade=0)

    assert freeze_and_check(collection).number == 3
    assert read == [v2]


@pytest.mark.parametrize("spoil", ["flip-a-byte", "delete", "truncate-index", "swap-index"])
def test_a_spoilt_form_is_not_trusted(frozen, settings, spoil, monkeypatch):
    collection, v1 = frozen
    rng = random.Random(3)
    while spoil_forms(rng, collection) != spoil:  # the same spoiling, drawn until it comes
        v1 = freeze_and_check(collection)  # nothing changed: v1 again, its form kept
    judgment = Judgment.objects.filter(query__external_id="q2").first()
    judgment.grade = (judgment.grade + 1) % 4
    judgment.save()
    read = []
    monkeypatch.setattr(
        "judgments.services.snapshots.held_blocks",
        lambda s: read.append(s) or snapshot_blocks.held_blocks(s),
    )

    v2 = freeze_and_check(collection)  # the right hash all the same ...

    assert v2.number == 2
    assert read == [v1]  # ... from the database


def test_a_form_replaced_since_this_process_wrote_it_is_hashed_again(frozen, monkeypatch):
    collection, v1 = frozen
    snapshot_forms.settle()
    (body,) = snapshot_forms.directory(collection.pk).glob("*.form")
    data = bytearray(body.read_bytes())
    data[len(data) // 2] ^= 0x01  # same size, same name, another file
    spoilt = body.with_suffix(".spoilt")
    spoilt.write_bytes(bytes(data))
    spoilt.replace(body)
    judgment = Judgment.objects.filter(query__external_id="q0").first()
    judgment.grade = (judgment.grade + 1) % 4
    judgment.save()
    read = []
    monkeypatch.setattr(
        "judgments.services.snapshots.held_blocks",
        lambda s: read.append(s) or snapshot_blocks.held_blocks(s),
    )

    freeze_and_check(collection)

    assert read == [v1]


def test_a_form_of_another_database_with_the_same_name_is_not_trusted(frozen, settings):
    """Same collection pk, number and content but other query pks (a test database made
    again, a restored dump): the pks of the changed queries are not where its index says."""
    collection, _v1 = frozen
    snapshot_forms.settle()
    where = snapshot_forms.directory(collection.pk)
    (index,) = where.glob("*.npz")
    with snapshot_forms.np.load(index) as stored:
        arrays = dict(stored)
    arrays["pks"] = arrays["pks"] + 1000
    snapshot_forms.np.savez(index, **arrays)
    judgment = Judgment.objects.filter(query__external_id="q6").first()
    judgment.grade = (judgment.grade + 1) % 4
    judgment.save()

    freeze_and_check(collection)


@pytest.fixture
def frozen(db, settings, tmp_path) -> tuple[Collection, Snapshot]:
    settings.VERITY_FORM_DIR = tmp_path
    collection = make_collection(slug="shared")
    items = [make_item(collection, external_id=f"d{n}") for n in range(20)]
    for n in range(10):
        query = make_query(collection, external_id=f"q{n}")
        for item in items[:8]:
            Judgment.objects.create(query=query, item=item, grade=(n + item.pk) % 4)
        ReviewTask.objects.create(
            collection=collection, query=query, item=items[10 + n], source="run r"
        )
    return collection, freeze_and_check(collection)


def test_a_version_after_one_regrade_adds_one_block_and_shares_the_rest(frozen):
    collection, v1 = frozen
    judgment = Judgment.objects.filter(query__external_id="q3").first()
    judgment.grade = (judgment.grade + 1) % 4
    judgment.save()

    phases = Phases()
    v2 = freeze_and_check(collection, progress=phases)

    assert v2.number == 2
    assert "rendering 1 changed queries" in phases.names  # not every query
    new_blocks = SnapshotQuery.objects.filter(frozen_in=v2)
    assert list(new_blocks.values_list("query__external_id", flat=True)) == ["q3"]
    # Its rows and nothing else were written: 8 judgments and 1 unjudged marker.
    assert SnapshotJudgment.objects.filter(block__frozen_in=v2).count() == 8
    assert SnapshotUnjudged.objects.filter(block__frozen_in=v2).count() == 1
    assert SnapshotJudgment.objects.count() == 80 + 8
    # v2 holds v1's other nine blocks, v1 still holds all ten of its own.
    held, v1_blocks = blocks_of(v2), blocks_of(v1)
    assert len(held & v1_blocks) == 9 and len(v1_blocks) == 10
    # Its run ended at v2; the rest go on.
    ended = SnapshotQuery.objects.filter(collection=collection, end_number=2)
    assert list(ended.values_list("query__external_id", "first_number")) == [("q3", 1)]
    assert SnapshotJudgment.objects.of(v1).count() == SnapshotJudgment.objects.of(v2).count() == 80


def test_a_change_undone_before_the_freeze_makes_no_version(frozen):
    collection, v1 = frozen
    judgment = Judgment.objects.filter(query__external_id="q5").first()
    grade = judgment.grade
    judgment.grade = (grade + 1) % 4
    judgment.save()
    judgment.grade = grade
    judgment.save()
    assert UnfrozenChange.objects.exists()

    snapshot, created = freeze_snapshot(collection=collection, by=None)

    assert (snapshot.pk, created) == (v1.pk, False)
    assert not UnfrozenChange.objects.exists()  # read, rendered, found unchanged


def test_the_change_triggers_are_all_in_place(db):
    assert triggers_in_place()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT tgname FROM pg_trigger WHERE tgname LIKE 'verity_unfrozen_%'")
        else:
            cursor.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' "
                "AND name LIKE 'verity_unfrozen_%'"
            )
        assert {name for (name,) in cursor.fetchall()} == TRIGGERS


def test_without_a_change_trigger_a_freeze_renders_every_query(frozen, monkeypatch):
    """A later SQLite migration that rebuilds a table drops its triggers: the freeze must
    then not trust the change list, and renders everything."""
    collection, _v1 = frozen
    judgment = Judgment.objects.filter(query__external_id="q2").first()
    judgment.grade = (judgment.grade + 2) % 4
    judgment.save()
    UnfrozenChange.objects.all().delete()  # the change went unlisted...
    monkeypatch.setattr(snapshot_blocks, "TRIGGERS", TRIGGERS | {"verity_unfrozen_missing"})
    assert not snapshot_blocks.triggers_in_place()  # ... because a trigger is missing

    v2 = freeze_and_check(collection)  # ... and it is frozen all the same

    assert v2.number == 2
    assert list(
        SnapshotQuery.objects.filter(frozen_in=v2).values_list("query__external_id", flat=True)
    ) == ["q2"]


@pytest.mark.skipif("connection.vendor != 'sqlite'")
def test_a_dropped_trigger_is_noticed(db):
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER verity_unfrozen_judgment_update")
    assert not triggers_in_place()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # no trigger event may be pending for the ALTER
def test_a_disabled_trigger_is_noticed():
    alter = "ALTER TABLE judgments_judgment {} TRIGGER verity_unfrozen_judgment_update"
    with connection.cursor() as cursor:
        cursor.execute(alter.format("DISABLE"))
    try:
        assert not triggers_in_place()
    finally:
        with connection.cursor() as cursor:
            cursor.execute(alter.format("ENABLE"))
    assert triggers_in_place()


def test_renaming_an_assessor_renders_their_queries_again(db):
    collection = make_collection(slug="renamed")
    Collection.objects.filter(pk=collection.pk).update(assessors_per_item=2)
    user = make_user("before")
    item = make_item(collection, external_id="d")
    for qid in ("q1", "q2"):
        query = make_query(collection, external_id=qid)
        Assessment.objects.create(
            collection=collection, query=query, item=item, assessor=user, grade=1
        )
    freeze_and_check(collection)

    get_user_model().objects.filter(pk=user.pk).update(username="after")

    v2 = freeze_and_check(collection)
    assert SnapshotQuery.objects.filter(frozen_in=v2).count() == 2


def test_many_changed_queries_are_read_in_pieces(db):
    """More changed queries than fit one IN list (500), fewer than a quarter of all (which
    would render everything in one pass)."""
    collection = make_collection(slug="many")
    item = make_item(collection, external_id="d")
    queries = Query.objects.bulk_create(
        Query(collection=collection, external_id=f"q{n:04d}", text="t") for n in range(2600)
    )
    Judgment.objects.bulk_create(Judgment(query=q, item=item, grade=1) for q in queries)
    freeze_and_check(collection)

    Judgment.objects.filter(query__in=queries[:1200:2]).update(grade=2)  # 600 queries
    assert UnfrozenChange.objects.count() == 600

    v2 = freeze_and_check(collection)
    assert SnapshotQuery.objects.filter(frozen_in=v2).count() == 600


def test_a_new_scale_name_makes_a_version_of_shared_blocks_only(frozen):
    collection, v1 = frozen
    scale = [dict(g) for g in collection.scale]
    scale[0]["name"] = "off topic"
    Collection.objects.filter(pk=collection.pk).update(scale=scale)

    v2 = freeze_and_check(collection)

    assert v2.content_hash != v1.content_hash
    assert not SnapshotQuery.objects.filter(frozen_in=v2).exists()
    assert blocks_of(v2) == blocks_of(v1)


def test_the_blocks_a_version_holds_are_its_own(frozen):
    collection, v1 = frozen
    judgment = Judgment.objects.filter(query__external_id="q4").first()
    judgment.grade = (judgment.grade + 1) % 4
    judgment.save()
    v2 = freeze_and_check(collection)

    held = snapshot_blocks.held_blocks(v1)

    live = Query.objects.filter(collection=collection).values_list("pk", flat=True)
    assert set(held) == set(live)
    v1_block = SnapshotQuery.objects.get(frozen_in=v1, query=judgment.query_id)
    assert held[judgment.query_id].lines.judgment_lines == bytes(v1_block.judgment_lines)
    assert blocks_of(v1) - blocks_of(v2) == set(
        SnapshotQuery.objects.filter(frozen_in=v1, query=judgment.query_id).values_list(
            "pk", flat=True
        )
    )


def test_a_block_is_the_querys_part_of_every_section_whatever_the_input_order():
    """``render_block`` (no database) against ``canonical_lines`` on the same labels: several
    model labels, assessors, unjudged and unresolved items, given in scrambled order."""
    rng = random.Random(7)
    items = [f"d{n}" for n in range(8)] + ["é", "Z", "a b"]
    judgments = [(i, rng.randint(0, 3)) for i in items[:5]]
    model = [(i, rng.choice(["judge-b", "judge-a"]), rng.randint(0, 3)) for i in items[5:8]]
    assessments = [(i, who, rng.randint(0, 3)) for i in items[:6] for who in ("ben", "ana", "cy")]
    unjudged, unresolved = items[8:], items[5:7]
    for part in (judgments, model, assessments, unjudged, unresolved):
        rng.shuffle(part)
    evidence = [["a"], ["b", "c"]]

    block = render_block(
        "q1",
        "relevant",
        evidence,
        judgments=judgments,
        model_judgments=model,
        assessments=assessments,
        unjudged=unjudged,
        unresolved=unresolved,
    )

    whole = list(
        canonical_lines(
            slug="s",
            unit="document",
            relevant_grade=1,
            scale=[{"grade": 0, "name": "no"}],
            queries=[("q1", "relevant", evidence)],
            judgments=[("q1", i, g) for i, g in judgments],
            unjudged=[("q1", i) for i in unjudged],
            model_judgments=[("q1", i, j, g) for i, j, g in model],
            overlap=Overlap(
                policy="adjudicate",
                assessors_per_item=3,
                distance=1,
                assessments=[("q1", i, w, g) for i, w, g in assessments],
                unresolved=[("q1", i) for i in unresolved],
            ),
        )
    )
    assert b"".join(block.sections()) == b"".join(whole[3:])  # after the 3 header lines
    assert block.model_lines.count(b"\n") == 3 and block.unresolved_lines.count(b"\n") == 2


def test_a_query_without_evidence_freezes_it_as_null(frozen):
    _collection, v1 = frozen
    assert SnapshotQuery.objects.filter(frozen_in=v1, evidence__isnull=True).count() == 10
