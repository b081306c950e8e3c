"""gunicorn hooks for ``bench/load_test.py``: the CPU each request costs its worker.

``gunicorn -c bench/gunicorn_cpu.py …``: every sync worker serves one request at a time,
so the worker's CPU time (user + system, ``time.process_time``) between ``pre_request``
and ``post_request`` is that request's, whatever else the machine runs. Each worker adds
it up per endpoint class (the names of ``bench/locustfile.py``) and, when it exits,
writes ``{class: [requests, cpu seconds]}`` to ``$VERITY_CPU_DIR/worker-<pid>.json``.
What falls outside a request (the worker's loop, its start-up) is not counted here; the
driver reads the workers' whole CPU time from ``/proc`` as well.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

# (method, path pattern, class): the first match names the request.
CLASSES = [
    ("POST", re.compile(r"/api/collections/[^/]+/tasks/claim/$"), "POST tasks/claim"),
    ("POST", re.compile(r"/api/collections/[^/]+/tasks/\d+/judge/$"), "POST tasks/:id/judge"),
    ("PATCH", re.compile(r"/api/collections/[^/]+/judgments/\d+/$"), "PATCH judgments/:id"),
    ("GET", re.compile(r"/api/collections/[^/]+/judgments/\d+/$"), "GET judgments/:id"),
    ("GET", re.compile(r"/api/collections/[^/]+/judgments/$"), "GET judgments?query"),
    ("GET", re.compile(r"/evaluations/\d+/report/$"), "GET evaluations/:id/report"),
    ("GET", re.compile(r"/snapshots/\d+/qrels$"), "GET snapshots/1/qrels"),
]

_totals: dict[str, list[float]] = {}
_started: list[float] = []


def endpoint_class(method: str, path: str) -> str:
    for want, pattern, name in CLASSES:
        if method == want and pattern.search(path):
            return name
    return f"{method} other"


def pre_request(worker: Any, req: Any) -> None:
    _started[:] = [time.process_time()]


def post_request(worker: Any, req: Any, environ: Any, resp: Any) -> None:
    if not _started:
        return
    spent = time.process_time() - _started.pop()
    row = _totals.setdefault(endpoint_class(req.method, req.path), [0, 0.0])
    row[0] += 1
    row[1] += spent


def worker_exit(server: Any, worker: Any) -> None:
    folder = os.environ.get("VERITY_CPU_DIR")
    if folder:
        with open(os.path.join(folder, f"worker-{os.getpid()}.json"), "w") as fh:
            json.dump(_totals, fh)
