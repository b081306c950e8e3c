"""What several management commands resolve from their arguments, refused as a
``CommandError`` that says what exists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from judgments.models import Collection, Snapshot
from judgments.selectors import collection_by_slug, snapshot_of


def collection_named(slug: str) -> Collection:
    """The collection with this slug; the error lists the collections there are."""
    try:
        return collection_by_slug(slug)
    except Collection.DoesNotExist as exc:
        raise CommandError(str(exc)) from None


def collection_and_snapshot(slug: str, number: int | None) -> tuple[Collection, Snapshot | None]:
    """The collection, and its snapshot ``number`` when one was asked for; the errors
    list the collections or versions there are."""
    collection = collection_named(slug)
    if number is None:
        return collection, None
    try:
        return collection, snapshot_of(collection, number)
    except Snapshot.DoesNotExist as exc:
        raise CommandError(str(exc)) from None


def user_named(username: str | None) -> Any:
    """The user named by a ``--by`` option, or ``None`` when it was not given."""
    if not username:
        return None
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise CommandError(f"no user '{username}'")
    return user


def file_bytes(path: str) -> bytes:
    """A file named on the command line, whole; unreadable, a ``CommandError`` saying why."""
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise CommandError(f"{path}: cannot read it ({e.strerror})") from None
