"""Services: every refused change says why and leaves the stored data exactly as it was.

Single-connection behaviour only; what happens when several connections race is in
``test_concurrency.py`` (PostgreSQL).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from judgments.models import (
    ChangeSource,
    Collection,
    EvidenceCondition,
    Judgment,
    JudgmentChange,
    QueryStatus,
    QueryStatusChange,
    ReviewTask,
    TaskStatus,
)
from judgments.selectors import (
    collections_with_progress,
    judgments_of,
    queries_of,
    unjudged_items_for,
)
from judgments.services import (
    InvariantError,
    JudgmentConflict,
    claim_next_task,
    create_collection,
    judge_task,
    normalize_evidence,
    queue_unjudged,
    record_judgment,
    record_judgment_once,
    remove_judgment,
    set_evidence_condition,
    set_query_status,
    validate_scale,
)
from tests.factories import (
    BINARY_SCALE,
    GRADED_SCALE,
    make_collection,
    make_item,
    make_judgment,
    make_query,
)

pytestmark = pytest.mark.django_db


def history_of(query, item) -> list[tuple]:
    """(old grade, new grade, version, who) per change of the pair, oldest first."""
    return [
        (c.old_grade, c.new_grade, c.version, c.changed_by.username if c.changed_by else None)
        for c in JudgmentChange.objects.filter(query=query, item=item).select_related("changed_by")
    ]


def stored(judgment) -> dict:
    """The judgment's row as the database holds it."""
    return Judgment.objects.values("grade", "version", "reviewer_id", "note").get(pk=judgment.pk)


@pytest.fixture
def vaccines_answered(query_vaccines, item_cdc_faq, reviewer_ana):
    """``query_vaccines`` marked relevant, its one relevant judgment: cdc-mrna-faq = 3."""
    judgment = make_judgment(
        query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ana
    )
    set_query_status(query=query_vaccines, status=QueryStatus.RELEVANT, by=reviewer_ana)
    return judgment


# -- scales and collections -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("scale", "relevant_grade", "canonical"),
    [
        (GRADED_SCALE, 2, GRADED_SCALE),
        (BINARY_SCALE, 1, BINARY_SCALE),
        (
            [{"grade": 0, "name": "  no  "}, {"grade": 3, "name": "yes", "colour": "green"}],
            3,
            [{"grade": 0, "name": "no"}, {"grade": 3, "name": "yes"}],
        ),
    ],
    ids=["graded", "binary", "gap-stripped-names-extra-keys-dropped"],
)
def test_valid_scale_comes_back_canonical(scale, relevant_grade, canonical):
    assert validate_scale(scale, relevant_grade) == canonical


def _scale(*grades):
    return [{"grade": g, "name": f"grade {g}"} for g in grades]


@pytest.mark.parametrize(
    ("scale", "relevant_grade", "message"),
    [
        ("0 no, 1 yes", 1, "non-empty list"),
        ([], 1, "non-empty list"),
        ([{"grade": 0}, {"grade": 1, "name": "yes"}], 1, "needs a 'grade' and a 'name'"),
        ([{"grade": 0, "name": "  "}, {"grade": 1, "name": "yes"}], 1, "grade 0 needs a name"),
        (_scale(-1, 0, 1), 1, "scale grade -1 must be an integer from 0 to 32767"),
        (_scale(0, 1, 32768), 1, "scale grade 32768 must be an integer from 0 to 32767"),
        ([{"grade": "0", "name": "no"}, {"grade": 1, "name": "yes"}], 1, "scale grade '0'"),
        ([{"grade": 0, "name": "no"}, {"grade": 1.0, "name": "yes"}], 1, "scale grade 1.0"),
        ([{"grade": False, "name": "no"}, {"grade": 1, "name": "yes"}], 1, "scale grade False"),
        (_scale(0, 2, 1), 2, r"distinct and ascending, got [0, 2, 1]"),
        (_scale(0, 1, 1, 2), 1, r"distinct and ascending, got [0, 1, 1, 2]"),
        (_scale(0, 1, 3), 2, "relevant grade 2 is not on the scale [0, 1, 3]; pick one of them"),
        (_scale(0, 1), 0, "relevant grade 0 is the lowest grade"),
        (_scale(1, 2, 3), 1, "relevant grade 1 is the lowest grade"),
    ],
    ids=[
        "not-a-list",
        "empty",
        "entry-without-name",
        "blank-name",
        "negative-grade",
        "grade-past-smallint",
        "string-grade",
        "float-grade",
        "bool-grade",
        "out-of-order",
        "duplicate-grade",
        "relevant-grade-not-on-scale",
        "relevant-grade-is-lowest",
        "relevant-grade-is-lowest-not-zero",
    ],
)
def test_invalid_scale_is_refused(scale, relevant_grade, message):
    with pytest.raises(InvariantError) as refused:
        validate_scale(scale, relevant_grade)
    assert message in str(refused.value)


