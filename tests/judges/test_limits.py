"""Model judges with limits (issue 23 items 7-9): answers capped and max_tokens sent,
the timeout bounding the whole exchange and the requests in flight, a run that failed
everywhere said to have failed, a changed model asking again, one job per judge at a
time, what was received kept when a run stops, token usage recorded, and a judge the
collection's model_labels names protected."""

from __future__ import annotations

import time

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from jobs.models import Job, JobState
from judges.models import JudgeConfig, Proposal
from judges.providers.chat import MAX_ANSWER_BYTES, RAW_ANSWER_CHARS
from judges.services import JudgeError, propose_labels
from judges.tasks import start_proposals
from judgments.models import Collection, ReviewTask
from judgments.services import VerityError, freeze_snapshot, set_membership
from tests.factories import make_item, make_query, make_user

GOOD = ("ok", "##final score: 2\n##rationale: in part")


@pytest.fixture
def pool(collection_graded):
    pairs = []
    for name in "abcd":
        q = make_query(collection_graded, external_id=f"q-{name}", text=f"query {name}")
        i = make_item(collection_graded, external_id=f"doc-{name}", text=f"text about {name}")
        ReviewTask.objects.create(collection=collection_graded, query=q, item=i, source="run x")
        pairs.append((q, i))
    return pairs


@pytest.fixture
def judge(collection_graded, chat_server):
    return JudgeConfig.objects.create(
        collection=collection_graded,
        name="tiny-llm",
        base_url=chat_server.base_url,
        model="tiny-7b",
        timeout=2,
        retries=0,
        concurrency=2,
        backoff=0,
        max_tokens=64,
    )


# 23.7: caps and max_tokens


def test_requests_send_max_tokens_and_token_usage_is_recorded(
    collection_graded, pool, judge, chat_server
):
    chat_server.default = ("usage", "##final score: 2", 120, 7)
    propose_labels(collection=collection_graded, judge=judge, limit=1)
    assert chat_server.requests[0]["body"]["max_tokens"] == 64
    p = Proposal.objects.get()
    assert (p.grade, p.prompt_tokens, p.completion_tokens) == (2, 120, 7)
    assert p.params["max_tokens"] == 64


def test_an_answer_past_the_byte_cap_is_refused_and_stored_cut(
    collection_graded, pool, judge, chat_server
):
    chat_server.default = ("ok", "x" * (MAX_ANSWER_BYTES + 10) + "\n##final score: 2")
    propose_labels(collection=collection_graded, judge=judge, limit=1)
    p = Proposal.objects.get()
    assert (p.state, p.grade) == ("failed", None)
    assert p.failure_reason == f"attempt 1: the answer is longer than {MAX_ANSWER_BYTES} bytes"
    assert len(p.raw_answer) <= RAW_ANSWER_CHARS + 60
    assert p.raw_answer.endswith("characters in all]")


def test_a_long_answer_ending_in_a_grade_is_not_read(collection_graded, pool, judge, chat_server):
    chat_server.default = ("ok", "7 " * 15_000 + "##final score: 2")
    propose_labels(collection=collection_graded, judge=judge, limit=1)
    p = Proposal.objects.get()
    assert p.state == "failed"
    assert "the answer is 30016 characters long, more than 20000" in p.failure_reason


# 23.8: the timeout bounds the whole exchange; concurrency bounds requests in flight


def test_the_timeout_bounds_the_whole_answer_however_slowly_it_comes(
    collection_graded, pool, judge, chat_server
):
    """A server sending one byte every 50 ms never leaves a read waiting 0.5 s: the
    deadline is for the whole exchange (main waited for all of it, about 10 s)."""
    judge.timeout = 0.5
    judge.save()
    chat_server.default = ("trickle", 0.05, "##final score: 2")
    started = time.monotonic()
    propose_labels(collection=collection_graded, judge=judge, limit=1)
    took = time.monotonic() - started
    p = Proposal.objects.get()
    assert p.failure_reason == "attempt 1: timeout after 0.5 s"
    assert took < 2.0


