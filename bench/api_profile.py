"""Worker CPU per API request, in one process: claim + judge cycles through Django's WSGI
handler (as a gunicorn sync worker calls it) on PostgreSQL, ``DEBUG=0``.

```
.venv/bin/python bench/api_profile.py                        # CPU per request
.venv/bin/python bench/api_profile.py --profile claim        # and cProfile of the claims
```

Creates ``verity_<name>`` on 127.0.0.1 (``--db``; dropped at the end), 60 queries x 40
items queued as review tasks, ``--reviewers`` reviewers with tokens; then, round robin,
each reviewer claims a task and judges it. Prints the median and mean CPU
(``time.process_time``) per request class. No network, no gunicorn: the figures are the
Django/DRF side of ``load_test.py``'s "worker CPU per request", less gunicorn's parsing.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _admin_sql(server: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(sql)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--db", default="verity_claim_profile")
    parser.add_argument("--cycles", type=int, default=400)
    parser.add_argument("--reviewers", type=int, default=10)
    parser.add_argument("--profile", choices=["claim", "judge"], default=None)
    parser.add_argument("--sqlite", action="store_true", help="a SQLite file instead")
    args = parser.parse_args()
    folder = Path(f"/tmp/{args.db}")
    folder.mkdir(exist_ok=True)
    url = f"sqlite:///{folder}/db.sqlite3" if args.sqlite else f"{args.server}/{args.db}"
    if args.sqlite:
        (folder / "db.sqlite3").unlink(missing_ok=True)
    else:
        _admin_sql(args.server, f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)')
        _admin_sql(args.server, f'CREATE DATABASE "{args.db}"')
    os.environ.update(
        {
            "DATABASE_URL": url,
            "DEBUG": "0",
            "SECRET_KEY": "profile-only-" + "x" * 40,
            "ALLOWED_HOSTS": "127.0.0.1",
            "VERITY_VAR_DIR": str(folder / "var"),
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
    )
    sys.path.insert(0, str(ROOT))
    try:
        return _run(args)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.sqlite:
            _admin_sql(args.server, f'DROP DATABASE IF EXISTS "{args.db}" WITH (FORCE)')


def _run(args: argparse.Namespace) -> int:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.core.handlers.wsgi import WSGIHandler

    from judgments.services import create_api_token, queue_unjudged, set_membership
    from tests.factories import make_collection, make_item, make_query, make_user

    collection = make_collection(slug="hot")
    queries = [make_query(collection, external_id=f"q{n}") for n in range(60)]
    items = [make_item(collection, external_id=f"d{n}") for n in range(40)]
    for source in ("run bm25", "run dense"):
        queue_unjudged(
            collection=collection,
            pairs=[(q.pk, i.pk, rank) for q in queries for rank, i in enumerate(items, 1)],
            source=source,
        )
    keys = []
    for n in range(args.reviewers):
        user = make_user(f"reviewer{n}")
        set_membership(collection=collection, user=user, role="reviewer")
        keys.append(create_api_token(user=user).key)
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    connection.close()

    app = WSGIHandler()
    base = "/api/collections/hot"

    def call(method: str, path: str, key: str, body: bytes = b"") -> tuple[str, bytes]:
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1:8000",
            "HTTP_AUTHORIZATION": f"Token {key}",
            "HTTP_X_FORWARDED_PROTO": "https",
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
            "wsgi.url_scheme": "http",
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": False,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
            "wsgi.version": (1, 0),
        }
        status: list[str] = []
        result = app(environ, lambda s, h, exc_info=None: status.append(s))
        data = b"".join(result)
        result.close()
        return status[0], data

    import json

    cpu: dict[str, list[float]] = {"claim": [], "judge": []}
    prof = cProfile.Profile(time.process_time) if args.profile else None
    for n in range(args.cycles):
        key = keys[n % len(keys)]
        if prof and args.profile == "claim" and n >= 20:
            prof.enable()
        t = time.process_time()
        status, data = call("POST", f"{base}/tasks/claim/", key)
        cpu["claim"].append(time.process_time() - t)
        if prof:
            prof.disable()
        if not status.startswith("200"):
            print("claim:", status, data[:300])
            return 1
        task = json.loads(data)
        body = json.dumps({"grade": n % 2, "client_key": f"k-{n}"}).encode()
        if prof and args.profile == "judge" and n >= 20:
            prof.enable()
        t = time.process_time()
        status, data = call("POST", f"{base}/tasks/{task['id']}/judge/", key, body)
        cpu["judge"].append(time.process_time() - t)
        if prof:
            prof.disable()
        if not status.startswith("201"):
            print("judge:", status, data[:300])
            return 1
    for name, values in cpu.items():
        warm = values[20:]
        print(
            f"{name}: median {statistics.median(warm) * 1000:.2f} ms, "
            f"mean {statistics.fmean(warm) * 1000:.2f} ms CPU per request ({len(warm)})"
        )
    print(f"load average {os.getloadavg()[0]:.1f}")
    if prof:
        out = io.StringIO()
        stats = pstats.Stats(prof, stream=out).sort_stats("cumulative")
        stats.print_stats(60)
        print(out.getvalue())
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(30)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