def test_create_collection_stores_the_canonical_scale():
    collection = make_collection(
        slug="rag-chunks",
        scale=[{"grade": 0, "name": " off-topic "}, {"grade": 1, "name": "answers"}],
        relevant_grade=1,
        unit="chunk",
        pool_depth=20,
    )
    collection.refresh_from_db()
    assert collection.scale == [{"grade": 0, "name": "off-topic"}, {"grade": 1, "name": "answers"}]
    assert (collection.unit, collection.relevant_grade, collection.pool_depth) == ("chunk", 1, 20)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"slug": "health-graded"}, "slug 'health-graded' exists already"),
        ({"unit": "paragraph"}, "unit 'paragraph' must be one of document, chunk, evidence"),
        ({"pool_depth": 0}, "pool depth 0 must be a positive integer"),
        ({"pool_depth": "10"}, "pool depth '10' must be a positive integer"),
        ({"relevant_grade": 4}, "relevant grade 4 is not on the scale"),
    ],
    ids=["duplicate-slug", "unknown-unit", "pool-depth-zero", "pool-depth-string", "bad-scale"],
)
def test_refused_collection_is_not_created(collection_graded, overrides, message):
    arguments = {
        "slug": "health-2",
        "name": "Health 2",
        "scale": GRADED_SCALE,
        "relevant_grade": 2,
    } | overrides
    with pytest.raises(InvariantError, match=message):
        create_collection(**arguments)
    assert list(Collection.objects.values_list("slug", flat=True)) == ["health-graded"]


# -- recording judgments --------------------------------------------------------------------


def test_new_judgment_is_version_1_with_a_history_row(query_vaccines, item_cdc_faq, reviewer_ana):
    judgment = record_judgment(
        query=query_vaccines,
        item=item_cdc_faq,
        grade=3,
        reviewer=reviewer_ana,
        expected_version=None,
        note="says so in the first line",
        source=ChangeSource.API,
    )
    assert stored(judgment) == {
        "grade": 3,
        "version": 1,
        "reviewer_id": reviewer_ana.pk,
        "note": "says so in the first line",
    }
    change = JudgmentChange.objects.get()
    assert (change.old_grade, change.new_grade, change.version) == (None, 3, 1)
    assert (change.old_note, change.new_note) == ("", "says so in the first line")
    assert (change.changed_by, change.source) == (reviewer_ana, ChangeSource.API)


@pytest.mark.parametrize("grade", [4, -1, 99, True, "2", 2.0, None], ids=repr)
def test_grade_off_the_scale_is_refused_and_nothing_is_stored(
    query_vaccines, item_cdc_faq, reviewer_ana, grade
):
    with pytest.raises(InvariantError) as refused:
        record_judgment(
            query=query_vaccines,
            item=item_cdc_faq,
            grade=grade,
            reviewer=reviewer_ana,
            expected_version=None,
        )
    assert str(refused.value) == (
        f"grade {grade!r} is not on the scale (0 not relevant, 1 related, 2 relevant, 3 perfect)"
    )
    assert not Judgment.objects.exists()
    assert not JudgmentChange.objects.exists()


def test_binary_collection_refuses_grade_2(collection_binary, reviewer_ana):
    query = make_query(collection_binary)
    with pytest.raises(InvariantError, match="grade 2 is not on the scale"):
        make_judgment(query=query, grade=2, reviewer=reviewer_ana)
    assert not Judgment.objects.exists()


def test_edit_to_a_grade_off_the_scale_keeps_the_stored_judgment(
    query_vaccines, item_cdc_faq, reviewer_ana, reviewer_ben
):
    judgment = make_judgment(
        query=query_vaccines, item=item_cdc_faq, grade=1, reviewer=reviewer_ana
    )
    with pytest.raises(InvariantError, match="grade 5 is not on the scale"):
        record_judgment(
            query=query_vaccines,
            item=item_cdc_faq,
            grade=5,
            reviewer=reviewer_ben,
            expected_version=1,
        )
    assert stored(judgment) == {
        "grade": 1,
        "version": 1,
        "reviewer_id": reviewer_ana.pk,
        "note": "",
    }
    assert history_of(query_vaccines, item_cdc_faq) == [(None, 1, 1, "ana")]


def test_item_of_another_collection_is_refused(query_vaccines, collection_binary, reviewer_ana):
    stranger = make_item(collection_binary, external_id="binary-doc")
    with pytest.raises(InvariantError, match="item 'binary-doc' belongs to another collection"):
        make_judgment(query=query_vaccines, item=stranger, grade=0, reviewer=reviewer_ana)
    assert not Judgment.objects.exists()


def test_edit_with_the_current_version_makes_version_2(
    query_vaccines, item_cdc_faq, reviewer_ana, reviewer_ben
):
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=1, reviewer=reviewer_ana)

    judgment = record_judgment(
        query=query_vaccines,
        item=item_cdc_faq,
        grade=3,
        reviewer=reviewer_ben,
        expected_version=1,
        note="the FAQ answers it directly",
    )

    assert stored(judgment) == {
        "grade": 3,
        "version": 2,
        "reviewer_id": reviewer_ben.pk,
        "note": "the FAQ answers it directly",
    }
    assert history_of(query_vaccines, item_cdc_faq) == [(None, 1, 1, "ana"), (1, 3, 2, "ben")]
    last = JudgmentChange.objects.last()
    assert (last.old_note, last.new_note) == ("", "the FAQ answers it directly")


