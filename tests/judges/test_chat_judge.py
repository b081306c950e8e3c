"""The openai-compatible judge against a real HTTP server on 127.0.0.1: good answers,
malformed ones, slow ones, HTTP errors and refusals, retries, the budget, the
concurrency limit and the API key read from the environment."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from judges.models import JudgeConfig, Proposal, ProposalState
from judges.prompts import fill_prompt
from judges.selectors import judge_named
from judges.services import JudgeError, propose_labels
from judgments.models import Judgment, ReviewTask
from tests.factories import make_item, make_query

OK2 = ("ok", "##final score: 2\n##rationale: answers it in part")


@pytest.fixture
def pool(collection_graded):
    """Four queries named a..d, one pooled unjudged item each (an open review task)."""
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
        timeout=0.5,
        retries=2,
        concurrency=2,
        request_budget=100,
        backoff=0.01,
    )


def by_query(collection) -> dict[str, Proposal]:
    return {p.query.external_id: p for p in Proposal.objects.filter(collection=collection)}


def test_good_and_bad_answers_become_proposals_with_reasons(
    collection_graded, pool, judge, chat_server
):
    chat_server.script = {
        "query a": [OK2],
        "query b": [("ok", "Hmm, hard to say."), ("ok", "##final score: 3\n##rationale: exact")],
        "query c": [("ok", "##final score: 7")],
        "query d": [("status", 500), ("status", 429), ("slow", 2.0, "##final score: 1")],
    }
    _, stored = propose_labels(collection=collection_graded, judge=judge)
    got = by_query(collection_graded)
    assert len(stored) == 4

    a = got["q-a"]
    assert (a.state, a.grade, a.attempts, a.rationale) == ("ok", 2, 1, "answers it in part")
    assert a.model == "tiny-7b" and a.judge == "tiny-llm" and a.provider == "openai-compatible"
    prompt = fill_prompt("umbrela-v1", scale=collection_graded.scale, relevant_grade=2)
    assert a.prompt_hash == prompt.hash and len(a.prompt_hash) == 64
    assert a.params["timeout"] == 0.5 and a.params["base_url"] == chat_server.base_url
    assert "##final score: 2" in a.raw_answer

    b = got["q-b"]
    assert (b.state, b.grade, b.attempts) == ("ok", 3, 2)  # retried after no grade

    c = got["q-c"]
    assert (c.state, c.grade, c.attempts) == ("failed", None, 3)
    assert c.failure_reason.count("grade 7 is not on the scale (0, 1, 2, 3)") == 3

    d = got["q-d"]
    assert (d.state, d.grade, d.attempts) == ("failed", None, 3)
    assert d.failure_reason == (
        "attempt 1: HTTP 500 (Internal Server Error); attempt 2: HTTP 429 (rate limited); "
        "attempt 3: timeout after 0.5 s"
    )
    assert chat_server.seen == {"query a": 1, "query b": 2, "query c": 3, "query d": 3}
    assert not Judgment.objects.exists()  # proposals are never labels


def test_the_prompt_carries_the_scale_and_guidelines(collection_graded, pool, judge, chat_server):
    collection_graded.guidelines = "Judge the item on its own text."
    collection_graded.save()
    propose_labels(collection=collection_graded, judge=judge, limit=1)
    body = chat_server.requests[0]["body"]
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    assert chat_server.requests[0]["path"] == "/v1/chat/completions"
    assert body["model"] == "tiny-7b" and body["temperature"] == 0.0
    assert (
        "3 = perfect\n" in system
        and "Grades 2 and up count as relevant." in system
        and "Judge the item on its own text." in system
    )
    assert "##final score" in system
    assert user == "Query: query a\nPassage: Document doc-a\ntext about a"


def test_refusal_and_garbage_are_failures_never_grades(collection_graded, pool, judge, chat_server):
    judge.retries = 0
    judge.save()
    chat_server.script = {
        "query a": [("refusal", "I can't help with that.")],
        "query b": [("garbage", "<html>proxy error</html>")],
        "query c": [("ok", "I cannot assess this passage.")],
        "query d": [("ok", "")],
    }
    propose_labels(collection=collection_graded, judge=judge)
    got = by_query(collection_graded)
    assert got["q-a"].failure_reason == 'attempt 1: refused: "I can\'t help with that."'
    assert got["q-b"].failure_reason == "attempt 1: the answer is not a chat completion"
    assert got["q-c"].failure_reason.startswith("attempt 1: refused: ")
    assert got["q-d"].failure_reason == "attempt 1: empty answer"
    assert {p.state for p in got.values()} == {ProposalState.FAILED}


def test_the_budget_bounds_requests_and_unasked_pairs_store_nothing(
    collection_graded, pool, judge, chat_server
):
    judge.request_budget, judge.concurrency = 3, 1
    judge.save()
    chat_server.script = {"query a": [("status", 500), OK2]}
    asked, stored = propose_labels(collection=collection_graded, judge=judge)
    assert len(chat_server.requests) == 3
    assert sum(chat_server.seen.values()) == 3
    assert asked.unasked == 2 and len(stored) == 2
    assert "2 pairs not asked: the request budget was spent" in asked.summary(len(stored))


def test_concurrency_limit_holds(collection_graded, pool, judge, chat_server):
    chat_server.default = ("slow", 0.2, "##final score: 0")
    judge.concurrency = 2
    judge.save()
    propose_labels(collection=collection_graded, judge=judge)
    assert chat_server.max_in_flight == 2  # in parallel, never more than two at once


def test_api_key_comes_from_the_environment_only(
    collection_graded, pool, judge, chat_server, monkeypatch
):
    judge.api_key_env = "VERITY_JUDGE_KEY_TINY"
    judge.save()
    monkeypatch.delenv("VERITY_JUDGE_KEY_TINY", raising=False)
    with pytest.raises(
        JudgeError, match="environment variable VERITY_JUDGE_KEY_TINY, which is not set"
    ):
        propose_labels(collection=collection_graded, judge=judge)
    assert not chat_server.requests and not Proposal.objects.exists()
    monkeypatch.setenv("VERITY_JUDGE_KEY_TINY", "sk-secret-123")
    propose_labels(collection=collection_graded, judge=judge, limit=1)
    assert chat_server.requests[0]["headers"]["Authorization"] == "Bearer sk-secret-123"
    stored = Proposal.objects.get()
    assert "sk-secret" not in str(stored.params) + stored.raw_answer + stored.failure_reason


def test_pairs_file_errors_name_the_line_and_write_nothing(
    collection_graded, pool, judge, chat_server, tmp_path
):
    f = tmp_path / "pairs.txt"
    f.write_text("# qid item\nq-a doc-a\nq-zz doc-a\nq-b doc-nope\nq-c\n")
    with pytest.raises(CommandError) as err:
        call_command(
            "propose_labels", collection_graded.slug, "--judge", "tiny-llm", "--pairs", str(f)
        )
    text = str(err.value)
    assert f"{f} line 3: no query 'q-zz'" in text
    assert f"{f} line 4: no item 'doc-nope'" in text
    assert f"{f} line 5: expected 'QUERY_ID ITEM_ID'" in text
    assert not chat_server.requests and not Proposal.objects.exists()

    f.write_text("q-b doc-b\nq-b doc-a\n")  # a pair that is not pooled may be named too
    call_command("propose_labels", collection_graded.slug, "--judge", "tiny-llm", "--pairs", str(f))
    assert sorted(Proposal.objects.values_list("query__external_id", "item__external_id")) == [
        ("q-b", "doc-a"),
        ("q-b", "doc-b"),
    ]


def test_unknown_judge_is_refused_with_the_known_names(collection_graded, judge):
    with pytest.raises(JudgeConfig.DoesNotExist, match="its judges are: local-baseline, tiny-llm"):
        judge_named(collection_graded, "gpt-9")


@pytest.mark.parametrize(
    "answer",
    [
        ("garbage", "401: invalid key 'Bearer sk-secret-123' for this proxy"),
        ("refusal", "I will not answer a caller holding sk-secret-123."),
        ("ok", "##final score: 2\n##rationale: your key sk-secret-123 works"),
    ],
    ids=["error-body", "refusal", "answer"],
)
def test_a_server_that_echoes_the_key_does_not_get_it_stored(
    collection_graded, pool, judge, chat_server, monkeypatch, answer
):
    """The key is the operator's secret: a judge server that says it back (an error page
    quoting the Authorization header) must not put it in the raw answers, failure
    reasons or rationales that evaluators read on the proposals page and the API."""
    judge.api_key_env, judge.retries = "VERITY_JUDGE_KEY_TINY", 0
    judge.save()
    monkeypatch.setenv("VERITY_JUDGE_KEY_TINY", "sk-secret-123")
    chat_server.script = {"query a": [answer]}
    propose_labels(collection=collection_graded, judge=judge, limit=1)
    stored = Proposal.objects.get()
    kept = stored.raw_answer + stored.failure_reason + stored.rationale
    assert "sk-secret-123" not in kept
    assert "[the API key]" in kept
