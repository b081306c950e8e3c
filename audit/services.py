"""Recording into the audit log, and its retention.

``record`` is called inside the service that makes the change, in the change's transaction:
a change that rolls back leaves no row, and a row never exists without its change.
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from .models import AuditEvent


def client_address(request: Any) -> str | None:
    """The client's address: ``REMOTE_ADDR``, unless ``VERITY_TRUSTED_PROXIES`` = N > 0
    reverse proxies stand in front: then the Nth address from the right of
    ``X-Forwarded-For``, the one the outermost trusted proxy saw. Addresses further left
    are the client's to forge. (Login lock-outs and API tokens' last use read it too.)"""
    if request is None:
        return None
    meta = getattr(request, "META", {})
    hops = getattr(settings, "VERITY_TRUSTED_PROXIES", 0)
    if hops > 0:
        forwarded = [a.strip() for a in meta.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        forwarded = [a for a in forwarded if a]
        if len(forwarded) >= hops:
            return _valid(forwarded[-hops])
    return _valid(meta.get("REMOTE_ADDR") or "")


def _valid(address: str) -> str | None:
    """An address the database's ``inet`` column takes, else None (a proxy's header is
    text; a malformed one must not turn a login or a request into a 500)."""
    try:
        return str(ipaddress.ip_address(address))
    except ValueError:
        return None


def record(
    action: str,
    *,
    actor: Any = None,
    collection: Any = None,
    target: str = "",
    before: Any = None,
    after: Any = None,
    detail: dict[str, Any] | None = None,
    request: Any = None,
) -> AuditEvent:
    """Append one row: ``action`` (a dotted name, e.g. ``member.role``) by ``actor``.

    ``actor`` is a user or None (the system); ``collection`` a Collection or None;
    ``request``, when given, supplies the actor (if not given) and the client address.
    """
    if actor is None and request is not None:
        user = getattr(request, "user", None)
        actor = user if getattr(user, "is_authenticated", False) else None
    return AuditEvent.objects.create(
        at=timezone.now(),
        action=action,
        actor_id=getattr(actor, "pk", None),
        actor_name=getattr(actor, "username", "") or "",
        collection_id=getattr(collection, "pk", None),
        collection_slug=getattr(collection, "slug", "") or "",
        target=str(target)[:300],
        before=before,
        after=after,
        detail=detail or {},
        address=client_address(request),
    )


def prune(*, days: int | None = None) -> int:
    """Delete rows older than ``days`` (default ``VERITY_AUDIT_RETENTION_DAYS``; 0 keeps all)."""
    days = settings.VERITY_AUDIT_RETENTION_DAYS if days is None else days
    if not days:
        return 0
    cutoff = timezone.now() - timedelta(days=days)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL verity.audit_prune = 'on'")
        # The queryset refuses delete(): retention is the one DELETE, in SQL, on purpose.
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {AuditEvent._meta.db_table} WHERE at < %s", [cutoff])
            return cursor.rowcount