@pytest.mark.parametrize("stale_version", [1, 3], ids=["older", "newer"])
def test_edit_with_a_stale_version_conflicts_and_changes_nothing(
    query_vaccines, item_cdc_faq, reviewer_ana, reviewer_ben, stale_version
):
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=1, reviewer=reviewer_ana)
    judgment = record_judgment(
        query=query_vaccines,
        item=item_cdc_faq,
        grade=3,
        reviewer=reviewer_ben,
        expected_version=1,
        note="ben's reading",
    )
    before = stored(judgment)

    with pytest.raises(JudgmentConflict) as conflict:
        record_judgment(
            query=query_vaccines,
            item=item_cdc_faq,
            grade=0,
            reviewer=reviewer_ana,
            expected_version=stale_version,
        )

    assert (conflict.value.query_id, conflict.value.item_id) == ("q-vaccines", "cdc-mrna-faq")
    assert (conflict.value.current.grade, conflict.value.current.version) == (3, 2)
    assert conflict.value.current.reviewer == reviewer_ben
    assert str(conflict.value) == (
        "judgment of item 'cdc-mrna-faq' for query 'q-vaccines' was changed: your edit was "
        f"based on version {stale_version}, but it is now version 2, grade 3, set by ben. "
        "Reload it and apply your change again."
    )
    assert stored(judgment) == before
    assert history_of(query_vaccines, item_cdc_faq) == [(None, 1, 1, "ana"), (1, 3, 2, "ben")]


def test_creating_a_judgment_that_exists_conflicts(
    query_vaccines, item_cdc_faq, reviewer_ana, reviewer_ben
):
    judgment = make_judgment(
        query=query_vaccines, item=item_cdc_faq, grade=2, reviewer=reviewer_ana
    )

    with pytest.raises(JudgmentConflict) as conflict:
        make_judgment(query=query_vaccines, item=item_cdc_faq, grade=0, reviewer=reviewer_ben)

    assert "your edit was based on a new judgment" in str(conflict.value)
    assert "it is now version 1, grade 2, set by ana" in str(conflict.value)
    assert stored(judgment) == {
        "grade": 2,
        "version": 1,
        "reviewer_id": reviewer_ana.pk,
        "note": "",
    }
    assert history_of(query_vaccines, item_cdc_faq) == [(None, 2, 1, "ana")]


def test_conflict_names_an_import_when_nobody_set_the_grade(query_vaccines, item_cdc_faq):
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=2, source=ChangeSource.IMPORT)
    with pytest.raises(JudgmentConflict, match="grade 2, set by an import"):
        make_judgment(query=query_vaccines, item=item_cdc_faq, grade=0)


def test_editing_a_judgment_that_does_not_exist_is_refused(
    query_vaccines, item_cdc_faq, reviewer_ana
):
    with pytest.raises(InvariantError, match="has no judgment for query 'q-vaccines' to edit"):
        record_judgment(
            query=query_vaccines,
            item=item_cdc_faq,
            grade=2,
            reviewer=reviewer_ana,
            expected_version=1,
        )
    assert not Judgment.objects.exists()


# -- judgments against query status ---------------------------------------------------------


@pytest.mark.parametrize(
    ("grade", "allowed"),
    [(0, True), (1, True), (2, False), (3, False)],
    ids=["not-relevant", "related", "relevant", "perfect"],
)
def test_no_answer_query_takes_only_non_relevant_grades(
    query_vaccines, item_forum_post, reviewer_ana, grade, allowed
):
    set_query_status(query=query_vaccines, status=QueryStatus.NO_ANSWER, by=reviewer_ana)
    if allowed:
        make_judgment(
            query=query_vaccines, item=item_forum_post, grade=grade, reviewer=reviewer_ana
        )
        assert Judgment.objects.get().grade == grade
    else:
        with pytest.raises(InvariantError, match="marked 'confirmed no answer'"):
            make_judgment(
                query=query_vaccines, item=item_forum_post, grade=grade, reviewer=reviewer_ana
            )
        assert not Judgment.objects.exists()


def test_no_answer_query_refuses_an_edit_up_to_relevant(
    query_vaccines, item_forum_post, reviewer_ana
):
    judgment = make_judgment(query=query_vaccines, item=item_forum_post, grade=1)
    set_query_status(query=query_vaccines, status=QueryStatus.NO_ANSWER, by=reviewer_ana)
    with pytest.raises(InvariantError, match="set its status to unreviewed first"):
        record_judgment(
            query=query_vaccines,
            item=item_forum_post,
            grade=2,
            reviewer=reviewer_ana,
            expected_version=1,
        )
    assert stored(judgment)["grade"] == 1


@pytest.mark.parametrize("new_grade", [0, 1], ids=["not-relevant", "related"])
def test_only_relevant_judgment_of_a_relevant_query_cannot_be_downgraded(
    vaccines_answered, query_vaccines, item_cdc_faq, reviewer_ben, new_grade
):
    before = stored(vaccines_answered)
    with pytest.raises(InvariantError) as refused:
        record_judgment(
            query=query_vaccines,
            item=item_cdc_faq,
            grade=new_grade,
            reviewer=reviewer_ben,
            expected_version=1,
        )
    assert str(refused.value) == (
        "item 'cdc-mrna-faq' is the only relevant item of query 'q-vaccines', which is marked "
        "'has relevant items'; set the query's status to unreviewed first"
    )
    assert stored(vaccines_answered) == before
    assert history_of(query_vaccines, item_cdc_faq) == [(None, 3, 1, "ana")]
    query_vaccines.refresh_from_db()
    assert query_vaccines.status == QueryStatus.RELEVANT