def test_a_timed_out_request_is_over_before_its_retry(collection_graded, pool, judge, chat_server):
    # A backoff of 0.3 s gives the fake server's thread time to see the closed socket
    # before the retry arrives, even on a loaded machine (it polls every 10 ms): with less,
    # the server's own count lagged the client and read 3 in flight now and then.
    judge.timeout, judge.retries, judge.backoff, judge.concurrency = 0.2, 2, 0.3, 2
    judge.save()
    chat_server.default = ("slow", 1.0, "##final score: 2")
    propose_labels(collection=collection_graded, judge=judge)
    assert chat_server.max_in_flight <= 2
    deadline = time.monotonic() + 5
    while chat_server.gone < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert chat_server.gone == 12  # every timed-out request was closed by the client
    assert {p.failure_reason for p in Proposal.objects.all()} == {
        "attempt 1: timeout after 0.2 s; attempt 2: timeout after 0.2 s; "
        "attempt 3: timeout after 0.2 s"
    }


# 23.9: outcomes said as they are


def test_propose_labels_exits_non_zero_when_every_pair_failed(
    collection_graded, pool, judge, chat_server
):
    chat_server.default = ("status", 500)
    with pytest.raises(CommandError, match="Every pair failed; the first: attempt 1: HTTP 500"):
        call_command("propose_labels", collection_graded.slug, "--judge", "tiny-llm")
    assert Proposal.objects.filter(state="failed").count() == 4  # kept, with reasons


def test_a_job_where_every_pair_failed_ends_failed(
    collection_graded, pool, judge, chat_server, jobs_inline
):
    chat_server.default = ("status", 500)
    with jobs_inline():
        job = start_proposals(collection=collection_graded, judge="tiny-llm")
    job = Job.objects.get(pk=job.pk)
    assert job.state == JobState.FAILED
    assert "0 graded, 4 failed" in job.error and "Every pair failed" in job.error
    assert Proposal.objects.filter(job=job, state="failed").count() == 4


def test_a_changed_model_asks_again_and_says_so(collection_graded, pool, judge, chat_server):
    chat_server.default = GOOD
    propose_labels(collection=collection_graded, judge=judge)
    again, stored = propose_labels(collection=collection_graded, judge=judge)
    assert stored == [] and again.note == ""  # the same model: nothing to ask
    judge.model = "tiny-13b"
    judge.save()
    asked, stored = propose_labels(collection=collection_graded, judge=judge)
    assert len(stored) == 4 and {p.model for p in stored} == {"tiny-13b"}
    assert (
        "4 pairs graded before by model 'tiny-7b' with prompt umbrela-v1 are asked again: "
        "the judge now uses model 'tiny-13b'" in asked.summary(len(stored))
    )


def test_the_form_says_a_changed_model_asks_again(collection_graded, judge, settings):
    admin = make_user("adm")
    set_membership(collection=collection_graded, user=admin, role="admin")
    client = Client()
    client.force_login(admin)
    data = {
        "name": "tiny-llm",
        "base_url": judge.base_url,
        "model": "tiny-13b",
        "timeout": 2,
        "retries": 0,
        "concurrency": 2,
        "request_budget": 100,
        "backoff": 0,
        "temperature": 0,
        "max_tokens": 64,
        "prompt_version": "umbrela-v1",
    }
    url = f"/c/{collection_graded.slug}/judges/tiny-llm/edit/"
    page = client.post(url, data, follow=True).content.decode()
    assert "Its model changed from &#x27;tiny-7b&#x27;" in page


def test_a_second_job_of_the_same_judge_is_refused(collection_graded, pool, judge, job_dir):
    first = start_proposals(collection=collection_graded, judge="tiny-llm")
    assert first.state == JobState.QUEUED
    with pytest.raises(JudgeError, match=f"already asking in job #{first.pk} \\(queued\\)"):
        start_proposals(collection=collection_graded, judge="tiny-llm")
    with pytest.raises(JudgeError, match=f"already asking in job #{first.pk}"):
        propose_labels(collection=collection_graded, judge=judge)
    evaluator = make_user("eva")
    set_membership(collection=collection_graded, user=evaluator, role="evaluator")
    client = Client()
    client.force_login(evaluator)
    url = f"/api/collections/{collection_graded.slug}/judges/tiny-llm/proposals/"
    response = client.post(url, {}, content_type="application/json")
    assert response.status_code == 409
    assert f"job #{first.pk}" in response.json()["detail"]
    assert Job.objects.count() == 1
    # another judge may run meanwhile
    start_proposals(collection=collection_graded, judge="local-baseline")


