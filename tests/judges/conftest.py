"""A real chat-completions server on 127.0.0.1 with scripted answers, for the judges'
tests: no test needs the internet, and every failure mode is a real HTTP exchange."""

from __future__ import annotations

import json
import select
import socket
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
    - ``("garbage", body)``: a 200 whose body is not a chat completion;
    - ``("redirect", location)``: a 307 to ``location``;
    - ``("trickle", seconds, content)``: the completion, one byte every ``seconds``;
    - ``("usage", content, prompt_tokens, completion_tokens)``: a completion with usage.

    A slow answer stops when the client goes away (as vLLM aborts a request whose client
    disconnected), so ``in_flight`` counts the requests whose connection is open.
    """

    def __init__(self) -> None:
        self.script: dict[str, list[tuple[Any, ...]]] = {}
        self.default: tuple[Any, ...] = ("ok", "##final score: 1\n##rationale: default")
        self.requests: list[dict[str, Any]] = []
        self.seen: dict[str, int] = defaultdict(int)
        self.in_flight = 0
        self.max_in_flight = 0
        self.gone = 0
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

            def do_GET(self) -> None:
                with server.lock:
                    server.requests.append(
                        {"path": self.path, "body": None, "headers": dict(self.headers)}
                    )
                self._send(405, {"error": "GET"})

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
                if kind == "redirect":
                    self.send_response(307)
                    self.send_header("Location", action[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if kind == "slow":
                    if not self._wait_unless_gone(action[1]):
                        return
                    action = ("ok", action[2])
                message: dict[str, Any] = {"role": "assistant", "content": action[1]}
                if kind == "refusal":
                    message = {"role": "assistant", "content": None, "refusal": action[1]}
                answer: dict[str, Any] = {
                    "id": "x",
                    "object": "chat.completion",
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                }
                if kind == "usage":
                    answer["usage"] = {"prompt_tokens": action[2], "completion_tokens": action[3]}
                if kind == "trickle":
                    self._trickle(action[1], json.dumps(answer).encode())
                    return
                self._send(200, answer)

            def _wait_unless_gone(self, seconds: float) -> bool:
                """Sleep ``seconds``; False as soon as the client has closed."""
                end = time.monotonic() + seconds
                while (left := end - time.monotonic()) > 0:
                    readable, _, _ = select.select([self.connection], [], [], min(left, 0.01))
                    if readable and not self.connection.recv(1, socket.MSG_PEEK):
                        with server.lock:
                            server.gone += 1
                        return False
                return True

            def _trickle(self, seconds: float, data: bytes) -> None:
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    for i in range(len(data)):
                        self.wfile.write(data[i : i + 1])
                        self.wfile.flush()
                        time.sleep(seconds)
                except (BrokenPipeError, ConnectionResetError):
                    with server.lock:
                        server.gone += 1

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
def chat_server(settings) -> Iterator[ScriptedServer]:
    """The server, on a loopback address the operator's allow-list names (as an operator
    would list a model server on the same machine)."""
    server = ScriptedServer()
    settings.VERITY_JUDGE_HOSTS = [f"127.0.0.1:{server.httpd.server_address[1]}"]
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()