def test_only_relevant_judgment_may_move_within_the_relevant_grades(
    vaccines_answered, query_vaccines, item_cdc_faq, reviewer_ben
):
    judgment = record_judgment(
        query=query_vaccines, item=item_cdc_faq, grade=2, reviewer=reviewer_ben, expected_version=1
    )
    assert (judgment.grade, judgment.version) == (2, 2)


def test_relevant_judgment_can_be_downgraded_when_another_remains(
    vaccines_answered, query_vaccines, item_cdc_faq, item_who_qa, reviewer_ben
):
    make_judgment(query=query_vaccines, item=item_who_qa, grade=2, reviewer=reviewer_ben)

    judgment = record_judgment(
        query=query_vaccines, item=item_cdc_faq, grade=0, reviewer=reviewer_ben, expected_version=1
    )

    assert (judgment.grade, judgment.version) == (0, 2)
    query_vaccines.refresh_from_db()
    assert query_vaccines.status == QueryStatus.RELEVANT


def test_only_relevant_judgment_of_an_unreviewed_query_can_be_downgraded(
    query_vaccines, item_cdc_faq, reviewer_ana
):
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ana)
    judgment = record_judgment(
        query=query_vaccines, item=item_cdc_faq, grade=0, reviewer=reviewer_ana, expected_version=1
    )
    assert judgment.grade == 0


# -- query status ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grades", "status", "message"),
    [
        ([], QueryStatus.RELEVANT, "has no relevant judgment, so it cannot be marked"),
        ([0, 1], QueryStatus.RELEVANT, "has no relevant judgment, so it cannot be marked"),
        ([2], QueryStatus.NO_ANSWER, "has 1 relevant judgment(s), so it cannot be marked"),
        ([0, 3, 2], QueryStatus.NO_ANSWER, "has 2 relevant judgment(s), so it cannot be marked"),
        ([], "done", "status 'done' must be one of unreviewed, relevant, no_answer"),
    ],
    ids=[
        "relevant-without-judgments",
        "relevant-with-only-non-relevant",
        "no-answer-with-a-relevant-one",
        "no-answer-with-two-relevant-ones",
        "unknown-status",
    ],
)
def test_status_contradicting_the_judgments_is_refused(
    query_vaccines, reviewer_ana, grades, status, message
):
    for grade in grades:
        make_judgment(query=query_vaccines, grade=grade)

    with pytest.raises(InvariantError) as refused:
        set_query_status(query=query_vaccines, status=status, by=reviewer_ana)

    assert message in str(refused.value)
    query_vaccines.refresh_from_db()
    assert query_vaccines.status == QueryStatus.UNREVIEWED
    assert query_vaccines.status_changed_by is None
    assert not QueryStatusChange.objects.exists()


@pytest.mark.parametrize(
    ("grades", "status"),
    [
        ([2], QueryStatus.RELEVANT),
        ([0, 1, 3], QueryStatus.RELEVANT),
        ([], QueryStatus.NO_ANSWER),
        ([0, 1], QueryStatus.NO_ANSWER),
    ],
    ids=["relevant", "relevant-among-others", "no-answer-empty", "no-answer-non-relevant"],
)
def test_status_consistent_with_the_judgments_is_set(query_vaccines, reviewer_ana, grades, status):
    for grade in grades:
        make_judgment(query=query_vaccines, grade=grade)
    before = timezone.now()

    query = set_query_status(
        query=query_vaccines, status=status, by=reviewer_ana, source=ChangeSource.API
    )

    query.refresh_from_db()
    assert (query.status, query.status_changed_by) == (status, reviewer_ana)
    assert query.status_changed_at >= before
    change = QueryStatusChange.objects.get()
    assert (change.old_status, change.new_status) == (QueryStatus.UNREVIEWED, status)
    assert (change.changed_by, change.source) == (reviewer_ana, ChangeSource.API)


def test_every_status_change_is_kept_in_history(
    query_vaccines, item_cdc_faq, reviewer_ana, reviewer_ben
):
    set_query_status(query=query_vaccines, status=QueryStatus.NO_ANSWER, by=reviewer_ana)
    set_query_status(query=query_vaccines, status=QueryStatus.UNREVIEWED, by=reviewer_ben)
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=2, reviewer=reviewer_ben)
    set_query_status(query=query_vaccines, status=QueryStatus.RELEVANT, by=reviewer_ben)
    set_query_status(query=query_vaccines, status=QueryStatus.RELEVANT, by=reviewer_ana)  # no-op

    assert [
        (c.old_status, c.new_status, c.changed_by.username)
        for c in query_vaccines.status_changes.select_related("changed_by")
    ] == [
        ("unreviewed", "no_answer", "ana"),
        ("no_answer", "unreviewed", "ben"),
        ("unreviewed", "relevant", "ben"),
    ]
    query_vaccines.refresh_from_db()
    assert query_vaccines.status_changed_by.username == "ben"  # the no-op changed nothing


