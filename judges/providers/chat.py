"""A judge behind any server that speaks OpenAI's chat-completions protocol (vLLM,
llama.cpp's server, Ollama, hosted APIs), over plain HTTP with ``requests``.

Each pair is one conversation: the filled prompt, the pair's query and passage. A
timeout, an HTTP error, a refusal or an answer without a grade on the scale is a failed
attempt with its reason; a pair is tried up to ``1 + retries`` times with exponential
backoff, as long as the job's request budget lasts. At most ``concurrency`` requests are
in flight (a thread pool).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from ..answers import read_answer
from ..prompts import FilledPrompt
from . import Outcome, PairText

#: Longest wait honoured from a ``Retry-After`` header.
MAX_RETRY_AFTER = 60.0


class Budget:
    """The job's remaining requests, shared by the threads."""

    def __init__(self, requests: int) -> None:
        self.left = requests
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.left <= 0:
                return False
            self.left -= 1
            return True


@dataclass
class ChatJudge:
    base_url: str
    model: str
    prompt: FilledPrompt
    grades: Collection[int]
    api_key: str = ""
    timeout: float = 60.0
    retries: int = 2
    concurrency: int = 4
    request_budget: int = 1000
    backoff: float = 1.0
    temperature: float = 0.0

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def judge(
        self, pairs: Sequence[PairText], *, done: Callable[[Outcome], None] = lambda o: None
    ) -> list[Outcome]:
        """One outcome per pair, in the pairs' order; ``done`` is called (in the calling
        thread) as each pair is finished."""
        budget = Budget(self.request_budget)
        outcomes: list[Outcome] = [Outcome(pair=p) for p in pairs]
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            futures = {pool.submit(self._one, o, budget): o for o in outcomes}
            for future in as_completed(futures):
                future.result()
                done(futures[future])
        return outcomes

    def _one(self, outcome: Outcome, budget: Budget) -> None:
        reasons: list[str] = []
        while outcome.attempts <= self.retries:
            if not budget.take():
                if reasons:
                    reasons.append("request budget spent")
                break
            outcome.attempts += 1
            raw, failure, wait = self._ask(outcome.pair)
            outcome.raw = raw
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

    def _ask(self, pair: PairText) -> tuple[str, str, float]:
        """(answer text, failure reason or "", seconds the server asked us to wait)."""
        import requests

        body: dict[str, Any] = {
            "model": self.model,
            "messages": self.prompt.messages(query=pair.query, passage=pair.passage),
            "temperature": self.temperature,
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = requests.post(self.url, json=body, headers=headers, timeout=self.timeout)
        except requests.Timeout:
            return "", f"timeout after {self.timeout:g} s", 0.0
        except requests.RequestException as exc:
            return "", f"request failed ({type(exc).__name__}: {exc})", 0.0
        text = response.text
        if response.status_code != 200:
            wait = _retry_after(response.headers.get("Retry-After"))
            what = "rate limited" if response.status_code == 429 else response.reason
            return text[:4000], f"HTTP {response.status_code} ({what})", wait
        try:
            choice = response.json()["choices"][0]
            message = choice["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            return text[:4000], "the answer is not a chat completion", 0.0
        content = message.get("content") or ""
        if message.get("refusal"):
            return str(message["refusal"]), f"refused: {message['refusal']!r}", 0.0
        if choice.get("finish_reason") == "content_filter":
            return content, "refused: the server's content filter stopped the answer", 0.0
        return str(content), "", 0.0


def _retry_after(value: str | None) -> float:
    try:
        return min(MAX_RETRY_AFTER, max(0.0, float(value))) if value else 0.0
    except ValueError:
        return 0.0
