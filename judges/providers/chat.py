"""A judge behind any server that speaks OpenAI's chat-completions protocol (vLLM,
llama.cpp's server, Ollama, hosted APIs), over plain HTTP(S).

Each pair is one conversation: the filled prompt, the pair's query and passage. A
timeout, an HTTP error, a refusal or an answer without a grade on the scale is a failed
attempt with its reason; a pair is tried up to ``1 + retries`` times with exponential
backoff, as long as the job's request budget lasts. At most ``concurrency`` requests are
in flight (a thread pool, one request at a time per thread): a request ends, its
connection closed, at its deadline (``timeout`` for the whole exchange, not per read)
before its retry starts. Requests go out only through ``outbound.post_json``: the
operator's allow-list, no redirects, answers read up to ``MAX_ANSWER_BYTES`` and sent
with ``max_tokens``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from http.client import HTTPException
from typing import Any

from ..answers import read_answer
from ..prompts import FilledPrompt
from . import Outcome, PairText
from .outbound import SUFFIX, AllowList, OutboundRefused, Target, Timeout, post_json

#: Longest wait honoured from a ``Retry-After`` header.
MAX_RETRY_AFTER = 60.0
#: Most bytes of an HTTP answer read: a chat completion of ``max_tokens`` tokens is far
#: smaller; more is not an answer, and reading stops there.
MAX_ANSWER_BYTES = 256 * 1024
#: Most characters of a raw answer stored with a proposal.
RAW_ANSWER_CHARS = 16_000
#: What stands for the API key where a server said it back.
KEY_SHOWN = "[the API key]"


class Budget:
    """The job's remaining requests, shared by the threads."""

    def __init__(self, requests: int) -> None:
        self.left = requests
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self.left = 0

    def take(self) -> bool:
        with self._lock:
            if self.left <= 0:
                return False
            self.left -= 1
            return True


@dataclass
class ChatJudge:
    target: Target
    model: str
    prompt: FilledPrompt
    grades: Collection[int]
    allow: AllowList = field(default_factory=AllowList)
    api_key: str = ""
    timeout: float = 60.0
    retries: int = 2
    concurrency: int = 4
    request_budget: int = 1000
    backoff: float = 1.0
    temperature: float = 0.0
    max_tokens: int = 512

    @property
    def url(self) -> str:
        return self.target.base_url + SUFFIX

    def judge(
        self, pairs: Sequence[PairText], *, done: Callable[[Outcome], None] = lambda o: None
    ) -> list[Outcome]:
        """One outcome per pair, in the pairs' order; ``done`` is called (in the calling
        thread) as each pair is finished."""
        budget = Budget(self.request_budget)
        outcomes: list[Outcome] = [Outcome(pair=p) for p in pairs]
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            futures = {pool.submit(self._one, o, budget): o for o in outcomes}
            try:
                for future in as_completed(futures):
                    future.result()
                    done(futures[future])
            except BaseException:
                # The job is stopping: ask nothing more (running requests end at their
                # deadline), so that what was received can be kept.
                budget.close()
                raise
        return outcomes

    def _one(self, outcome: Outcome, budget: Budget) -> None:
        reasons: list[str] = []
        while outcome.attempts <= self.retries:
            if not budget.take():
                if reasons:
                    reasons.append("request budget spent")
                break
            outcome.attempts += 1
            raw, failure, wait = self._ask(outcome)
            raw, failure = self._without_key(raw), self._without_key(failure)
            outcome.raw = cut(raw)
            if not failure:
                reading = read_answer(raw, self.grades)
                if reading.grade is not None:
                    outcome.grade, outcome.rationale = reading.grade, reading.rationale
                    outcome.failure = ""
                    return
                failure = reading.failure
            reasons.append(f"attempt {outcome.attempts}: {failure}")
            if outcome.attempts <= self.retries:
                time.sleep(max(wait, self.backoff * 2 ** (outcome.attempts - 1)))
        outcome.failure = "; ".join(reasons)

    def _without_key(self, text: str) -> str:
        """``text`` with the API key taken out: a server that says it back (an error page
        quoting the Authorization header) must not get the operator's secret stored in
        the raw answers, failure reasons and rationales that evaluators read."""
        return text.replace(self.api_key, KEY_SHOWN) if self.api_key else text

    def _ask(self, outcome: Outcome) -> tuple[str, str, float]:
        """(answer text, failure reason or "", seconds the server asked us to wait).
        The request has ended, its connection closed, when this returns."""
        pair = outcome.pair
        body: dict[str, Any] = {
            "model": self.model,
            "messages": self.prompt.messages(query=pair.query, passage=pair.passage),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            reply = post_json(
                self.target,
                self.allow,
                body,
                headers=headers,
                timeout=self.timeout,
                max_bytes=MAX_ANSWER_BYTES,
            )
        except Timeout:
            return "", f"timeout after {self.timeout:g} s", 0.0
        except OutboundRefused as exc:
            return "", f"refused by the server's outbound rules: {exc}", 0.0
        except (OSError, HTTPException) as exc:
            return "", f"request failed ({type(exc).__name__}: {exc})", 0.0
        text = reply.body.decode("utf-8", errors="replace")
        if reply.too_long:
            return text, f"the answer is longer than {MAX_ANSWER_BYTES} bytes", 0.0
        if reply.status != 200:
            wait = _retry_after(reply.headers.get("retry-after"))
            what = "rate limited" if reply.status == 429 else reply.reason
            if 300 <= reply.status < 400:
                what = f"{reply.reason}; redirects are not followed, give the final URL"
            return text, f"HTTP {reply.status} ({what})", wait
        try:
            answer = json.loads(text)
            choice = answer["choices"][0]
            message = choice["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            return text, "the answer is not a chat completion", 0.0
        _add_usage(outcome, answer.get("usage") if isinstance(answer, dict) else None)
        if not isinstance(message, dict):
            return text, "the answer is not a chat completion", 0.0
        content = message.get("content") or ""
        if message.get("refusal"):
            return str(message["refusal"]), f"refused: {message['refusal']!r}", 0.0
        if choice.get("finish_reason") == "content_filter":
            return str(content), "refused: the server's content filter stopped the answer", 0.0
        return str(content), "", 0.0


def cut(raw: str, size: int = RAW_ANSWER_CHARS) -> str:
    """The raw answer as stored: at most ``size`` characters, saying where it was cut."""
    if len(raw) <= size:
        return raw
    return raw[:size] + f"\n[… cut: {len(raw)} characters in all]"


def _add_usage(outcome: Outcome, usage: Any) -> None:
    """Sum the tokens the server says each attempt used, when it says so."""
    if not isinstance(usage, dict):
        return
    for name in ("prompt_tokens", "completion_tokens"):
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
            setattr(outcome, name, (getattr(outcome, name) or 0) + value)


def _retry_after(value: str | None) -> float:
    try:
        return min(MAX_RETRY_AFTER, max(0.0, float(value))) if value else 0.0
    except ValueError:
        return 0.0