def test_a_retried_job_meeting_a_running_one_asks_nothing(
    collection_graded, pool, judge, chat_server, jobs_inline
):
    """A retry is a new job that start_proposals never saw: the worker checks too."""
    from django.utils import timezone

    from jobs.models import JobKind
    from jobs.services import retry_job

    def job(state: str) -> Job:
        return Job.objects.create(
            kind=JobKind.JUDGING,
            collection=collection_graded,
            state=state,
            started_at=timezone.now(),
            params={"judge": "tiny-llm", "pairs": None, "include_judged": False, "limit": None},
            task_path="judges.tasks.proposals_task",
        )

    failed, running = job(JobState.FAILED), job(JobState.RUNNING)
    with jobs_inline():
        again = retry_job(failed)
    again.refresh_from_db()
    assert again.state == JobState.FAILED
    assert f"already asking in job #{running.pk}; this job asked nothing" in again.error
    assert chat_server.requests == [] and not Proposal.objects.exists()


class Stop(BaseException):
    pass


def test_a_stopped_run_keeps_the_answers_received(collection_graded, pool, judge, chat_server):
    """A run stopped after two answers (SIGTERM's SystemExit, a killed worker's last
    flush) keeps them; the next run asks only the two pairs left."""
    from jobs.progress import Progress

    judge.concurrency = 1
    judge.save()
    chat_server.default = GOOD

    class Stopping(Progress):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def advance(self, n: int = 1) -> None:
            self.calls += 1
            if self.calls == 3:
                raise Stop()
            super().advance(n)

    with pytest.raises(Stop):
        propose_labels(collection=collection_graded, judge=judge, progress=Stopping())
    assert Proposal.objects.filter(state="ok").count() == 2
    _, stored = propose_labels(collection=collection_graded, judge=judge)
    assert len(stored) == 2  # only the pairs left
    assert Proposal.objects.filter(state="ok").count() == 4


# model_labels names the judge


def test_the_judge_model_labels_names_cannot_be_deleted_or_renamed(
    collection_graded, judge, settings
):
    Collection.objects.filter(pk=collection_graded.pk).update(model_labels="tiny-llm")
    root = make_user("root", is_superuser=True, is_staff=True)
    client = Client()
    client.force_login(root)
    url = f"/admin/judges/judgeconfig/{judge.pk}/delete/"
    page = client.get(url).content.decode()
    assert "labels the pairs no person assessed at every freeze" in page
    client.post(url, {"post": "yes"})
    assert JudgeConfig.objects.filter(pk=judge.pk).exists()

    set_membership(collection=collection_graded, user=root, role="admin")
    edit = f"/c/{collection_graded.slug}/judges/tiny-llm/edit/"
    data = {
        "name": "renamed",
        "base_url": judge.base_url,
        "model": "tiny-7b",
        "timeout": 2,
        "retries": 0,
        "concurrency": 2,
        "request_budget": 100,
        "backoff": 0,
        "temperature": 0,
        "max_tokens": 64,
        "prompt_version": "umbrela-v1",
    }
    response = client.post(edit, data)
    assert response.status_code == 200
    assert "before renaming it" in " ".join(response.context["form"].errors["name"])
    assert JudgeConfig.objects.get(pk=judge.pk).name == "tiny-llm"


def test_a_freeze_naming_a_judge_that_is_gone_says_how_to_fix_it(collection_graded):
    Collection.objects.filter(pk=collection_graded.pk).update(model_labels="deleted-judge")
    collection_graded.refresh_from_db()
    with pytest.raises(VerityError) as err:
        freeze_snapshot(collection=collection_graded, by=None)
    text = str(err.value)
    assert "Choose one of them, or no model labels" in text
    assert f"/c/{collection_graded.slug}/judges/" in text
