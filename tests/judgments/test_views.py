"""The reviewer's pages through Django's test client: access, counts, the queue's JSON
endpoints (claim, judge, skip, undo), the query page's forms, conflicts and CSRF.

Every test asserts the database as well as the page: a label must never be lost or
silently overwritten, whatever the page says.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from judgments.highlight import highlight, query_terms
from judgments.models import (
    ChangeSource,
    EvidenceCondition,
    Judgment,
    JudgmentChange,
    QueryStatus,
    QueryStatusChange,
    ReviewTask,
    TaskSkip,
    TaskStatus,
)
from judgments.services import queue_unjudged, record_judgment, set_membership
from tests.factories import make_collection, make_item, make_judgment, make_query, make_user

JSON = {"HTTP_ACCEPT": "application/json"}


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture
def fast_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def client_for(user: Any, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


@pytest.fixture
def ana_client(fast_hashing, reviewer_ana, collection_graded) -> Client:
    set_membership(collection=collection_graded, user=reviewer_ana, role="reviewer")
    return client_for(reviewer_ana)


@pytest.fixture
def ben_member(reviewer_ben, collection_graded):
    set_membership(collection=collection_graded, user=reviewer_ben, role="reviewer")
    return reviewer_ben


def queue(collection, pairs, source="run bm25"):
    """Queue (query, item, rank) triples as review tasks, as a run upload would."""
    queue_unjudged(
        collection=collection, pairs=[(q.pk, i.pk, r) for q, i, r in pairs], source=source
    )


@pytest.fixture
def queued(collection_graded, query_vaccines, item_cdc_faq, item_who_qa, item_forum_post):
    """Three open tasks for q-vaccines: the CDC FAQ (rank 1) is served first."""
    queue(
        collection_graded,
        [
            (query_vaccines, item_cdc_faq, 1),
            (query_vaccines, item_who_qa, 3),
            (query_vaccines, item_forum_post, 7),
        ],
    )
    return collection_graded


def url(name: str, collection, *args: str) -> str:
    return reverse(f"judgments:{name}", args=[collection.slug, *args])


def task_of(query, item) -> ReviewTask:
    return ReviewTask.objects.get(query=query, item=item)


# -- access ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_anonymous_is_sent_to_the_login_page(collection_graded, query_vaccines):
    client = Client()
    for target in (
        reverse("judgments:home"),
        url("collection", collection_graded),
        url("review", collection_graded),
        url("query", collection_graded, query_vaccines.external_id),
    ):
        response = client.get(target)
        assert response.status_code == 302, target
        assert response["Location"].startswith("/accounts/login/?next="), target


@pytest.mark.django_db
def test_anonymous_script_gets_401_json_and_nothing_is_saved(queued, query_vaccines, item_who_qa):
    task = task_of(query_vaccines, item_who_qa)
    response = Client().post(url("review-judge", queued), {"task": task.pk, "grade": 2}, **JSON)
    assert response.status_code == 401
    assert "logged out" in response.json()["error"]
    assert not Judgment.objects.exists()


def test_non_member_gets_404_everywhere(fast_hashing, queued, query_vaccines, item_who_qa):
    stranger = client_for(make_user("stranger"))
    task = task_of(query_vaccines, item_who_qa)
    for target in (
        url("collection", queued),
        url("review", queued),
        url("query", queued, query_vaccines.external_id),
    ):
        assert stranger.get(target).status_code == 404, target
    response = stranger.post(url("review-judge", queued), {"task": task.pk, "grade": 2})
    assert response.status_code == 404
    response = stranger.post(
        url("query", queued, query_vaccines.external_id),
        {"action": "status", "status": "no_answer"},
    )
    assert response.status_code == 404
    assert not Judgment.objects.exists()
    assert not ReviewTask.objects.filter(status=TaskStatus.CLAIMED).exists()


def test_home_shows_only_my_collections_with_their_progress(
    ana_client, reviewer_ana, reviewer_ben, queued, query_vaccines, item_cdc_faq
):
    other = make_collection(slug="secret-corpus", name="Secret corpus")
    make_query(other, external_id="s1")
    answered = make_query(queued, external_id="q-answered")
    make_judgment(query=answered, grade=3, reviewer=reviewer_ben)
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=0, reviewer=reviewer_ben)
    from judgments.services import claim_next_task, set_query_status

    set_query_status(query=answered, status=QueryStatus.RELEVANT, by=reviewer_ben)
    make_query(queued, external_id="q-none", status=QueryStatus.UNREVIEWED)
    claim_next_task(reviewer=reviewer_ben, collection=queued)

    response = ana_client.get(reverse("judgments:home"))
    assert response.status_code == 200
    assert b"Secret corpus" not in response.content
    ((collection, progress),) = response.context["rows"]
    assert collection == queued
    assert (progress.unreviewed, progress.relevant, progress.no_answer) == (2, 1, 0)
    assert progress.judged == 2
    assert progress.open_tasks == 2  # the CDC FAQ's task is done by its judgment
    assert progress.claimed_now == 1


def test_superuser_sees_every_collection(fast_hashing, collection_graded, collection_binary):
    admin = make_user("root", is_superuser=True, is_staff=True)
    response = client_for(admin).get(reverse("judgments:home"))
    slugs = [c.slug for c, _ in response.context["rows"]]
    assert slugs == ["health-graded", "health-binary"]  # by name


# -- the collection page --------------------------------------------------------------------


def test_collection_lists_queries_with_counts_and_filters(
    ana_client, reviewer_ben, queued, query_vaccines, item_cdc_faq
):
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ben)
    other = make_query(queued, external_id="q-flu", text="flu shots", tags=["health"])
    no_answer = make_query(queued, external_id="q-mars", text="life on mars", tags=["space"])
    from judgments.services import set_query_status

    set_query_status(query=no_answer, status=QueryStatus.NO_ANSWER, by=reviewer_ben)

    page = ana_client.get(url("collection", queued))
    assert page.status_code == 200
    rows = {q.external_id: q for q in page.context["page"].object_list}
    assert set(rows) == {"q-vaccines", "q-flu", "q-mars"}
    vaccines = rows["q-vaccines"]
    assert (vaccines.n_judged, vaccines.n_relevant, vaccines.n_open) == (1, 1, 2)
    assert (rows["q-flu"].n_judged, rows["q-flu"].n_open) == (0, 0)
    assert page.context["tags"] == ["health", "myths", "space"]
    assert b"Do mRNA vaccines change a person&#x27;s DNA?" in page.content

    by_status = ana_client.get(url("collection", queued), {"status": "no_answer"})
    assert [q.external_id for q in by_status.context["page"].object_list] == ["q-mars"]
    by_tag = ana_client.get(url("collection", queued), {"tag": "health"})
    assert [q.external_id for q in by_tag.context["page"].object_list] == ["q-flu", "q-vaccines"]
    both = ana_client.get(url("collection", queued), {"tag": "health", "status": "unreviewed"})
    assert [q.external_id for q in both.context["page"].object_list] == ["q-flu", "q-vaccines"]
    assert other.status == QueryStatus.UNREVIEWED
    bogus = ana_client.get(url("collection", queued), {"status": "nonsense"})
    assert bogus.context["page"].paginator.count == 3  # an unknown status filters nothing


def test_collection_paginates_and_keeps_the_filters(ana_client, collection_graded):
    for n in range(55):
        make_query(collection_graded, external_id=f"q{n:03d}", tags=["bulk"])
    first = ana_client.get(url("collection", collection_graded), {"tag": "bulk"})
    assert len(first.context["page"].object_list) == 50
    assert b"tag=bulk&amp;page=2" in first.content
    second = ana_client.get(url("collection", collection_graded), {"tag": "bulk", "page": 2})
    assert [q.external_id for q in second.context["page"].object_list] == [
        f"q{n:03d}" for n in range(50, 55)
    ]


# -- the queue ------------------------------------------------------------------------------


def test_queue_page_claims_nothing_and_offers_the_claim_button(
    ana_client, reviewer_ana, queued, query_vaccines, item_cdc_faq
):
    before = list(ReviewTask.objects.order_by("pk").values())
    for scope in ("", "?query=q-vaccines", "?tag=health"):
        response = ana_client.get(url("review", queued) + scope)
        assert response.status_code == 200 and response.context["task"] is None
        html = response.content.decode()
        # The button claims by POST, in the page's scope; the script presses it on load.
        assert f'action="{url("review-claim", queued)}{scope}"' in html
        assert "data-autoclaim" in html and "Start reviewing" in html
        data = ana_client.get(url("review", queued) + scope, **JSON).json()
        assert data["task"] is None and "data-autoclaim" in data["html"]
        assert data["progress"] == {"open": 3, "claimed": 0, "judged_session": 0}
    assert list(ReviewTask.objects.order_by("pk").values()) == before  # nothing claimed


def test_claim_takes_the_next_task_and_the_page_shows_it(
    ana_client, reviewer_ana, queued, query_vaccines, item_cdc_faq
):
    queued.guidelines = "Judge the text, not the title."
    queued.save()
    queue(queued, [(query_vaccines, item_cdc_faq, 2)], source="run splade")
    claimed = ana_client.post(url("review-claim", queued) + "?query=q-vaccines")
    # Post/Redirect/Get: 303 to the queue's page, in the same scope.
    assert claimed.status_code == 303
    assert claimed["Location"] == url("review", queued) + "?query=q-vaccines"
    task = task_of(query_vaccines, item_cdc_faq)
    assert task.status == TaskStatus.CLAIMED and task.claimed_by == reviewer_ana
    lease = task.lease_expires_at
    response = ana_client.get(claimed["Location"])
    assert response.status_code == 200
    assert response.context["task"].pk == task.pk
    html = response.content.decode()
    assert "Do mRNA vaccines change a person&#x27;s DNA?" in html
    # no run is stored under those names here: the label says so (issue 24 item 13)
    stored_nowhere = " (named by imported labels; no such run is stored here)"
    assert f"run bm25{stored_nowhere}, rank 1" in html
    assert f"run splade{stored_nowhere}, rank 2" in html
    assert "<mark>mRNA</mark> never enters" in html and "<mark>DNA</mark>" in html
    for label in ('0</kbd> <span class="grade-name">not relevant', "3</kbd> <span"):
        assert label in html
    assert 'data-key="s"' in html and 'data-key="u"' in html
    assert '<details class="guidelines" data-guidelines>' in html
    assert "Judge the text, not the title." in html
    assert "data-autoclaim" not in html
    # A reload shows the same task, in any scope that holds it, and leaves its lease as it
    # was; claiming again gives it back, never a second one.
    for scope in ("", "?query=q-vaccines", "?tag=health"):
        again = ana_client.get(url("review", queued) + scope, **JSON).json()
        assert again["task"] == {"id": task.pk, "query": "q-vaccines", "item": "cdc-mrna-faq"}
        assert again["progress"] == {"open": 3, "claimed": 1, "judged_session": 0}
    assert task_of(query_vaccines, item_cdc_faq).lease_expires_at == lease
    data = ana_client.post(url("review-claim", queued), **JSON).json()
    assert data["task"]["id"] == task.pk
    assert ReviewTask.objects.filter(status=TaskStatus.CLAIMED).count() == 1


def test_a_page_in_another_scope_neither_releases_nor_claims(
    ana_client, reviewer_ana, queued, query_vaccines, collection_graded
):
    held = ana_client.post(url("review-claim", queued), **JSON).json()["task"]
    other = make_query(queued, external_id="q-other", tags=["misc"])
    queue(queued, [(other, make_item(queued, external_id="other-1"), 1)])
    before = list(ReviewTask.objects.order_by("pk").values())
    for scope in ("?query=q-other", "?tag=misc"):
        page = ana_client.get(url("review", queued) + scope)
        assert page.context["task"] is None and "data-autoclaim" in page.content.decode()
    assert list(ReviewTask.objects.order_by("pk").values()) == before
    # Claiming there (a POST) moves the lease into that scope, as before.
    moved = ana_client.post(url("review-claim", queued) + "?query=q-other", **JSON).json()
    assert moved["task"]["item"] == "other-1"
    assert ReviewTask.objects.get(pk=held["id"]).status == TaskStatus.PENDING


def test_claim_with_nothing_left_renders_the_empty_queue_not_a_redirect(
    ana_client, collection_graded, query_vaccines
):
    response = ana_client.post(url("review-claim", collection_graded) + "?query=q-vaccines")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Nothing left to judge for query q-vaccines" in html
    assert "data-autoclaim" not in html  # no button that would claim nothing again


def test_claim_is_post_only(ana_client, queued):
    assert ana_client.get(url("review-claim", queued)).status_code == 405
    assert not ReviewTask.objects.filter(status=TaskStatus.CLAIMED).exists()


def test_queue_escapes_item_text(ana_client, collection_graded, query_vaccines):
    nasty = make_item(
        collection_graded,
        external_id="x<1>",
        title="<script>alert('title')</script> vaccines",
        text='<img src=x onerror="alert(1)"> vaccines & DNA',
    )
    queue(collection_graded, [(query_vaccines, nasty, 1)])
    html = ana_client.post(url("review-claim", collection_graded), follow=True).content.decode()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#x27;title&#x27;)&lt;/script&gt; <mark>vaccines</mark>" in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; <mark>vaccines</mark> &amp;" in html
    assert "x&lt;1&gt;" in html


def test_judge_records_the_grade_and_serves_the_next_task(
    ana_client, reviewer_ana, queued, query_vaccines, item_cdc_faq, item_who_qa
):
    first = ana_client.post(url("review-claim", queued), **JSON).json()["task"]
    response = ana_client.post(
        url("review-judge", queued), {"task": first["id"], "grade": 3, "note": "exact"}, **JSON
    )
    assert response.status_code == 200
    data = response.json()
    judgment = Judgment.objects.get(query=query_vaccines, item=item_cdc_faq)
    assert (judgment.grade, judgment.note, judgment.version) == (3, "exact", 1)
    assert judgment.reviewer == reviewer_ana
    (change,) = JudgmentChange.objects.filter(query=query_vaccines, item=item_cdc_faq)
    assert (change.old_grade, change.new_grade, change.changed_by, change.source) == (
        None,
        3,
        reviewer_ana,
        ChangeSource.UI,
    )
    assert task_of(query_vaccines, item_cdc_faq).status == TaskStatus.DONE
    assert data["recorded"] == {
        "query": "q-vaccines",
        "item": "cdc-mrna-faq",
        "grade": 3,
        "version": 1,
        "change": change.pk,
    }
    assert data["task"]["item"] == "who-vaccines-qa"
    assert task_of(query_vaccines, item_who_qa).claimed_by == reviewer_ana
    assert data["progress"] == {"open": 2, "claimed": 1, "judged_session": 1}
    assert data["can_undo"] is True
    assert "Saved 3 perfect for item 'cdc-mrna-faq'" in data["message"]
    assert "who-vaccines-qa" in data["html"] and "cdc-mrna-faq" not in data["html"]
    assert ana_client.session[f"verity.review.{queued.pk}"]["changes"] == [change.pk]


def test_judge_off_the_scale_is_refused_and_keeps_the_panel(
    ana_client, queued, query_vaccines, item_cdc_faq
):
    task = ana_client.post(url("review-claim", queued), **JSON).json()["task"]
    response = ana_client.post(
        url("review-judge", queued), {"task": task["id"], "grade": 7}, **JSON
    )
    assert response.status_code == 400
    data = response.json()
    assert "grade 7 is not on the scale (0 not relevant, 1 related" in data["error"]
    assert "html" not in data  # the page keeps the panel, and the note typed in it
    assert not Judgment.objects.exists()
    assert task_of(query_vaccines, item_cdc_faq).status == TaskStatus.CLAIMED


def test_relevant_grade_on_a_no_answer_query_is_refused(
    ana_client, reviewer_ben, queued, query_vaccines
):
    from judgments.services import set_query_status

    set_query_status(query=query_vaccines, status=QueryStatus.NO_ANSWER, by=reviewer_ben)
    page = ana_client.post(url("review-claim", queued), follow=True)
    assert "confirmed no answer" in page.content.decode()
    task = page.context["task"]
    response = ana_client.post(url("review-judge", queued), {"task": task.pk, "grade": 2}, **JSON)
    assert response.status_code == 400
    assert "marked 'confirmed no answer'" in response.json()["error"]
    assert not Judgment.objects.exists()


def test_judge_when_someone_judged_first_shows_both_and_overwrites_nothing(
    ana_client, reviewer_ana, ben_member, queued, query_vaccines, item_cdc_faq
):
    task = ana_client.post(url("review-claim", queued), **JSON).json()["task"]
    theirs = make_judgment(
        query=query_vaccines, item=item_cdc_faq, grade=0, reviewer=ben_member, note="off topic"
    )
    response = ana_client.post(
        url("review-judge", queued), {"task": task["id"], "grade": 3, "note": "mine"}, **JSON
    )
    assert response.status_code == 409
    data = response.json()
    assert data["conflict"] is True and data["ok"] is False
    html = data["html"]
    assert "Someone judged this item first" in html
    assert "3 perfect" in html and "0 not relevant" in html and "ben" in html
    assert "off topic" in html and "mine" in html
    assert 'name="expected_version" value="1"' in html
    stored = Judgment.objects.get(pk=theirs.pk)
    assert (stored.grade, stored.reviewer, stored.version) == (0, ben_member, 1)
    assert JudgmentChange.objects.filter(item=item_cdc_faq).count() == 1

    # "Apply mine anyway" re-submits with the version the reviewer has now seen.
    applied = ana_client.post(
        url("review-judge", queued),
        {"task": task["id"], "grade": 3, "note": "mine", "expected_version": 1},
        **JSON,
    )
    assert applied.status_code == 200
    stored.refresh_from_db()
    assert (stored.grade, stored.note, stored.reviewer, stored.version) == (
        3,
        "mine",
        reviewer_ana,
        2,
    )
    last = JudgmentChange.objects.filter(item=item_cdc_faq).last()
    assert (last.old_grade, last.new_grade, last.old_note) == (0, 3, "off topic")


def test_skip_gives_the_task_back_and_serves_another(
    ana_client, reviewer_ana, queued, query_vaccines, item_cdc_faq
):
    task = ana_client.post(url("review-claim", queued), **JSON).json()["task"]
    response = ana_client.post(url("review-skip", queued), {"task": task["id"]}, **JSON)
    assert response.status_code == 200
    data = response.json()
    skipped = task_of(query_vaccines, item_cdc_faq)
    assert skipped.status == TaskStatus.PENDING and skipped.claimed_by is None
    assert TaskSkip.objects.filter(task=skipped, reviewer=reviewer_ana).exists()
    assert data["task"]["item"] == "who-vaccines-qa"
    assert data["skipped"] == {"query": "q-vaccines", "item": "cdc-mrna-faq"}
    assert not Judgment.objects.exists()


def test_undo_removes_a_new_judgment_and_brings_its_task_back(
    ana_client, reviewer_ana, queued, query_vaccines, item_cdc_faq, item_who_qa
):
    first = ana_client.post(url("review-claim", queued), **JSON).json()["task"]
    ana_client.post(url("review-judge", queued), {"task": first["id"], "grade": 2}, **JSON)
    response = ana_client.post(url("review-undo", queued), {}, **JSON)
    assert response.status_code == 200
    data = response.json()
    assert not Judgment.objects.filter(query=query_vaccines, item=item_cdc_faq).exists()
    history = list(
        JudgmentChange.objects.filter(item=item_cdc_faq).values_list("old_grade", "new_grade")
    )
    assert history == [(None, 2), (2, None)]
    task = task_of(query_vaccines, item_cdc_faq)
    assert task.status == TaskStatus.CLAIMED and task.claimed_by == reviewer_ana
    assert data["task"]["item"] == "cdc-mrna-faq"  # back on screen to judge again
    assert data["undone"] == {
        "query": "q-vaccines",
        "item": "cdc-mrna-faq",
        "grade": 2,
        "restored": None,
    }
    assert "Undone: 2 relevant for item 'cdc-mrna-faq'" in data["message"]
    assert data["progress"]["judged_session"] == 0
    assert data["can_undo"] is False
    # Judging it again works, and the other task the reviewer held is served after it.
    again = ana_client.post(
        url("review-judge", queued), {"task": first["id"], "grade": 1}, **JSON
    ).json()
    assert Judgment.objects.get(query=query_vaccines, item=item_cdc_faq).grade == 1
    assert again["task"]["item"] == "who-vaccines-qa"


def test_undo_restores_the_grade_an_edit_replaced(
    ana_client, reviewer_ana, ben_member, queued, query_vaccines, item_cdc_faq
):
    task = ana_client.post(url("review-claim", queued), **JSON).json()["task"]
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=1, reviewer=ben_member, note="n")
    ana_client.post(
        url("review-judge", queued),
        {"task": task["id"], "grade": 3, "expected_version": 1},
        **JSON,
    )
    data = ana_client.post(url("review-undo", queued), {}, **JSON).json()
    judgment = Judgment.objects.get(query=query_vaccines, item=item_cdc_faq)
    assert (judgment.grade, judgment.note, judgment.version) == (1, "n", 3)
    assert data["undone"]["restored"] == 1
    assert "restored 1 related" in data["message"]
    history = list(
        JudgmentChange.objects.filter(item=item_cdc_faq).values_list("new_grade", "changed_by")
    )
    assert history == [(1, ben_member.pk), (3, reviewer_ana.pk), (1, reviewer_ana.pk)]


def test_undo_is_refused_when_someone_changed_the_judgment_since(
    ana_client, ben_member, queued, query_vaccines, item_cdc_faq
):
    task = ana_client.post(url("review-claim", queued), **JSON).json()["task"]
    ana_client.post(url("review-judge", queued), {"task": task["id"], "grade": 2}, **JSON)
    record_judgment(
        query=query_vaccines,
        item=item_cdc_faq,
        grade=0,
        reviewer=ben_member,
        expected_version=1,
    )
    response = ana_client.post(url("review-undo", queued), {}, **JSON)
    assert response.status_code == 409
    assert "ben changed item 'cdc-mrna-faq'" in response.json()["error"]
    judgment = Judgment.objects.get(query=query_vaccines, item=item_cdc_faq)
    assert (judgment.grade, judgment.reviewer, judgment.version) == (0, ben_member, 2)


def test_undo_is_refused_after_a_removal_and_recreation_by_someone_else(
    ana_client, reviewer_ana, ben_member, queued, query_vaccines, item_cdc_faq
):
    """Versions restart at 1 after a removal, so the version alone would let the undo
    delete a judgment that is not the reviewer's: the latest-change check refuses it."""
    from judgments.services import remove_judgment

    task = ana_client.post(url("review-claim", queued), **JSON).json()["task"]
    ana_client.post(url("review-judge", queued), {"task": task["id"], "grade": 2}, **JSON)
    remove_judgment(
        query=query_vaccines, item=item_cdc_faq, reviewer=reviewer_ana, expected_version=1
    )
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=ben_member)
    response = ana_client.post(url("review-undo", queued), {}, **JSON)
    assert response.status_code == 409
    judgment = Judgment.objects.get(query=query_vaccines, item=item_cdc_faq)
    assert (judgment.grade, judgment.reviewer) == (3, ben_member)


