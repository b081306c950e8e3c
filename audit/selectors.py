"""Reading the audit log: filtered, newest first, and as JSON Lines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Q, QuerySet
from django.utils import timezone

from .models import AuditEvent

#: The actions recorded today, for the filter's suggestions (a filter takes any name).
KNOWN_ACTIONS = (
    "login",
    "login.failed",
    "collection.create",
    "collection.settings",
    "member.add",
    "member.role",
    "member.adjudicate",
    "member.remove",
    "token.create",
    "token.rotate",
    "token.revoke",
    "snapshot.freeze",
    "export.qrels",
    "export.bundle",
    "export.report",
    "judge.configure",
    "job.retry",
    "job.cancel",
    "adjudication.decide",
)


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def audit_events(
    *,
    collection_id: int | None = None,
    collection_slug: str = "",
    action: str = "",
    actor: str = "",
    since: date | datetime | None = None,
    until: date | None = None,
) -> QuerySet[AuditEvent]:
    """Rows newest first. ``collection_id`` keeps one collection's rows (the collection
    page's log); ``action`` is a name (``token.revoke``) or a family (``token``: every
    ``token.*``); ``actor`` a username, or ``system``; ``since`` and ``until`` are days,
    both included (``since`` may be a moment)."""
    rows = AuditEvent.objects.all()
    if collection_id is not None:
        rows = rows.filter(collection_id=collection_id)
    if collection_slug:
        rows = rows.filter(collection_slug=collection_slug)
    if action:
        family = action.rstrip(".")
        rows = rows.filter(Q(action=action) | Q(action__startswith=family + "."))
    if actor:
        rows = rows.filter(actor_name="" if actor == "system" else actor)
    if since is not None:
        rows = rows.filter(at__gte=since if isinstance(since, datetime) else _day_start(since))
    if until is not None:
        rows = rows.filter(at__lt=_day_start(until + timedelta(days=1)))
    return rows.order_by("-at", "-id")


def event_json(event: AuditEvent) -> dict[str, Any]:
    """One row as the JSON Lines export and ``manage.py audit_log`` print it."""
    return {
        "id": event.pk,
        "at": event.at.isoformat(),
        "action": event.action,
        "actor": event.actor_name or None,
        "actor_id": event.actor_id,
        "collection": event.collection_slug or None,
        "collection_id": event.collection_id,
        "target": event.target,
        "before": event.before,
        "after": event.after,
        "detail": event.detail,
        "address": event.address,
    }


def jsonl_lines(rows: QuerySet[AuditEvent]) -> Iterator[str]:
    """Each row as one line of JSON, read in chunks (a large log is never held whole)."""
    for event in rows.iterator(chunk_size=2000):
        yield json.dumps(event_json(event), cls=DjangoJSONEncoder, ensure_ascii=False) + "\n"
