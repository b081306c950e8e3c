"""Query-at-a-time review: the queue stays on a query until none of its items is open,
stops there to settle the query's status with one key, can be scoped to one query or one
tag, and a bulk action settles many queries with a preview. Expected orders and counts
are worked out by hand from the fixture below.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from judgments.models import (
    ChangeSource,
    Judgment,
    QueryStatus,
    QueryStatusChange,
    ReviewTask,
    TaskStatus,
)
from judgments.selectors import status_change_plan
from judgments.services import (
    InvariantError,
    claim_next_task,
    queue_unjudged,
    record_judgment,
    set_membership,
    set_query_statuses,
    skip_task,
)
from tests.factories import make_item, make_judgment, make_query

pytestmark = pytest.mark.django_db
JSON = {"HTTP_ACCEPT": "application/json"}


@pytest.fixture
def two_queries(collection_graded):
    """q-a (tag "vpn") and q-b (tag "mail"), three items each, queued with interleaved
    priorities, so that a queue ordered by priority alone would jump between them:

    ======  ==========  ====  ==========================
    query   item        rank  priority (1 source)
    ======  ==========  ====  ==========================
    q-a     a1          1     10 000 - 1 = 9 999  (1st)
    q-b     b1          2     9 998
    q-a     a2          3     9 997
    q-b     b2          4     9 996
    q-a     a3          5     9 995
    q-b     b3          6     9 994
    ======  ==========  ====  ==========================
    """
    qa = make_query(collection_graded, external_id="q-a", text="vpn idle", tags=["vpn"])
    qb = make_query(collection_graded, external_id="q-b", text="mail quota", tags=["mail"])
    pairs = []
    for rank, (query, name) in enumerate(
        [(qa, "a1"), (qb, "b1"), (qa, "a2"), (qb, "b2"), (qa, "a3"), (qb, "b3")], start=1
    ):
        item = make_item(collection_graded, external_id=name, text=f"text of {name}")
        pairs.append((query.pk, item.pk, rank))
    queue_unjudged(collection=collection_graded, pairs=pairs, source="run bm25")
    return qa, qb


def judge(task, reviewer, grade=0):
    return record_judgment(
        query=task.query, item=task.item, grade=grade, reviewer=reviewer, expected_version=None
    )


def drain(collection, reviewer, **scope: Any) -> list[str]:
    """Claim and judge until the scope is empty, staying on the current query."""
    seen, current = [], None
    while (
        task := claim_next_task(
            reviewer=reviewer, collection=collection, current_query_id=current, **scope
        )
    ) is not None:
        seen.append(task.item.external_id)
        judge(task, reviewer)
        current = task.query_id
    return seen


# -- the service ----------------------------------------------------------------------------


def test_next_query_finishes_a_query_before_the_next(collection_graded, two_queries, reviewer_ana):
    # q-a holds the top task, so it comes first, whole; then q-b.
    assert drain(collection_graded, reviewer_ana) == ["a1", "a2", "a3", "b1", "b2", "b3"]


def test_without_a_current_query_the_queue_is_served_by_priority(
    collection_graded, two_queries, reviewer_ana
):
    first = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)
    judge(first, reviewer_ana)
    second = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)
    assert (first.item.external_id, second.item.external_id) == ("a1", "b1")


def test_scoped_to_one_query_or_one_tag(collection_graded, two_queries, reviewer_ana, reviewer_ben):
    _, qb = two_queries
    assert drain(collection_graded, reviewer_ana, query=qb) == ["b1", "b2", "b3"]
    assert drain(collection_graded, reviewer_ben, tag="mail") == []
    assert drain(collection_graded, reviewer_ben, tag="vpn") == ["a1", "a2", "a3"]


def test_a_held_task_outside_the_scope_is_released(collection_graded, two_queries, reviewer_ana):
    qa, qb = two_queries
    held = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)
    assert held.item.external_id == "a1"
    # The same scope gives the held task back; another scope releases it first.
    again = claim_next_task(reviewer=reviewer_ana, collection=collection_graded, query=qa)
    assert again.pk == held.pk
    other = claim_next_task(reviewer=reviewer_ana, collection=collection_graded, query=qb)
    assert other.item.external_id == "b1"
    released = ReviewTask.objects.get(pk=held.pk)
    assert (released.status, released.claimed_by) == (TaskStatus.PENDING, None)


def test_skipped_items_of_the_current_query_are_not_offered_again(
    collection_graded, two_queries, reviewer_ana
):
    task = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)
    skip_task(task=task, reviewer=reviewer_ana)
    nxt = claim_next_task(
        reviewer=reviewer_ana, collection=collection_graded, current_query_id=task.query_id
    )
    assert (task.item.external_id, nxt.item.external_id) == ("a1", "a2")


def test_a_second_reviewer_starts_the_query_nobody_holds(
    collection_graded, two_queries, reviewer_ana, reviewer_ben
):
    ana = claim_next_task(reviewer=reviewer_ana, collection=collection_graded)
    ben = claim_next_task(reviewer=reviewer_ben, collection=collection_graded)
    assert (ana.item.external_id, ben.item.external_id) == ("a1", "b1")


# -- bulk status ----------------------------------------------------------------------------


@pytest.fixture
def three_statuses(collection_graded, reviewer_ben):
    """q-rel has a relevant judgment (grade 2), q-non only a grade 0, q-none no judgment;
    q-done is 'relevant' already."""
    queries = {}
    for qid in ("q-rel", "q-non", "q-none", "q-done"):
        queries[qid] = make_query(collection_graded, external_id=qid)
    for qid, grade in (("q-rel", 2), ("q-non", 0), ("q-done", 3)):
        item = make_item(collection_graded, external_id=f"i-{qid}")
        make_judgment(query=queries[qid], item=item, grade=grade, reviewer=reviewer_ben)
    from judgments.services import set_query_status

    set_query_status(query=queries["q-done"], status=QueryStatus.RELEVANT, by=reviewer_ben)
    return queries


def test_bulk_relevant_changes_what_the_rule_allows_and_says_why_not(
    collection_graded, three_statuses, reviewer_ana
):
    preview = status_change_plan(collection_graded, QueryStatus.RELEVANT)
    assert (preview.change, preview.unchanged) == (["q-rel"], ["q-done"])
    assert [q for q, _ in preview.refused] == ["q-non", "q-none"]
    assert "has no relevant judgment" in preview.refused[0][1]

    done = set_query_statuses(
        collection=collection_graded,
        query_ids=["q-rel", "q-non", "q-none", "q-done", "q-nowhere"],
        status=QueryStatus.RELEVANT,
        by=reviewer_ana,
    )
    assert (done.change, done.unchanged) == (preview.change, preview.unchanged)
    assert [q for q, _ in done.refused] == ["q-non", "q-none", "q-nowhere"]
    statuses = dict(collection_graded.queries.values_list("external_id", "status"))
    assert statuses == {
        "q-rel": "relevant",
        "q-non": "unreviewed",
        "q-none": "unreviewed",
        "q-done": "relevant",
    }
    history = list(
        QueryStatusChange.objects.filter(changed_by=reviewer_ana).values_list(
            "query__external_id", "old_status", "new_status", "source"
        )
    )
    assert history == [("q-rel", "unreviewed", "relevant", ChangeSource.UI)]


def test_bulk_no_answer_refuses_queries_with_relevant_items(
    collection_graded, three_statuses, reviewer_ana
):
    done = set_query_statuses(
        collection=collection_graded,
        query_ids=["q-rel", "q-non", "q-none", "q-done"],
        status=QueryStatus.NO_ANSWER,
        by=reviewer_ana,
    )
    # q-none has nothing judged: confirming "no answer" for it is not a bulk action
    assert done.change == ["q-non"]
    assert [q for q, _ in done.refused] == ["q-done", "q-none", "q-rel"]
    assert dict(done.refused)["q-none"] == (
        "query 'q-none' has nothing judged yet; confirm it has no answer on its own query "
        "page, after searching the collection"
    )
    with pytest.raises(InvariantError):
        set_query_statuses(
            collection=collection_graded, query_ids=["q-rel"], status="bogus", by=reviewer_ana
        )


def test_bulk_no_answer_refuses_a_query_with_items_still_queued_and_the_preview_says_so(
    client, collection_graded, three_statuses, reviewer_ana
):
    """Issue 24 item 2: on main a query with nothing judged and items queued was offered
    "confirmed no answer" in bulk; the queue offers it only after every item is judged."""
    set_membership(collection=collection_graded, user=reviewer_ana, role="reviewer")
    q_non = three_statuses["q-non"]
    for name in ("queued-1", "queued-2"):
        item = make_item(collection_graded, external_id=name)
        queue_unjudged(collection=collection_graded, pairs=[(q_non.pk, item.pk, 1)], source="run")
    client.force_login(reviewer_ana)

    preview = client.get(
        url("collection", collection_graded, "?status=unreviewed&bulk=no_answer")
    ).content.decode()
    applied = client.post(
        url("bulk-status", collection_graded),
        {"new_status": "no_answer", "status": "unreviewed", "tag": ""},
    )

    assert "<strong>0 queries</strong> would change" in preview
    assert "query &#x27;q-non&#x27; still has 2 items queued for review" in preview
    assert "query &#x27;q-none&#x27; has nothing judged yet" in preview
    assert "Apply to" not in preview
    assert applied.status_code == 302
    statuses = dict(collection_graded.queries.values_list("external_id", "status"))
    assert statuses["q-non"] == statuses["q-none"] == "unreviewed"


# -- the pages ------------------------------------------------------------------------------


@pytest.fixture
def ana_client(settings, reviewer_ana, collection_graded) -> Client:
    set_membership(collection=collection_graded, user=reviewer_ana, role="reviewer")
    client = Client()
    client.force_login(reviewer_ana)
    return client


def url(name: str, collection, query: str = "") -> str:
    return reverse(f"judgments:{name}", args=[collection.slug]) + query


def query_url(collection, query: str) -> str:
    return reverse("judgments:query", args=[collection.slug, query])


def test_the_queue_stops_on_a_finished_query_and_settles_it_with_one_key(
    ana_client, reviewer_ana, collection_graded, two_queries
):
    qa, _ = two_queries
    data = ana_client.post(url("review-claim", collection_graded), **JSON).json()
    served = []
    for grade in (2, 0, 0):
        served.append(data["task"]["item"])
        data = ana_client.post(
            url("review-judge", collection_graded),
            {"task": data["task"]["id"], "grade": grade},
            **JSON,
        ).json()
    assert served == ["a1", "a2", "a3"]
    assert data["task"] is None
    assert data["finished"] == {"query": "q-a", "status": "unreviewed", "suggested": "relevant"}
    assert 'data-key="y"' in data["html"] and "has relevant items" in data["html"]
    assert 'data-key="l"' in data["html"]
    assert not ReviewTask.objects.filter(status=TaskStatus.CLAIMED).exists()  # nothing held

    settled = ana_client.post(
        url("review-settle", collection_graded), {"query": "q-a", "status": "relevant"}, **JSON
    ).json()
    assert settled["settled"] == {"query": "q-a", "status": "relevant"}
    assert settled["task"]["query"] == "q-b"
    qa.refresh_from_db()
    assert qa.status == QueryStatus.RELEVANT
    change = QueryStatusChange.objects.get(query=qa)
    assert (change.old_status, change.new_status, change.changed_by, change.source) == (
        "unreviewed",
        "relevant",
        reviewer_ana,
        ChangeSource.UI,
    )


def test_a_query_judged_all_non_relevant_proposes_no_answer(
    ana_client, collection_graded, two_queries
):
    data = ana_client.post(url("review-claim", collection_graded, "?query=q-b"), **JSON).json()
    while data["task"] is not None:
        data = ana_client.post(
            url("review-judge", collection_graded, "?query=q-b"),
            {"task": data["task"]["id"], "grade": 0},
            **JSON,
        ).json()
    assert data["finished"]["suggested"] == "no_answer"
    assert "confirmed no answer" in data["html"]
    # "Leave it unreviewed" claims the next task by POST (no GET writes), in the same scope.
    assert 'action="/c/health-graded/review/claim/?query=q-b"' in data["html"]
    refused = ana_client.post(
        url("review-settle", collection_graded), {"query": "q-b", "status": "relevant"}, **JSON
    )
    assert refused.status_code == 400
    assert "has no relevant judgment" in refused.json()["error"]
    assert refused.json()["finished"]["query"] == "q-b"  # the choice is offered again


def test_the_bulk_action_previews_then_applies(
    ana_client, reviewer_ana, collection_graded, three_statuses
):
    page = ana_client.get(url("collection", collection_graded, "?status=unreviewed&bulk=relevant"))
    html = page.content.decode()
    assert "<strong>1 query</strong> would change" in html
    assert "<strong>2</strong> would be refused" in html
    assert "Apply to 1 query" in html
    assert (
        QueryStatusChange.objects.filter(changed_by=reviewer_ana).count() == 0
    )  # GET writes nothing

    applied = ana_client.post(
        url("bulk-status", collection_graded),
        {"new_status": "relevant", "status": "unreviewed", "tag": ""},
    )
    assert applied.status_code == 302
    assert applied["Location"] == "/c/health-graded/?status=unreviewed"
    follow = ana_client.get(applied["Location"]).content.decode()
    assert (
        "1 query set to &#x27;reviewed: has relevant items&#x27;; 0 had it already; 2 refused"
        in follow
    )
    assert (
        dict(collection_graded.queries.values_list("external_id", "status"))["q-rel"] == "relevant"
    )


def test_back_repeating_ones_own_grade_is_already_saved_and_a_change_is_never_someone_else(
    ana_client, reviewer_ana, collection_graded, two_queries
):
    first = ana_client.post(url("review-claim", collection_graded), **JSON).json()["task"]
    ana_client.post(
        url("review-judge", collection_graded), {"task": first["id"], "grade": 2}, **JSON
    )
    # The page restored by Back shows a1 again; the same key again is harmless.
    again = ana_client.post(
        url("review-judge", collection_graded), {"task": first["id"], "grade": 2}, **JSON
    )
    assert again.status_code == 200
    assert again.json()["message"].startswith("Already saved: 2 relevant for item 'a1'")
    assert again.json()["task"]["item"] == "a2"  # the lease held on a2 is handed back
    # Another grade from that stale page is refused, and says whose grade is newer.
    other = ana_client.post(
        url("review-judge", collection_graded), {"task": first["id"], "grade": 0}, **JSON
    )
    assert other.status_code == 409
    body = other.json()
    assert "you saved another grade for this item already" in body["error"]
    assert "someone else" not in body["error"]
    assert "You judged this item already" in body["html"]
    judgment = Judgment.objects.get(item__external_id="a1")
    assert (judgment.grade, judgment.version, judgment.reviewer) == (2, 1, reviewer_ana)
    assert ana_client.session[f"verity.review.{collection_graded.pk}"]["judged"] == 1


def test_search_from_the_query_page_and_judging_a_hit_records_source_search(
    ana_client, reviewer_ana, collection_graded, two_queries, run_command, write_file
):
    # Items imported through the service are indexed (FTS5 on SQLite, GIN on PostgreSQL).
    items = write_file(
        "items.jsonl",
        '{"type": "item", "id": "kb-17", "title": "Idle timeout", '
        '"text": "The VPN disconnects a session after 30 minutes idle."}\n'
        '{"type": "item", "id": "kb-18", "title": "Printers", "text": "Printer queues."}\n',
    )
    run_command("import_collection", "--collection", collection_graded.slug, "--items", items)
    page = ana_client.get(query_url(collection_graded, "q-a") + "?search=idle+sessions")
    assert page.status_code == 200
    hits = page.context["hits"]
    assert [h["hit"].item.external_id for h in hits] == ["kb-17"]
    assert hits[0]["hit"].state == "unjudged"
    assert "not surfaced by any run" in page.content.decode()

    saved = ana_client.post(
        query_url(collection_graded, "q-a"),
        {
            "action": "grade",
            "item": "kb-17",
            "grade": 3,
            "source": "search",
            "search": "idle sessions",
        },
    )
    assert saved.status_code == 302
    assert saved["Location"].endswith(f"?search=idle+sessions#hit-{hits[0]['hit'].item.pk}")
    judgment = Judgment.objects.get(item__external_id="kb-17")
    change = judgment.query.judgment_changes.get(item=judgment.item)
    assert (change.new_grade, change.source, change.changed_by) == (
        3,
        ChangeSource.SEARCH,
        reviewer_ana,
    )
    again = ana_client.get(saved["Location"].split("#")[0])
    (hit,) = again.context["hits"]
    assert hit["hit"].state == "judged" and hit["label"] == "3 perfect"


def test_search_finds_an_item_by_id_and_a_queued_one_says_so(
    ana_client, collection_graded, two_queries
):
    page = ana_client.get(query_url(collection_graded, "q-a") + "?search=a2")
    (hit,) = page.context["hits"]
    assert (hit["hit"].item.external_id, hit["hit"].id_match, hit["hit"].state) == (
        "a2",
        True,
        "queued",
    )


def test_placeholder_fill_in_is_searchable(collection_graded, two_queries, run_command, write_file):
    from judgments.selectors import search_items

    qa, _ = two_queries
    item = make_item(collection_graded, external_id="ph-1", placeholder=True)
    assert search_items(collection_graded, "quarantine") == []
    filled = write_file(
        "items.jsonl",
        '{"type": "item", "id": "ph-1", "text": "Quarantine rules for lost laptops."}\n',
    )
    run_command("import_collection", "--collection", collection_graded.slug, "--items", filled)
    found = search_items(collection_graded, "quarantine laptop", query=qa)
    assert [h.item.pk for h in found] == [item.pk]