def test_undo_with_nothing_to_undo(ana_client, queued):
    response = ana_client.post(url("review-undo", queued), {}, **JSON)
    assert response.status_code == 400
    assert "Nothing to undo" in response.json()["error"]


def test_empty_queue_says_so_and_links_to_the_queries(ana_client, collection_graded):
    response = ana_client.get(url("review", collection_graded))
    html = response.content.decode()
    assert "The queue is empty" in html
    assert f'href="{url("collection", collection_graded)}"' in html


def test_empty_queue_mentions_tasks_left_for_others(ana_client, ben_member, queued, query_vaccines):
    for _ in range(3):
        task = ana_client.post(url("review-claim", queued), **JSON).json()["task"]
        ana_client.post(url("review-skip", queued), {"task": task["id"]}, **JSON)
    data = ana_client.post(url("review-claim", queued), **JSON).json()
    assert data["task"] is None
    assert "3 open tasks remain" in data["html"]


def test_queue_works_without_javascript(ana_client, queued, query_vaccines, item_cdc_faq):
    page = ana_client.post(url("review-claim", queued), follow=True)
    assert page.redirect_chain == [(url("review", queued), 303)]
    task = page.context["task"]
    response = ana_client.post(url("review-judge", queued), {"task": task.pk, "grade": 2})
    assert response.status_code == 302 and response["Location"] == url("review", queued)
    assert Judgment.objects.get(query=query_vaccines, item=item_cdc_faq).grade == 2
    follow = ana_client.get(response["Location"])
    assert "Saved 2 relevant for item" in follow.content.decode()


