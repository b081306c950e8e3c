"""Is the job queue reachable? For ``/healthz``: with the RQ backend, a ping of its Redis
(a web process that cannot reach it can start no job); the database backend's queue is
a table of the database, which ``/healthz`` checks already."""

from __future__ import annotations

from django.conf import settings

from .services import uses_rq

#: Seconds a health probe waits for Redis.
PROBE_TIMEOUT = 2.0


def queue_problem() -> str | None:
    """Why the job queue cannot take jobs now, or ``None`` when it can."""
    if not uses_rq():
        return None
    import redis

    url = settings.RQ_QUEUES["default"]["URL"]
    try:
        client = redis.Redis.from_url(
            url, socket_connect_timeout=PROBE_TIMEOUT, socket_timeout=PROBE_TIMEOUT
        )
        client.ping()
    except Exception as exc:
        return f"unavailable: Redis {type(exc).__name__}"
    return None
