"""export_collection → import_collection: the whole collection round-trips.

The round trip is the one a user makes into an empty database, inside one test database:
the source collection is frozen and exported, then renamed out of the way (its history
rows are append-only, so it cannot be deleted), and the bundle imported under the
original slug, as into an empty database: no member of the new collection, so every
user comes back as a name. Exporting the copy gives the same bytes; freezing it gives
the same content hash (the slug is part of the hashed form, hence the rename).
Runs on SQLite and, with DATABASE_URL set, on PostgreSQL.
"""

from __future__ import annotations

import json

import pytest
from django.core.management.base import CommandError

from judgments import formats
from judgments.models import (
    AdjudicationStatus,
    AdjudicationTask,
    Assessment,
    Collection,
    Judgment,
    JudgmentChange,
    QueryStatus,
    ReviewTask,
    Snapshot,
    TaskStatus,
)
from judgments.services import (
    freeze_snapshot,
    import_collection_data,
    queue_unjudged,
    record_assessment,
    set_membership,
    set_query_status,
    update_collection_settings,
)
from tests.factories import GRADED_SCALE, make_collection, make_item, make_query, make_user
from tests.judgments.conftest import ODD_IDS


def export(run_command, slug: str, *args: str) -> bytes:
    return run_command("export_collection", slug, *args)[0].encode("utf-8")


def move_aside(slug: str) -> None:
    Collection.objects.filter(slug=slug).update(slug=f"{slug}-moved")


def test_several_assessors_round_trip_bytes_and_hash(rt_world, run_command, write_file):
    c = rt_world
    v1, _ = freeze_snapshot(collection=c, by=None)
    first = export(run_command, "rt")
    path = write_file("rt.jsonl", first)
    move_aside("rt")

    out, _ = run_command("import_collection", path)

    copy = Collection.objects.get(slug="rt")
    assert "adjudications: 2 created" in out
    assert export(run_command, "rt") == first
    v1_copy, _ = freeze_snapshot(collection=copy, by=None)
    assert v1_copy.content_hash == v1.content_hash
    assert (v1_copy.n_judgments, v1_copy.n_assessments, v1_copy.unjudged_total) == (3, 9, 3)
    # nobody is a member of the new collection: every user came back as a name
    assert not Assessment.objects.filter(collection=copy, assessor__isnull=False).exists()
    decided = AdjudicationTask.objects.get(collection=copy, status=AdjudicationStatus.DECIDED)
    original = AdjudicationTask.objects.get(collection=c, status=AdjudicationStatus.DECIDED)
    assert (decided.grade, decided.decider, decided.decided_at) == (
        2,
        "boss",
        original.decided_at,
    )
    assert AdjudicationTask.objects.filter(collection=copy, status="open").count() == 1
    # labels the policy gives stay "resolved" (open to resolving again), as in the source
    sources = dict(
        JudgmentChange.objects.filter(query__collection=copy).values_list(
            "item__external_id", "source"
        )
    )
    assert sources == {"d/1?x=ü": "resolution", "plain": "resolution", "😀": "import"}
    open_slots = ReviewTask.objects.filter(collection=copy).exclude(status=TaskStatus.DONE)
    assert sorted(open_slots.values_list("item__external_id", flat=True)) == sorted(
        ['quote"d', "back\\slash", "back\\slash"]
    )


def test_the_collection_line_carries_every_setting(rt_world, run_command):
    line = json.loads(export(run_command, "rt").split(b"\n", 1)[0])
    assert line == {
        "type": "collection",
        "format_version": 2,
        "slug": "rt",
        "name": "Round trip ✓",
        "description": "Corpus: ünïcode…\nline 2 «quoted»",
        "unit": "chunk",
        "scale": GRADED_SCALE,
        "relevant_grade": 2,
        "guidelines": "# Héading\n\nGrade *3* when…",
        "pool_depth": 7,
        "holds_whole_corpus": True,
        "assessors_per_item": 2,
        "resolution_policy": "adjudicate",
        "adjudicate_distance": 0,
        "model_labels": "",
    }