def test_queue_page_query_count_does_not_grow_with_the_data(
    ana_client, django_assert_max_num_queries, collection_graded, reviewer_ben
):
    items = [make_item(collection_graded) for _ in range(30)]
    queries = [make_query(collection_graded) for _ in range(10)]
    for query in queries:
        queue(collection_graded, [(query, item, n) for n, item in enumerate(items, 1)])
    for query in queries[:5]:
        for item in items[:10]:
            make_judgment(query=query, item=item, grade=1, reviewer=reviewer_ben)
    with django_assert_max_num_queries(16):
        ana_client.get(url("review", collection_graded))
    with django_assert_max_num_queries(10):  # 16 allowed before issue 29
        ana_client.post(url("review-claim", collection_graded))
    task = ReviewTask.objects.get(status=TaskStatus.CLAIMED)
    with django_assert_max_num_queries(16):
        ana_client.get(url("review", collection_graded))
    # Grade and next (issue 29: 34 allowed before): session, user, collection and role,
    # the task, the judgment (lock, current, write: one statement on PostgreSQL, three on
    # SQLite), the query's open count, the claim, the next task with its sources, the
    # progress counts, the panel's extensions, the session's save; savepoints included.
    with django_assert_max_num_queries(21 if connection.vendor == "postgresql" else 22):
        ana_client.post(
            url("review-judge", collection_graded), {"task": task.pk, "grade": 0}, **JSON
        )