def test_relevant_query_can_go_back_to_unreviewed(vaccines_answered, query_vaccines, reviewer_ben):
    set_query_status(query=query_vaccines, status=QueryStatus.UNREVIEWED, by=reviewer_ben)
    query_vaccines.refresh_from_db()
    assert query_vaccines.status == QueryStatus.UNREVIEWED


# -- evidence conditions --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "canonical"),
    [
        ([["b", "a"]], [["a", "b"]]),
        ([["a", "a", "b"]], [["a", "b"]]),
        ([["c"], ["b", "a"]], [["a", "b"], ["c"]]),
        ([["a", "b"], ["b", "a"]], [["a", "b"]]),
        ([["d10"], ["d2"], ["d1", "d9"]], [["d1", "d9"], ["d10"], ["d2"]]),
    ],
    ids=["sorts-a-group", "dedups-a-group", "sorts-groups", "dedups-groups", "string-order"],
)
def test_evidence_is_normalised_to_canonical_dnf(groups, canonical):
    assert normalize_evidence(groups) == canonical


@pytest.mark.parametrize(
    "groups",
    [[], "a AND b", ["a", "b"], [[]], [["a", 7]], [["a", ""]], [("a", "b")]],
    ids=["empty", "a-string", "flat-list", "empty-group", "int-id", "blank-id", "tuple-group"],
)
def test_malformed_evidence_is_refused(groups):
    with pytest.raises(InvariantError):
        normalize_evidence(groups)


def test_evidence_condition_is_stored_canonical_and_replaced(
    query_vaccines, item_cdc_faq, item_who_qa, item_forum_post, reviewer_ana, reviewer_ben
):
    set_evidence_condition(
        query=query_vaccines,
        groups=[["who-vaccines-qa", "cdc-mrna-faq"], ["forum-4411"]],
        by=reviewer_ana,
    )
    condition = EvidenceCondition.objects.get(query=query_vaccines)
    assert condition.groups == [["cdc-mrna-faq", "who-vaccines-qa"], ["forum-4411"]]
    assert condition.updated_by == reviewer_ana

    set_evidence_condition(query=query_vaccines, groups=[["cdc-mrna-faq"]], by=reviewer_ben)
    condition = EvidenceCondition.objects.get(query=query_vaccines)
    assert (condition.groups, condition.updated_by) == ([["cdc-mrna-faq"]], reviewer_ben)

    assert set_evidence_condition(query=query_vaccines, groups=None, by=reviewer_ben) is None
    assert not EvidenceCondition.objects.exists()


def test_evidence_naming_unknown_items_is_refused(
    query_vaccines, item_cdc_faq, collection_binary, reviewer_ana
):
    make_item(collection_binary, external_id="binary-doc")  # known, but elsewhere
    set_evidence_condition(query=query_vaccines, groups=[["cdc-mrna-faq"]], by=reviewer_ana)

    with pytest.raises(InvariantError) as refused:
        set_evidence_condition(
            query=query_vaccines,
            groups=[["cdc-mrna-faq", "nope-2"], ["binary-doc"], ["nope-1"]],
            by=reviewer_ana,
        )

    assert str(refused.value) == (
        "evidence condition of query 'q-vaccines' names unknown item(s) "
        "binary-doc, nope-1, nope-2; import them first"
    )
    assert EvidenceCondition.objects.get().groups == [["cdc-mrna-faq"]]


# -- review tasks ---------------------------------------------------------------------------


# Priority, by hand: 10 000 per source that surfaced the pair, minus its best rank
# (an unranked pair counts as rank 9 999).


def _tasks() -> dict[str, tuple]:
    """item id -> (status, best rank, priority, first source, {source label: rank})."""
    return {
        t.item.external_id: (
            t.status,
            t.best_rank,
            t.priority,
            t.source,
            {s.label: s.rank for s in t.sources.all()},
        )
        for t in ReviewTask.objects.select_related("item").prefetch_related("sources")
    }


def test_queue_unjudged_dedups_keeps_best_rank_and_skips_judged_pairs(
    collection_graded, query_vaccines, item_cdc_faq, item_who_qa, item_forum_post
):
    make_judgment(query=query_vaccines, item=item_forum_post, grade=0)
    q = query_vaccines.pk

    seen, created = queue_unjudged(
        collection=collection_graded,
        pairs=[
            (q, item_cdc_faq.pk, 7),
            (q, item_cdc_faq.pk, 3),
            (q, item_cdc_faq.pk, None),
            (q, item_who_qa.pk, None),
            (q, item_forum_post.pk, 1),  # judged already: never queued
        ],
        source="run bm25",
    )

    assert (seen, created) == (2, 2)
    assert _tasks() == {
        "cdc-mrna-faq": ("pending", 3, 10_000 - 3, "run bm25", {"run bm25": 3}),
        "who-vaccines-qa": ("pending", None, 10_000 - 9_999, "run bm25", {"run bm25": None}),
    }


