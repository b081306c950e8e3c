"""A real chat-completions server on 127.0.0.1 with scripted answers, for the judges'
tests: no test needs the internet, and every failure mode is a real HTTP exchange."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class ScriptedServer:
    """Answers by the query in the user message: each query has a list of actions, one
    per request (the last repeats). Actions:

    - ``("ok", content)``: a completion whose message is ``content``;
    - ``("slow", seconds, content)``: the same, after a sleep;
    - ``("status", code)``: that HTTP status, with a short error body;
    - ``("refusal", text)``: a completion whose message carries ``refusal``;
    - ``("garbage", body)``: a 200 whose body is not a chat completion.
    """

    def __init__(self) -> None:
        self.script: dict[str, list[tuple[Any, ...]]] = {}
        self.default: tuple[Any, ...] = ("ok", "##final score: 1\n##rationale: default")
        self.requests: list[dict[str, Any]] = []
        self.seen: dict[str, int] = defaultdict(int)
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def _next(self, query: str) -> tuple[Any, ...]:
        with self.lock:
            n = self.seen[query]
            self.seen[query] += 1
        actions = self.script.get(query)
        if not actions:
            return self.default
        return actions[min(n, len(actions) - 1)]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                user = body["messages"][-1]["content"]
                query = user.split("\n", 1)[0].removeprefix("Query: ")
                with server.lock:
                    server.requests.append(
                        {"path": self.path, "body": body, "headers": dict(self.headers)}
                    )
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._answer(server._next(query))
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def _answer(self, action: tuple[Any, ...]) -> None:
                kind = action[0]
                if kind == "status":
                    self._send(action[1], {"error": {"message": "scripted failure"}})
                    return
                if kind == "garbage":
                    self._send(200, action[1])
                    return
                if kind == "slow":
                    time.sleep(action[1])
                    action = ("ok", action[2])
                message: dict[str, Any] = {"role": "assistant", "content": action[1]}
                if kind == "refusal":
                    message = {"role": "assistant", "content": None, "refusal": action[1]}
                self._send(
                    200,
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    },
                )

            def _send(self, code: int, payload: Any) -> None:
                data = (
                    payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                )
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    if code == 429:
                        self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and went away: that is the point

        return Handler


@pytest.fixture
def chat_server() -> Iterator[ScriptedServer]:
    server = ScriptedServer()
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()