# -- the query page -------------------------------------------------------------------------


def test_query_page_shows_judgments_and_open_tasks(
    ana_client, reviewer_ben, queued, query_vaccines, item_cdc_faq
):
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ben)
    response = ana_client.get(url("query", queued, "q-vaccines"))
    assert response.status_code == 200
    html = response.content.decode()
    assert [row["judgment"].item.external_id for row in response.context["judged"]] == [
        "cdc-mrna-faq"
    ]
    assert [row["task"].item.external_id for row in response.context["waiting"]] == [
        "who-vaccines-qa",
        "forum-4411",
    ]
    assert 'name="expected_version" value="1"' in html
    assert '<option value="3" selected>3 perfect</option>' in html
    assert "run bm25 (named by imported labels; no such run is stored here), rank 3" in html
    assert ana_client.get(url("query", queued, "no-such-query")).status_code == 404


def test_query_page_edit_saves_with_the_version_it_showed(
    ana_client, reviewer_ana, reviewer_ben, queued, query_vaccines, item_cdc_faq
):
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ben)
    response = ana_client.post(
        url("query", queued, "q-vaccines"),
        {
            "action": "grade",
            "item": "cdc-mrna-faq",
            "grade": 2,
            "note": "partly",
            "expected_version": 1,
        },
    )
    assert response.status_code == 302
    judgment = Judgment.objects.get(query=query_vaccines, item=item_cdc_faq)
    assert (judgment.grade, judgment.note, judgment.version, judgment.reviewer) == (
        2,
        "partly",
        2,
        reviewer_ana,
    )
    assert JudgmentChange.objects.filter(item=item_cdc_faq, new_grade=2, old_grade=3).exists()
    follow = ana_client.get(response["Location"])
    assert "Saved 2 relevant for item &#x27;cdc-mrna-faq&#x27; (version 2)" in (
        follow.content.decode()
    )