def test_queue_unjudged_again_keeps_one_task_per_pair(
    collection_graded, query_vaccines, item_cdc_faq, item_who_qa
):
    q = query_vaccines.pk
    queue_unjudged(
        collection=collection_graded,
        pairs=[(q, item_cdc_faq.pk, 9), (q, item_who_qa.pk, None)],
        source="run bm25",
    )

    seen, created = queue_unjudged(
        collection=collection_graded,
        pairs=[(q, item_cdc_faq.pk, 4), (q, item_who_qa.pk, 2)],
        source="run dense",
    )

    assert (seen, created) == (2, 0)
    assert _tasks() == {
        "cdc-mrna-faq": ("pending", 4, 20_000 - 4, "run bm25", {"run bm25": 9, "run dense": 4}),
        "who-vaccines-qa": (
            "pending",
            2,
            20_000 - 2,
            "run bm25",
            {"run bm25": None, "run dense": 2},
        ),
    }


@pytest.mark.parametrize(
    ("source", "rank", "expected"),
    [
        ("run bm25", 12, (4, 20_000 - 4, {"run bm25": 9, "run dense": 4})),
        ("run bm25", 5, (4, 20_000 - 4, {"run bm25": 5, "run dense": 4})),
        ("run bm25", 1, (1, 20_000 - 1, {"run bm25": 1, "run dense": 4})),
        ("run sparse", 6, (4, 30_000 - 4, {"run bm25": 9, "run dense": 4, "run sparse": 6})),
    ],
    ids=[
        "same-source-worse-rank-ignored",
        "same-source-better-rank-kept",
        "new-best-rank",
        "third-source-raises-priority",
    ],
)
def test_queue_unjudged_remembers_each_sources_best_rank(
    collection_graded, query_vaccines, item_cdc_faq, source, rank, expected
):
    pair = (query_vaccines.pk, item_cdc_faq.pk)
    queue_unjudged(collection=collection_graded, pairs=[(*pair, 9)], source="run bm25")
    queue_unjudged(collection=collection_graded, pairs=[(*pair, 4)], source="run dense")

    seen, created = queue_unjudged(
        collection=collection_graded, pairs=[(*pair, rank)], source=source
    )

    assert (seen, created) == (1, 0)
    status, best_rank, priority, first_source, sources = _tasks()["cdc-mrna-faq"]
    assert (status, first_source) == ("pending", "run bm25")
    assert (best_rank, priority, sources) == expected


def test_queue_unjudged_with_no_pairs_does_nothing(collection_graded):
    assert queue_unjudged(collection=collection_graded, pairs=[], source="run bm25") == (0, 0)
    assert not ReviewTask.objects.exists()


def test_recording_a_judgment_completes_the_pairs_task(
    collection_graded, query_vaccines, item_cdc_faq, item_who_qa, reviewer_ana
):
    q = query_vaccines.pk
    queue_unjudged(
        collection=collection_graded,
        pairs=[(q, item_cdc_faq.pk, 1), (q, item_who_qa.pk, 2)],
        source="run bm25",
    )
    ReviewTask.objects.filter(item=item_cdc_faq).update(
        status=TaskStatus.CLAIMED,
        claimed_by=reviewer_ana,
        lease_expires_at=timezone.now() + timedelta(minutes=15),
    )

    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ana)

    done = ReviewTask.objects.get(item=item_cdc_faq)
    assert (done.status, done.claimed_by, done.lease_expires_at) == (TaskStatus.DONE, None, None)
    assert ReviewTask.objects.get(item=item_who_qa).status == TaskStatus.PENDING

    # A later run surfacing the judged pair again does not reopen its task.
    assert queue_unjudged(
        collection=collection_graded, pairs=[(q, item_cdc_faq.pk, 1)], source="run dense"
    ) == (0, 0)
    assert ReviewTask.objects.get(item=item_cdc_faq).status == TaskStatus.DONE


def test_refused_judgment_leaves_the_task_open(
    collection_graded, query_vaccines, item_cdc_faq, reviewer_ana
):
    queue_unjudged(
        collection=collection_graded, pairs=[(query_vaccines.pk, item_cdc_faq.pk, 1)], source="x"
    )
    with pytest.raises(InvariantError):
        make_judgment(query=query_vaccines, item=item_cdc_faq, grade=9, reviewer=reviewer_ana)
    assert ReviewTask.objects.get().status == TaskStatus.PENDING


# -- selectors ------------------------------------------------------------------------------


def test_collections_with_progress_counts_queries_by_status(collection_graded, collection_binary):
    for external_id in ["q1", "q2"]:
        make_query(collection_graded, external_id=external_id)
    answered = make_query(collection_graded, external_id="q3")
    for grade in [3, 2, 0]:  # several judgments must not inflate the query counts
        make_judgment(query=answered, grade=grade)
    set_query_status(query=answered, status=QueryStatus.RELEVANT, by=None)
    empty = make_query(collection_graded, external_id="q4")
    set_query_status(query=empty, status=QueryStatus.NO_ANSWER, by=None)

    counts = {
        c.slug: (c.n_queries, c.n_unreviewed, c.n_relevant, c.n_no_answer)
        for c in collections_with_progress()
    }

    assert counts == {"health-binary": (0, 0, 0, 0), "health-graded": (4, 2, 1, 1)}


