"""Who may see and do what: the collections a user may see, and their role in one."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import QuerySet

from ..models import ApiToken, Collection, Membership, Role, role_allows
from ..rows import Columns


def collections_for(user: Any) -> QuerySet[Collection]:
    """The collections this user may see: every one for a superuser, else by membership."""
    if not getattr(user, "is_authenticated", False):
        return Collection.objects.none()
    if user.is_superuser:
        return Collection.objects.all()
    return Collection.objects.filter(members__user=user)


def role_of(user: Any, collection: Collection) -> str | None:
    """The user's role in the collection (``admin`` for a superuser), or ``None``."""
    if not getattr(user, "is_authenticated", False):
        return None
    if user.is_superuser:
        return Role.ADMIN
    return (
        Membership.objects.filter(user=user, collection=collection)
        .values_list("role", flat=True)
        .first()
    )


def may(user: Any, collection: Collection, role: str) -> bool:
    """Whether the user holds ``role`` or a stronger one in the collection."""
    return role_allows(role_of(user, collection), role)


def may_adjudicate(user: Any, collection: Collection) -> bool:
    """Deciding disagreements: collection admins, and members granted ``can_adjudicate``."""
    if role_of(user, collection) == Role.ADMIN:
        return True
    return Membership.objects.filter(user=user, collection=collection, can_adjudicate=True).exists()


def may_see_assessments(user: Any, collection: Collection) -> bool:
    """Who may see assessments, or any figure derived from them (agreement, confusion of
    grades, each assessor against the resolved labels, scores under one assessor's labels,
    one assessor's qrels): evaluators and admins, never a plain reviewer, whatever
    capability they hold. With several assessors per item a reviewer knows their own
    grades, so any such figure could tell them another assessor's grade (blind overlap).
    The one rule every page, API answer and export asks; management commands are the
    operator's and need none."""
    return may(user, collection, Role.EVALUATOR)


def may_see_labels(user: Any, collection: Collection) -> bool:
    """Who may see a collection's labels (judgments: resolved labels), or anything derived
    from them (a pair's state, its history, snapshot contents and diffs, qrels, scores).
    With one assessor per item: every member. With several: only those who may see the
    assessments (``may_see_assessments``); a plain reviewer knows their own grade, so the
    resolved label, or whether a pair they assessed is resolved or awaits adjudication,
    would tell them the other assessors' grades. They see their own assessments and the
    tasks they are given; an adjudicator also sees the assessments of the pairs they
    decide, on the adjudication queue. The one rule every page, API answer and export
    asks before showing a label."""
    if not collection.has_overlap:
        return True
    return may_see_assessments(user, collection)


def may_score(user: Any, collection: Any) -> bool:
    """Scoring stores evaluations: an evaluator's action (``Role.EVALUATOR``)."""
    return may(user, collection, Role.EVALUATOR)


def may_create_collections(user: Any) -> bool:
    """Who may create collections (``/c/new/``), by ``VERITY_COLLECTION_CREATORS``:
    ``superusers`` (the default), ``staff`` (staff and superusers) or ``everyone`` (any
    signed-in, active user). The creator becomes the new collection's admin."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    who = settings.VERITY_COLLECTION_CREATORS
    if user.is_superuser or who == "everyone":
        return True
    return who == "staff" and bool(user.is_staff)


def member_collection(user: Any, slug: str) -> Collection | None:
    """The collection ``slug`` if this (authenticated) user may see it, with the caller's
    role as ``held_role`` (``admin`` for a superuser): ``collections_for(user)`` and
    ``role_of`` in one statement, written once per process (``rows.Columns``), since
    every request under /api/collections/<slug>/ asks it (issue 29)."""
    if user.is_superuser:
        found = Collection.objects.filter(slug=slug).first()
        if found is not None:
            found.held_role = Role.ADMIN
        return found
    with connection.cursor() as cursor:
        cursor.execute(_member_collection_sql(), [user.pk, slug])
        row = cursor.fetchone()
    if row is None:
        return None
    found = _COLLECTION.build(row)
    found.held_role = row[-1]
    return found


_COLLECTION = Columns(Collection, "c")
_SQL: dict[str, str] = {}


def _member_collection_sql() -> str:
    if connection.vendor not in _SQL:
        qn = connection.ops.quote_name
        _SQL[connection.vendor] = (
            f"SELECT {_COLLECTION.sql()}, m.{qn('role')} "
            f"FROM {qn(Collection._meta.db_table)} c "
            f"INNER JOIN {qn(Membership._meta.db_table)} m "
            f"ON m.{qn('collection_id')} = c.{qn('id')} "
            f"WHERE m.{qn('user_id')} = %s AND c.{qn('slug')} = %s "
            f"ORDER BY c.{qn('id')} LIMIT 1"
        )
    return _SQL[connection.vendor]


def api_token_by_hash(key_hash: str) -> ApiToken | None:
    """The API token with this key hash, with its user and the collection it is limited
    to (``None`` when unlimited) joined: one statement written once per process
    (``rows.Columns``), since every API request asks it (issue 29). Whether it may be
    used (revoked, expired, an inactive user, its scope) is the caller's check."""
    columns = _token_columns()
    with connection.cursor() as cursor:
        cursor.execute(_token_sql(columns), [key_hash])
        row = cursor.fetchone()
    if row is None:
        return None
    token, user, limited = columns
    found = token.build(row)
    found.user = user.build(row, token.width)
    found.collection = limited.build(row, token.width + user.width)
    return found


_TOKEN_COLUMNS: list[tuple[Columns, Columns, Columns]] = []


def _token_columns() -> tuple[Columns, Columns, Columns]:
    if not _TOKEN_COLUMNS:  # the user model is known once the apps are loaded
        _TOKEN_COLUMNS.append(
            (Columns(ApiToken, "t"), Columns(get_user_model(), "u"), Columns(Collection, "c"))
        )
    return _TOKEN_COLUMNS[0]


def _token_sql(columns: tuple[Columns, Columns, Columns]) -> str:
    key = f"token {connection.vendor}"
    if key not in _SQL:
        qn = connection.ops.quote_name
        token, user, limited = columns
        _SQL[key] = (
            f"SELECT {token.sql()}, {user.sql()}, {limited.sql()} "
            f"FROM {qn(ApiToken._meta.db_table)} t "
            f"INNER JOIN {qn(user.model._meta.db_table)} u ON u.{qn('id')} = t.{qn('user_id')} "
            f"LEFT OUTER JOIN {qn(Collection._meta.db_table)} c "
            f"ON c.{qn('id')} = t.{qn('collection_id')} "
            f"WHERE t.{qn('key_hash')} = %s"
        )
    return _SQL[key]