def test_query_page_judges_an_open_task(ana_client, queued, query_vaccines, item_forum_post):
    response = ana_client.post(
        url("query", queued, "q-vaccines"),
        {"action": "grade", "item": "forum-4411", "grade": 0, "expected_version": ""},
    )
    assert response.status_code == 302
    assert Judgment.objects.get(query=query_vaccines, item=item_forum_post).grade == 0
    assert task_of(query_vaccines, item_forum_post).status == TaskStatus.DONE


def test_stale_edit_shows_both_values_and_changes_nothing(
    ana_client, reviewer_ana, ben_member, queued, query_vaccines, item_cdc_faq
):
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=ben_member)
    ana_client.get(url("query", queued, "q-vaccines"))  # ana's page shows version 1
    record_judgment(  # ben changes it meanwhile
        query=query_vaccines,
        item=item_cdc_faq,
        grade=1,
        note="only related",
        reviewer=ben_member,
        expected_version=1,
    )
    response = ana_client.post(
        url("query", queued, "q-vaccines"),
        {"action": "grade", "item": "cdc-mrna-faq", "grade": 0, "expected_version": 1},
    )
    assert response.status_code == 409
    html = response.content.decode()
    assert "changed since you loaded this page" in html
    conflict = response.context["conflict"]
    assert conflict["mine_label"] == "0 not relevant"
    assert conflict["theirs_label"] == "1 related" and conflict["theirs_by"] == "ben"
    assert "0 not relevant" in html and "1 related" in html and "only related" in html
    assert "Keep theirs" in html and "Apply mine anyway" in html
    assert 'name="expected_version" value="2"' in html
    judgment = Judgment.objects.get(query=query_vaccines, item=item_cdc_faq)
    assert (judgment.grade, judgment.version, judgment.reviewer) == (1, 2, ben_member)
    assert JudgmentChange.objects.filter(item=item_cdc_faq).count() == 2

    applied = ana_client.post(
        url("query", queued, "q-vaccines"),
        {"action": "grade", "item": "cdc-mrna-faq", "grade": 0, "expected_version": 2},
    )
    assert applied.status_code == 302
    judgment.refresh_from_db()
    assert (judgment.grade, judgment.version, judgment.reviewer) == (0, 3, reviewer_ana)