def test_unjudged_items_for_lists_open_tasks_of_the_collection_only(
    collection_graded, collection_binary, query_vaccines, item_cdc_faq, item_who_qa
):
    q = query_vaccines.pk
    queue_unjudged(
        collection=collection_graded,
        pairs=[(q, item_cdc_faq.pk, 2), (q, item_who_qa.pk, 1)],
        source="run bm25",
    )
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=1)

    assert [t.item.external_id for t in unjudged_items_for(collection_graded)] == [
        "who-vaccines-qa"
    ]
    assert not unjudged_items_for(collection_binary).exists()


def test_judgments_of_reads_reviewers_and_items_in_one_query(
    collection_graded, collection_binary, query_vaccines, reviewer_ana, django_assert_num_queries
):
    for grade in [0, 2, 3]:
        make_judgment(query=query_vaccines, grade=grade, reviewer=reviewer_ana)
    make_judgment(query=make_query(collection_binary), grade=1)

    with django_assert_num_queries(1):
        rows = [
            (j.query.external_id, j.reviewer.username, j.grade)
            for j in judgments_of(collection_graded)
        ]

    assert sorted(rows) == [
        ("q-vaccines", "ana", 0),
        ("q-vaccines", "ana", 2),
        ("q-vaccines", "ana", 3),
    ]


def test_queries_of_brings_the_evidence_condition_along(
    query_vaccines, item_cdc_faq, collection_graded, django_assert_num_queries
):
    set_evidence_condition(query=query_vaccines, groups=[["cdc-mrna-faq"]], by=None)
    with django_assert_num_queries(1):
        assert [q.evidence.groups for q in queries_of(collection_graded)] == [[["cdc-mrna-faq"]]]


# -- creates at most once per client key, and judging a task -----------------------------------


def test_a_create_with_a_client_key_happens_once(query_vaccines, item_cdc_faq, item_who_qa):
    first, created = record_judgment_once(
        query=query_vaccines, item=item_cdc_faq, grade=2, reviewer=None, client_key="k-1",
        note="first send",
    )  # fmt: skip
    again, created_again = record_judgment_once(
        query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=None, client_key="k-1"
    )

    assert created and not created_again and again.pk == first.pk
    assert (first.client_key, again.client_key) == ("k-1", "k-1")
    stored = Judgment.objects.get(pk=first.pk)
    assert (stored.grade, stored.note, stored.version, stored.client_key) == (
        2, "first send", 1, "k-1",
    )  # fmt: skip
    assert JudgmentChange.objects.filter(query=query_vaccines).count() == 1
    with pytest.raises(InvariantError) as refused:
        record_judgment_once(
            query=query_vaccines, item=item_who_qa, grade=1, reviewer=None, client_key="k-1"
        )
    assert str(refused.value) == (
        "the client key 'k-1' was already used for another judgment; send a new key (e.g. a "
        "UUID) with each new judgment"
    )
    plain, created = record_judgment_once(
        query=query_vaccines, item=item_who_qa, grade=0, reviewer=None, client_key=None
    )
    assert created and plain.client_key is None and plain.version == 1 and plain.note == ""
    assert JudgmentChange.objects.get(query=query_vaccines, item=item_who_qa).source == "api"


def test_judging_a_task_completes_it_and_respects_the_lease(
    collection_graded, query_vaccines, item_cdc_faq, reviewer_ana, reviewer_ben
):
    queue_unjudged(
        collection=collection_graded,
        pairs=[(query_vaccines.pk, item_cdc_faq.pk, 1)],
        source="run bm25",
    )
    task = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)

    with pytest.raises(InvariantError) as refused:
        judge_task(task=task, reviewer=reviewer_ben, grade=1)
    judgment, created = judge_task(task=task, reviewer=reviewer_ana, grade=3, note="clear",
                                   client_key="t-1")  # fmt: skip
    retry, created_again = judge_task(task=task, reviewer=reviewer_ana, grade=3, client_key="t-1")

    until = f"{task.lease_expires_at:%H:%M:%S}"
    assert str(refused.value) == (
        f"this task is claimed by ana until {until} UTC; claim another one, or wait for the "
        "lease to expire"
    )
    assert created and not created_again and retry.pk == judgment.pk
    assert (judgment.grade, judgment.note, judgment.reviewer) == (3, "clear", reviewer_ana)
    task.refresh_from_db()
    assert (task.status, task.claimed_by, task.lease_expires_at) == (TaskStatus.DONE, None, None)
    # Once the lease has lapsed, another reviewer may judge a claimed task's pair.
    other = make_item(collection_graded)
    queue_unjudged(
        collection=collection_graded, pairs=[(query_vaccines.pk, other.pk, 2)], source="run"
    )
    lapsed = claim_next_task(
        reviewer=reviewer_ana, collection=collection_graded, lease=timedelta(seconds=-1)
    )
    judged, created = judge_task(task=lapsed, reviewer=reviewer_ben, grade=0)
    assert created and judged.reviewer == reviewer_ben and judged.item == other