def test_a_pooling_strategy_round_trips_and_depth_writes_no_key(rt_world, run_command, write_file):
    """pool_strategy and pool_floor are on the line only when not depth and 0, so a
    collection pooled by depth exports the bytes it did before they existed."""
    plain = export(run_command, "rt")
    assert b"pool_strategy" not in plain and b"pool_floor" not in plain
    update_collection_settings(collection=rt_world, pool_strategy="bandit", pool_floor=5)
    v1, _ = freeze_snapshot(collection=rt_world, by=None)
    first = export(run_command, "rt")
    line = json.loads(first.split(b"\n", 1)[0])
    assert list(line)[-3:] == ["model_labels", "pool_strategy", "pool_floor"]
    assert (line["pool_strategy"], line["pool_floor"]) == ("bandit", 5)
    assert first.split(b"\n", 1)[1] == plain.split(b"\n", 1)[1]  # only line 1 differs
    move_aside("rt")

    run_command("import_collection", write_file("rt.jsonl", first))

    copy = Collection.objects.get(slug="rt")
    assert (copy.pool_strategy, copy.pool_floor) == ("bandit", 5)
    assert export(run_command, "rt") == first
    assert freeze_snapshot(collection=copy, by=None)[0].content_hash == v1.content_hash
    # an existing collection is compared on them when the line gives them
    with pytest.raises(CommandError, match=r"pool_floor 5 \(this file: 3\)"):
        other = json.dumps({**line, "pool_floor": 3}) + "\n"
        run_command("import_collection", write_file("x.jsonl", other))
    # a floor without an adaptive strategy is refused on line 1, naming the fix
    new = {**line, "slug": "fresh", "pool_strategy": "depth"}
    with pytest.raises(CommandError, match=r"x\.jsonl, line 1: a depth floor goes with mtf"):
        run_command("import_collection", write_file("x.jsonl", json.dumps(new) + "\n"))
    assert not Collection.objects.filter(slug="fresh").exists()