def test_the_same_edit_sent_twice_is_not_a_conflict(
    ana_client, reviewer_ana, reviewer_ben, queued, query_vaccines, item_cdc_faq
):
    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=3, reviewer=reviewer_ben)
    edit = {"action": "grade", "item": "cdc-mrna-faq", "grade": 1, "expected_version": 1}
    assert ana_client.post(url("query", queued, "q-vaccines"), edit).status_code == 302
    again = ana_client.post(url("query", queued, "q-vaccines"), edit)  # a double click
    assert again.status_code == 302
    follow = ana_client.get(again["Location"]).content.decode()
    assert "Already saved: 1 related for item &#x27;cdc-mrna-faq&#x27;" in follow
    judgment = Judgment.objects.get(query=query_vaccines, item=item_cdc_faq)
    assert (judgment.grade, judgment.version) == (1, 2)
    # A different grade on the stale version is a real conflict, even from the same person.
    other = ana_client.post(url("query", queued, "q-vaccines"), {**edit, "grade": 0})
    assert other.status_code == 409
    assert Judgment.objects.get(pk=judgment.pk).grade == 1


def test_status_actions_and_their_refusals(
    ana_client, reviewer_ana, reviewer_ben, queued, query_vaccines, item_cdc_faq
):
    target = url("query", queued, "q-vaccines")
    refused = ana_client.post(target, {"action": "status", "status": "relevant"})
    assert refused.status_code == 400
    assert "has no relevant judgment, so it cannot be marked" in refused.content.decode()
    query_vaccines.refresh_from_db()
    assert query_vaccines.status == QueryStatus.UNREVIEWED

    make_judgment(query=query_vaccines, item=item_cdc_faq, grade=2, reviewer=reviewer_ben)
    refused = ana_client.post(target, {"action": "status", "status": "no_answer"})
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "Status not changed" in html
    assert "has 1 relevant judgment(s), so it cannot be marked" in html
    query_vaccines.refresh_from_db()
    assert query_vaccines.status == QueryStatus.UNREVIEWED
    assert not QueryStatusChange.objects.exists()

    done = ana_client.post(target, {"action": "status", "status": "relevant"})
    assert done.status_code == 302 and done["Location"].endswith("#status")
    query_vaccines.refresh_from_db()
    assert query_vaccines.status == QueryStatus.RELEVANT
    assert query_vaccines.status_changed_by == reviewer_ana
    back = ana_client.post(target, {"action": "status", "status": "unreviewed"})
    assert back.status_code == 302
    assert list(QueryStatusChange.objects.values_list("old_status", "new_status")) == [
        ("unreviewed", "relevant"),
        ("relevant", "unreviewed"),
    ]


