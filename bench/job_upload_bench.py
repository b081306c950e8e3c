"""Measure a 10M-line run uploaded through the API as a background job (not a test).

What the issue asks of it, on a production-like set-up: gunicorn with its default 30 s
timeout and ``manage.py jobs_worker``, on a throwaway PostgreSQL database (or SQLite with
``--db sqlite``) holding the run's collection (10,000 queries, from
``run_import_bench.write_bundle``):

1. the upload answers 202 with Location, and how long after its last byte;
2. GET on the job shows the progress rising, then the run (sampled every 0.5 s);
3. a second upload's worker is killed with SIGKILL while storing: no row of that run is
   left; the job is failed as stale; POST …/retry/ (with a new worker) imports it.

    .venv/bin/python bench/job_upload_bench.py                 # PostgreSQL
    .venv/bin/python bench/job_upload_bench.py --db sqlite
    .venv/bin/python bench/job_upload_bench.py --small         # 1,000 x 100, a quick check

The run is ``bench/engine_bench.py``'s (generated if absent). Figures: bench/README.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_bench import generate
from run_import_bench import SLUG, manage, postgres_env, sqlite_env, write_bundle

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def upload(port: int, token: str, path: Path, name: str) -> dict[str, Any]:
    """POST the file as multipart, streamed; time the answer from the last byte sent."""
    boundary = uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n{name}\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"'
        "\r\nContent-Type: text/plain\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.putrequest("POST", f"/api/collections/{SLUG}/runs/")
    conn.putheader("Authorization", f"Token {token}")
    conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
    conn.putheader("Content-Length", str(len(head) + path.stat().st_size + len(tail)))
    conn.endheaders()
    started = time.perf_counter()
    conn.send(head)
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            conn.send(block)
    conn.send(tail)
    sent = time.perf_counter()
    response = conn.getresponse()
    answered = time.perf_counter()
    body = json.loads(response.read())
    return {
        "status": response.status,
        "location": response.getheader("Location"),
        "job": body,
        "upload_s": sent - started,
        "answer_after_last_byte_s": answered - sent,
        "total_s": answered - started,
    }


def get(port: int, token: str, path: str, method: str = "GET") -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, headers={"Authorization": f"Token {token}"})
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"null")


def counts(env: dict[str, str]) -> str:
    code = (
        "import django; django.setup(); from scoring.models import Run, RunStage, RankedList; "
        "from judgments.models import ReviewTask, Item; "
        "print({'runs': Run.objects.count(), 'stages': RunStage.objects.count(), "
        "'lists': RankedList.objects.count(), 'tasks': ReviewTask.objects.count(), "
        "'items': Item.objects.count()})"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


@contextmanager
def started(cmd: list[str], env: dict[str, str], log: Path):
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()


def follow(
    port: int,
    token: str,
    location: str,
    *,
    until: set[str],
    every: float = 0.5,
    stop_on_phase: str | None = None,
) -> list[tuple[float, dict[str, Any]]]:
    samples = []
    start = time.perf_counter()
    while True:
        _, job = get(port, token, location)
        samples.append((time.perf_counter() - start, job))
        if job["state"] in until:
            return samples
        if stop_on_phase and job["state"] == "running" and job["phase"].startswith(stop_on_phase):
            return samples
        time.sleep(every)


def show(samples: list[tuple[float, dict[str, Any]]]) -> None:
    last = None
    for t, job in samples:
        line = f"{job['state']:<8} {job['phase'][:34]:<34} {job['done']:>10} / {job['total']}"
        if line != last:
            print(f"  t={t:6.1f}s  {line}")
            last = line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", choices=("postgres", "sqlite"), default="postgres")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "verity-bench")
    ap.add_argument("--pg-host", default="127.0.0.1")
    args = ap.parse_args()
    queries, depth = (1_000, 100) if args.small else (10_000, 1_000)
    args.dir.mkdir(parents=True, exist_ok=True)
    run_path = args.dir / f"run_{queries}x{depth}.trec"
    qrels_path = args.dir / f"qrels_{queries}x{depth}.txt"
    if not (run_path.exists() and qrels_path.exists()):
        generate(run_path, qrels_path, queries, depth)
    bundle = args.dir / f"bundle_{queries}x{depth}_j100.jsonl"
    write_bundle(bundle, qrels_path, queries, 100)
    env_cm = postgres_env(args.pg_host, 5432, "postgres") if args.db == "postgres" else sqlite_env()
    with env_cm as (env, where), tempfile.TemporaryDirectory(prefix="verity-jobbench-") as tmp:
        var = Path(tmp)
        env = {
            **env,
            "DEBUG": "0",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "0",
            "VERITY_JOB_DIR": str(var / "jobs"),
            "VERITY_JOB_STALE_SECONDS": "20",
            "FILE_UPLOAD_TEMP_DIR": str(var),
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
        if args.db == "sqlite":
            env["VERITY_VAR_DIR"] = env.get("VERITY_VAR_DIR", str(var))
        manage(env, ROOT, "migrate", "--no-input", "-v", "0")
        manage(env, ROOT, "import_collection", str(bundle))
        code = (
            "import django; django.setup(); from django.contrib.auth import get_user_model; "
            "from judgments.models import Collection; from judgments.services import "
            "set_membership, create_api_token; u = get_user_model().objects.create_user('eve'); "
            f"set_membership(collection=Collection.objects.get(slug='{SLUG}'), user=u, "
            "role='evaluator'); print(create_api_token(user=u).key)"
        )
        token = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        port = free_port()
        gunicorn = [
            str(Path(sys.executable).parent / "gunicorn"),
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
        ]  # default --timeout 30
        worker_cmd = [sys.executable, "manage.py", "jobs_worker"]
        print(
            f"== {args.db} ({where}); {run_path} ({run_path.stat().st_size / 1e6:.0f} MB, "
            f"{queries * depth:,} lines); gunicorn default timeout (30 s)"
        )
        with started(gunicorn, env, var / "gunicorn.log"):
            for _ in range(300):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.2)
            for _ in range(4):  # the first answers of each gunicorn worker come slower
                get(port, token, f"/api/collections/{SLUG}/")
            # 1 and 2: upload, follow the job to the end.
            with started(worker_cmd, env, var / "worker1.log"):
                r = upload(port, token, run_path, "bench")
                print(
                    f"upload 1: HTTP {r['status']}, Location {r['location']}; sent in "
                    f"{r['upload_s']:.1f} s, answered {r['answer_after_last_byte_s']:.2f} s after "
                    f"the last byte ({r['total_s']:.1f} s in all)"
                )
                samples = follow(port, token, r["location"], until={"done", "failed"})
                show(samples)
                job = samples[-1][1]
                print(
                    f"job {job['id']}: {job['state']} in {samples[-1][0]:.0f} s; "
                    f"{job['result'].get('summary') or job['error']}"
                )
                status, run = get(port, token, job["result"].get("api_url", "/"))
                print(
                    f"GET {job['result'].get('api_url')}: {status}, "
                    f"{[(s['name'], s['n_rows']) for s in run['stages']] if status == 200 else run}"
                )
            # 3: kill -9 the worker mid-import, then retry.
            before = counts(env)
            with started(worker_cmd, env, var / "worker2.log") as worker:
                r = upload(port, token, run_path, "killed")
                samples = follow(
                    port,
                    token,
                    r["location"],
                    until={"done", "failed"},
                    every=0.2,
                    stop_on_phase="storing ranked lists",
                )
                show(samples)
                os.kill(worker.pid, signal.SIGKILL)
                worker.wait()
                print(
                    f"kill -9 worker {worker.pid} at {samples[-1][1]['phase']} "
                    f"{samples[-1][1]['done']}/{samples[-1][1]['total']}"
                )
            after = counts(env)
            print(
                f"rows before: {before}\nrows after:  {after} "
                f"({'no row of that run' if before == after else 'CHANGED'})"
            )
            samples = follow(port, token, r["location"], until={"failed"}, every=2)
            job = samples[-1][1]
            print(
                f"after {samples[-1][0]:.0f} s: {job['state']} (stale={job['stale']}): "
                f"{job['error'][:160]}…"
            )
            with started(worker_cmd, env, var / "worker3.log"):
                status, new = get(port, token, f"/api/jobs/{job['id']}/retry/", "POST")
                print(f"POST /api/jobs/{job['id']}/retry/: {status}, job {new['id']}")
                samples = follow(port, token, new["api_url"], until={"done", "failed"})
                print(f"retry job {new['id']}: {samples[-1][1]['state']} in {samples[-1][0]:.0f} s")
            print(f"rows now:    {counts(env)}")


if __name__ == "__main__":
    main()