def new_collection_form(line: dict, bundle: bytes, **review) -> dict:
    """The new-collection page's form, filled as the bundle's line says, starting from it."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    return {
        "name": line["name"],
        "slug": line["slug"],
        "unit": line["unit"],
        "scale": "\n".join(f"{g['grade']} {g['name']}" for g in line["scale"]),
        "relevant_grade": line["relevant_grade"],
        "description": line["description"],
        "guidelines": line["guidelines"],
        "pool_depth": line["pool_depth"],
        "assessors_per_item": line["assessors_per_item"],
        "resolution_policy": line["resolution_policy"],
        "adjudicate_distance": line["adjudicate_distance"],
        "start": "bundle",
        "bundle": SimpleUploadedFile(f"{line['slug']}.jsonl", bundle),
        **review,
    }


def test_a_new_collection_from_a_bundle_on_the_page_is_the_bundles(
    rt_world, run_command, client, jobs_inline
):
    """/c/new/ from a bundle of several assessors: its assessments were imported into a
    one-assessor collection (the form's review settings came after the import) and the
    line's other settings were dropped, so the copy exported other bytes and froze to
    another hash. Now the line's settings come along and the review settings are set
    first: the same bytes, the same hash; a form whose review settings differ from a
    several-assessor bundle's is refused, naming line 1."""
    from jobs.models import Job, JobState

    update_collection_settings(collection=rt_world, pool_strategy="mtf", pool_floor=2)
    v1, _ = freeze_snapshot(collection=rt_world, by=None)
    first = export(run_command, "rt")
    line = json.loads(first.split(b"\n", 1)[0])
    move_aside("rt")
    client.force_login(make_user("lead", is_superuser=True))

    with jobs_inline():
        client.post("/c/new/", new_collection_form(line, first, assessors_per_item=1))
    refused = Job.objects.get()
    assert refused.state == JobState.FAILED
    assert (
        "rt.jsonl, line 1: the bundle's collection has assessors_per_item 2, the form 1: make "
        "the form match the bundle (its assessments were made and resolved under its setting)"
    ) in refused.errors
    assert not Collection.objects.filter(slug="rt").exists()

    with jobs_inline():
        client.post("/c/new/", new_collection_form(line, first))
    done = Job.objects.exclude(pk=refused.pk).get()
    assert done.state == JobState.DONE, (done.error, done.errors)
    copy = Collection.objects.get(slug="rt")
    assert (copy.holds_whole_corpus, copy.pool_strategy, copy.pool_floor) == (True, "mtf", 2)
    assert export(run_command, "rt") == first
    assert freeze_snapshot(collection=copy, by=None)[0].content_hash == v1.content_hash


def test_bundle_lines_name_assessors_and_deciders(rt_world, run_command):
    records = [json.loads(line) for line in export(run_command, "rt").splitlines()]
    assessments = [
        (r["query"], r["item"], r["assessor"], r["grade"])
        for r in records
        if r["type"] == "judgment" and "assessor" in r
    ]
    assert ("Q-2", "plain", "ext Ω", 0) in assessments
    assert ("Q/1", "日本語-文書", "bén", 2) in assessments
    adjudications = [r for r in records if r["type"] == "adjudication"]
    assert [(a["item"], a["status"], a["grade"], a["decided_by"]) for a in adjudications] == [
        ("日本語-文書", "open", None, None),
        ("😀", "decided", 2, "boss"),
    ]
    labels = [(r["item"], r["grade"]) for r in records if "reviewer" in r]
    assert labels == [("plain", 0), ("d/1?x=ü", 3), ("😀", 2)]  # Q-2 < Q/1 by code point


def test_a_snapshot_bundle_freezes_to_that_snapshots_hash(rt_world, run_command, write_file):
    c = rt_world
    v1, _ = freeze_snapshot(collection=c, by=None)
    ben = c.members.get(user__username="bén").user
    record_assessment(
        query=c.queries.get(external_id="Q-2"),
        item=c.items.get(external_id='quote"d'),
        grade=1,
        assessor=ben,
    )  # v1 is not the live state any more
    v2, created = freeze_snapshot(collection=c, by=None)
    assert created and v2.content_hash != v1.content_hash
    bundle = export(run_command, "rt", "--snapshot", "1")
    move_aside("rt")

    run_command("import_collection", write_file("rt-v1.jsonl", bundle))

    copy = Collection.objects.get(slug="rt")
    frozen, _ = freeze_snapshot(collection=copy, by=None)
    assert frozen.content_hash == v1.content_hash
    assert export(run_command, "rt") == bundle  # and it exports as it came


def test_single_assessor_collection_with_unicode_round_trips(db, run_command, write_file):
    c = make_collection(slug="one", description="ümlaut")
    ana = make_user("ana")
    set_membership(collection=c, user=ana, role="reviewer")
    q = make_query(c, external_id="ق-1", text="سؤال")
    q_no = make_query(c, external_id="q:no")
    items = [make_item(c, external_id=i) for i in ODD_IDS]
    from tests.factories import make_judgment

    make_judgment(query=q, item=items[0], grade=3, reviewer=ana, note="ok ✓")
    make_judgment(query=q, item=items[1], grade=0)
    queue_unjudged(collection=c, pairs=[(q.pk, items[2].pk, 4)], source="run ünï")
    set_query_status(query=q, status=QueryStatus.RELEVANT, by=ana)
    set_query_status(query=q_no, status=QueryStatus.NO_ANSWER, by=ana)
    v1, _ = freeze_snapshot(collection=c, by=None)
    first = export(run_command, "one")
    move_aside("one")

    run_command("import_collection", write_file("one.jsonl", first))

    assert export(run_command, "one") == first
    copy = Collection.objects.get(slug="one")
    assert freeze_snapshot(collection=copy, by=None)[0].content_hash == v1.content_hash
    judgment = Judgment.objects.get(query__collection=copy, grade=3)
    assert (judgment.reviewer_id, judgment.reviewer_name) == (None, "ana")


def test_members_named_by_the_bundle_get_their_assessments(rt_world, run_command, write_file):
    """Make the people members first (as load_demo does): their assessments are theirs."""
    first = export(run_command, "rt")
    move_aside("rt")
    head, problems = formats.parse_bundle(first.split(b"\n", 1)[0] + b"\n", "rt.jsonl")
    assert problems == []
    copy = import_collection_data(data=head).collection
    ana = Collection.objects.get(slug="rt-moved").members.get(user__username="ana").user
    set_membership(collection=copy, user=ana, role="reviewer")

    run_command("import_collection", write_file("rt.jsonl", first))

    mine = Assessment.objects.filter(collection=copy, assessor=ana)
    assert mine.count() == 4
    assert not Assessment.objects.filter(collection=copy, assessor_name="ana").exists()
    assert export(run_command, "rt") == first  # named the same either way


def test_importing_the_same_bundle_again_changes_nothing(rt_world, run_command, write_file):
    first = export(run_command, "rt")
    path = write_file("rt.jsonl", first)
    move_aside("rt")
    run_command("import_collection", path)

    out, _ = run_command("import_collection", path)

    assert "adjudications: 0 created, 2 already there" in out
    assert export(run_command, "rt") == first


BAD = [
    (
        {"type": "adjudication", "query": "Q/1", "item": "nope", "status": "decided", "grade": 1,
         "decided_at": "2026-01-01T00:00:00+00:00"},
        "line 2: unknown item 'nope'",
    ),
    (
        {"type": "adjudication", "query": "Q/1", "item": "plain", "status": "open", "grade": 1},
        "line 2: an open adjudication has no 'grade'",
    ),
    (
        {"type": "adjudication", "query": "Q/1", "item": "plain", "grade": 1,
         "decided_at": "yesterday"},
        "line 2: 'decided_at' 'yesterday' is not an ISO 8601 time",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("record", "message"), BAD)
def test_bad_adjudication_lines_are_refused_with_file_and_line(
    rt_world, run_command, write_file, row_counts, record, message
):
    head = export(run_command, "rt").split(b"\n", 1)[0].decode()
    head = json.dumps({**json.loads(head), "slug": "fresh"}, ensure_ascii=False)
    path = write_file("bad.jsonl", head + "\n" + json.dumps(record) + "\n")
    before = row_counts()

    with pytest.raises(CommandError, match="Nothing was imported") as caught:
        run_command("import_collection", path)

    assert f"bad.jsonl, {message}" in str(caught.value)
    assert row_counts() == before


def test_a_newer_format_and_a_missing_judge_are_refused(db, run_command, write_file):
    line = {
        "type": "collection",
        "slug": "x",
        "scale": GRADED_SCALE,
        "relevant_grade": 2,
        "format_version": 3,
    }
    with pytest.raises(CommandError, match=r"x.jsonl, line 1: bundle format 3 is newer"):
        run_command("import_collection", write_file("x.jsonl", json.dumps(line) + "\n"))
    line = {**line, "format_version": 2, "resolution_policy": "loudest"}
    with pytest.raises(CommandError, match=r"x\.jsonl, line 1: resolution policy 'loudest'"):
        run_command("import_collection", write_file("x.jsonl", json.dumps(line) + "\n"))
    line = {**line, "resolution_policy": "median", "model_labels": "gpt-judge"}
    with pytest.raises(CommandError, match="a bundle carries no judges"):
        run_command("import_collection", write_file("x.jsonl", json.dumps(line) + "\n"))
    assert not Collection.objects.filter(slug="x").exists()


def test_an_existing_collection_with_other_settings_is_refused(rt_world, run_command, write_file):
    head = json.loads(export(run_command, "rt").split(b"\n", 1)[0])
    with pytest.raises(CommandError, match=r"assessors_per_item 2 \(this file: 3\)"):
        run_command(
            "import_collection",
            write_file("rt.jsonl", json.dumps({**head, "assessors_per_item": 3}) + "\n"),
        )
    # a format 1 line (no settings) is not compared on them
    old = {k: v for k, v in head.items() if k in ("type", "slug", "name", "description", "unit",
           "scale", "relevant_grade", "guidelines", "pool_depth")}  # fmt: skip
    run_command("import_collection", write_file("old.jsonl", json.dumps(old) + "\n"))


def test_a_snapshot_with_model_labels_is_not_exported_as_a_bundle(rt_world, run_command):
    Snapshot.objects.create(
        collection=rt_world,
        number=1,
        content_hash="0" * 64,
        scale=GRADED_SCALE,
        relevant_grade=2,
        unit="chunk",
        n_queries=0,
        n_judgments=1,
        n_unjudged=0,
        model_labels={"local-baseline": 1},
    )
    with pytest.raises(CommandError, match="holds 1 labels made by model judges"):
        run_command("export_collection", "rt", "--snapshot", "1")


def test_runs_come_along_with_runs_and_are_not_pooled_again(db, run_command, write_file):
    from scoring.models import RankedList, Run
    from tests.judgments.conftest import RECALL_EXAMPLE

    run_command("import_collection", RECALL_EXAMPLE / "bundle.jsonl")
    run_command("import_run", "recall-example", RECALL_EXAMPLE / "run.trec", "--name", "founding")
    v1, _ = freeze_snapshot(collection=Collection.objects.get(slug="recall-example"), by=None)
    first = export(run_command, "recall-example", "--runs")
    tasks_before = ReviewTask.objects.count()
    move_aside("recall-example")

    out, _ = run_command("import_collection", write_file("r.jsonl", first))

    assert "runs: 1 stored as they were" in out
    assert export(run_command, "recall-example", "--runs") == first
    copy = Collection.objects.get(slug="recall-example")
    assert freeze_snapshot(collection=copy, by=None)[0].content_hash == v1.content_hash
    assert ReviewTask.objects.count() == 2 * tasks_before  # the same tasks, no new ones
    lists = dict(
        RankedList.objects.filter(stage__run__collection=copy).values_list("query_id", "items")
    )
    original = dict(
        RankedList.objects.filter(stage__run__collection__slug="recall-example-moved").values_list(
            "query_id", "items"
        )
    )
    assert lists == original and len(lists) == 3
    assert Run.objects.get(collection=copy).name == "founding"
    records = [json.loads(line) for line in first.splitlines()]
    assert [r["type"] for r in records[-4:]] == ["run", "ranking", "ranking", "ranking"]


def test_a_ranking_of_no_run_is_refused(db, run_command, write_file, row_counts):
    head = {"type": "collection", "slug": "x", "scale": GRADED_SCALE, "relevant_grade": 2}
    ranking = {"type": "ranking", "run": "bm25", "stage": "default", "query": "q", "items": []}
    before = row_counts()
    with pytest.raises(CommandError, match=r"x\.jsonl, line 2: no run record names run 'bm25'"):
        run_command(
            "import_collection",
            write_file("x.jsonl", json.dumps(head) + "\n" + json.dumps(ranking) + "\n"),
        )
    assert row_counts() == before