def test_evidence_condition_is_edited_as_lines_of_ids(
    ana_client, reviewer_ana, queued, query_vaccines
):
    target = url("query", queued, "q-vaccines")
    saved = ana_client.post(
        target, {"action": "evidence", "groups": "who-vaccines-qa, cdc-mrna-faq\n\n forum-4411 \n"}
    )
    assert saved.status_code == 302
    condition = EvidenceCondition.objects.get(query=query_vaccines)
    assert condition.groups == [["cdc-mrna-faq", "who-vaccines-qa"], ["forum-4411"]]
    assert condition.updated_by == reviewer_ana
    page = ana_client.get(target).content.decode()
    assert "cdc-mrna-faq who-vaccines-qa\nforum-4411</textarea>" in page

    refused = ana_client.post(target, {"action": "evidence", "groups": "cdc-mrna-faq nope"})
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "names unknown item(s) nope" in html
    assert "cdc-mrna-faq nope</textarea>" in html  # what was typed is kept
    condition.refresh_from_db()
    assert condition.groups == [["cdc-mrna-faq", "who-vaccines-qa"], ["forum-4411"]]

    removed = ana_client.post(target, {"action": "evidence", "groups": "  \n"})
    assert removed.status_code == 302
    assert not EvidenceCondition.objects.filter(query=query_vaccines).exists()