def test_other_queries_and_non_relevant_judgments_do_not_count_as_another_relevant_item(
    vaccines_answered, collection_graded, query_vaccines, item_cdc_faq, item_who_qa, reviewer_ben
):
    # Another query's relevant judgment of the same item, and a "related" (1 < 2) judgment
    # of this query: neither keeps q-vaccines relevant, so the downgrade is refused.
    other = make_query(collection_graded, external_id="q-other")
    make_judgment(query=other, item=item_who_qa, grade=3, reviewer=reviewer_ben)
    make_judgment(query=query_vaccines, item=item_who_qa, grade=1, reviewer=reviewer_ben)

    with pytest.raises(InvariantError, match="is the only relevant item of query 'q-vaccines'"):
        record_judgment(query=query_vaccines, item=item_cdc_faq, grade=0, reviewer=reviewer_ben,
                        expected_version=1)  # fmt: skip


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([], "an evidence condition is a non-empty list of AND-groups of item ids"),
        ("a", "an evidence condition is a non-empty list of AND-groups of item ids"),
        ([["a"], []], "evidence group [] must be a non-empty list of item ids"),
        ([["a", 2]], "evidence group ['a', 2] must hold item ids as strings"),
    ],
)
def test_bad_evidence_conditions_say_what_they_must_be(groups, message):
    with pytest.raises(InvariantError) as refused:
        normalize_evidence(groups)
    assert str(refused.value) == message


# -- removing a judgment (the undo of its creation) --------------------------------------------


def test_remove_judgment_deletes_it_records_history_and_reopens_its_task(
    collection_graded, query_vaccines, item_cdc_faq, item_who_qa, reviewer_ana, reviewer_ben
):
    q = query_vaccines.pk
    queue_unjudged(
        collection=collection_graded,
        pairs=[(q, item_cdc_faq.pk, 1), (q, item_who_qa.pk, 2)],
        source="run bm25",
    )
    judgment = make_judgment(
        query=query_vaccines, item=item_cdc_faq, grade=1, reviewer=reviewer_ana
    )
    make_judgment(query=query_vaccines, item=item_who_qa, grade=0, reviewer=reviewer_ana)
    assert set(ReviewTask.objects.values_list("status", flat=True)) == {TaskStatus.DONE}

    remove_judgment(
        query=query_vaccines,
        item=item_cdc_faq,
        reviewer=reviewer_ben,
        expected_version=judgment.version,
        source=ChangeSource.API,
    )

    assert not Judgment.objects.filter(query=query_vaccines, item=item_cdc_faq).exists()
    assert history_of(query_vaccines, item_cdc_faq) == [(None, 1, 1, "ana"), (1, None, 2, "ben")]
    change = JudgmentChange.objects.filter(item=item_cdc_faq).latest("pk")
    assert (change.old_note, change.new_note, change.source) == ("", "", ChangeSource.API)
    # The pair goes back to the queue; the other pair's task stays done.
    tasks = dict(ReviewTask.objects.values_list("item__external_id", "status"))
    assert tasks == {"cdc-mrna-faq": TaskStatus.PENDING, "who-vaccines-qa": TaskStatus.DONE}


def test_remove_judgment_with_a_stale_version_changes_nothing(
    query_vaccines, item_cdc_faq, reviewer_ana
):
    judgment = make_judgment(
        query=query_vaccines, item=item_cdc_faq, grade=1, reviewer=reviewer_ana
    )
    before = stored(judgment)

    with pytest.raises(JudgmentConflict) as conflict:
        remove_judgment(
            query=query_vaccines, item=item_cdc_faq, reviewer=reviewer_ana, expected_version=2
        )

    assert conflict.value.current.version == 1
    assert stored(judgment) == before
    assert history_of(query_vaccines, item_cdc_faq) == [(None, 1, 1, "ana")]


def test_remove_judgment_of_an_unjudged_pair_is_refused(query_vaccines, item_cdc_faq):
    with pytest.raises(InvariantError) as refused:
        remove_judgment(query=query_vaccines, item=item_cdc_faq, reviewer=None, expected_version=1)

    assert str(refused.value) == (
        f"item 'cdc-mrna-faq' has no judgment for query '{query_vaccines.external_id}'"
    )
    assert not JudgmentChange.objects.exists()


def test_remove_judgment_keeps_a_relevant_querys_last_relevant_judgment(
    query_vaccines, item_cdc_faq, item_who_qa, reviewer_ana
):
    relevant = make_judgment(
        query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ana
    )
    other = make_judgment(query=query_vaccines, item=item_who_qa, grade=0, reviewer=reviewer_ana)
    set_query_status(query=query_vaccines, status=QueryStatus.RELEVANT, by=reviewer_ana)

    with pytest.raises(InvariantError) as refused:
        remove_judgment(
            query=query_vaccines, item=item_cdc_faq, reviewer=reviewer_ana, expected_version=1
        )
    assert "is the only relevant item of query" in str(refused.value)
    assert stored(relevant)["grade"] == 3

    # A non-relevant judgment of the same query may go.
    remove_judgment(
        query=query_vaccines, item=item_who_qa, reviewer=reviewer_ana, expected_version=1
    )
    assert not Judgment.objects.filter(pk=other.pk).exists()
    assert Judgment.objects.filter(pk=relevant.pk).exists()