def test_query_ids_may_hold_slashes(ana_client, collection_graded):
    # (No space: an id holds none, verity_limits.id_problem; "é" is quoted in the URL.)
    make_query(collection_graded, external_id="topic/7/é", text="slashes in ids")
    target = url("query", collection_graded, "topic/7/é")
    assert target.endswith("/q/topic/7/%C3%A9/")
    response = ana_client.get(target)
    assert response.status_code == 200 and response.context["query"].external_id == "topic/7/é"


def test_unknown_action_is_a_bad_request(ana_client, queued):
    response = ana_client.post(url("query", queued, "q-vaccines"), {"action": "delete"})
    assert response.status_code == 400


# -- CSRF -----------------------------------------------------------------------------------


def test_posts_need_the_csrf_token(fast_hashing, reviewer_ana, queued, query_vaccines):
    set_membership(collection=queued, user=reviewer_ana, role="reviewer")
    client = client_for(reviewer_ana, enforce_csrf_checks=True)
    page = client.get(url("review", queued))
    token = str(page.context["csrf_token"])
    assert client.post(url("review-claim", queued)).status_code == 403
    assert not ReviewTask.objects.filter(status=TaskStatus.CLAIMED).exists()
    page = client.post(url("review-claim", queued), {"csrfmiddlewaretoken": token}, follow=True)
    task = page.context["task"]
    forged = client.post(url("review-judge", queued), {"task": task.pk, "grade": 2}, **JSON)
    assert forged.status_code == 403
    forged = client.post(
        url("query", queued, "q-vaccines"), {"action": "status", "status": "no_answer"}
    )
    assert forged.status_code == 403
    assert not Judgment.objects.exists()
    query_vaccines.refresh_from_db()
    assert query_vaccines.status == QueryStatus.UNREVIEWED
    token = page.context["csrf_token"]
    ok = client.post(
        url("review-judge", queued),
        {"task": task.pk, "grade": 2, "csrfmiddlewaretoken": str(token)},
        **JSON,
    )
    assert ok.status_code == 200
    assert Judgment.objects.count() == 1


# -- highlighting ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "text", "expected"),
    [
        ("How do I reset my VPN?", "Reset the VPN", "<mark>Reset</mark> the <mark>VPN</mark>"),
        ("the is at", "the is at", "the is at"),  # stopwords only: nothing marked
        ("go to IT", "go to IT now", "go to IT now"),  # shorter than three letters
        (
            "session disconnects",
            "sessions disconnected",
            "<mark>sessions</mark> <mark>disconnected</mark>",
        ),
        ("policies", "a policy", "a <mark>policy</mark>"),
        ("<b>", "<b>bold</b>", "&lt;b&gt;bold&lt;/b&gt;"),
        ("bold", "<b>bold</b>", "&lt;b&gt;<mark>bold</mark>&lt;/b&gt;"),
        ("DNA", "DNA's & DNA", "<mark>DNA</mark>&#x27;s &amp; <mark>DNA</mark>"),
    ],
    ids=["basic", "stopwords", "short", "suffixes", "plural-ies", "tag-query", "escape", "amp"],
)
def test_highlight(query, text, expected):
    assert str(highlight(text, query_terms(query))) == expected
