"""API views of collections, members, queries, items, judgments, tasks and snapshots.

Each view parses its input with a serializer, calls one service or selector, and
renders; access rules live in ``permissions.py``, error shapes in ``errors.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from django.db import connection
from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.cache import never_cache
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import exceptions, generics, mixins, serializers, status, viewsets
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from judgments.models import (
    ChangeSource,
    Collection,
    Item,
    Judgment,
    Membership,
    Query,
    ReviewTask,
    Role,
    Snapshot,
)
from judgments.selectors import (
    collections_for,
    collections_with_progress,
    diff_snapshots,
    queries_of,
    snapshot_canonical_lines,
    snapshot_of,
    snapshot_trec_lines,
)
from judgments.services import (
    JudgmentConflict,
    claim_next_task,
    freeze_snapshot,
    judge_task,
    record_judgment,
    record_judgment_once,
    remove_judgment,
    set_member_role,
    set_query_status,
    skip_task,
    update_collection_settings,
)

from . import serializers as s
from .errors import ApiError, ErrorSerializer
from .filters import ItemFilter, JudgmentFilter, QueryFilter, TaskFilter
from .permissions import CollectionScoped


def error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


def not_found(what: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"{what} not found in this collection.")


class NamedLookup:
    """``get_object`` by one URL keyword, with a 404 that names what was looked for."""

    lookup_what = "object"

    def get_object(self) -> Any:
        value = self.kwargs[self.lookup_url_kwarg or self.lookup_field]  # type: ignore[attr-defined]
        found = self.get_queryset().filter(**{self.lookup_field: value}).first()  # type: ignore[attr-defined]
        if found is None:
            raise not_found(f"{self.lookup_what} '{value}'")
        return found


# -- collections ----------------------------------------------------------------------------


def with_my_role(queryset: QuerySet[Collection], user: Any) -> QuerySet[Collection]:
    return queryset.annotate(
        my_role=Subquery(
            Membership.objects.filter(collection=OuterRef("pk"), user_id=user.pk).values("role")[:1]
        )
    )


@extend_schema(tags=["collections"])
class CollectionListView(generics.ListAPIView):
    """The collections you are a member of (every one, for a superuser), with your role
    and their queries counted by review status."""

    serializer_class = s.CollectionSerializer

    def get_queryset(self) -> QuerySet[Collection]:
        user = self.request.user
        visible = collections_for(user).values("pk")
        return with_my_role(collections_with_progress().filter(pk__in=visible), user).order_by(
            "slug"
        )


@extend_schema(tags=["collections"])
class CollectionDetailView(CollectionScoped, generics.GenericAPIView):
    serializer_class = s.CollectionSerializer
    required_roles = {"PATCH": Role.ADMIN}

    def get_object(self) -> Collection:
        return with_my_role(
            collections_with_progress().filter(pk=self.collection.pk), self.request.user
        ).get()

    def get(self, request: Request, slug: str) -> Response:
        """The collection: its scale, unit, settings, your role, and its progress."""
        return Response(self.get_serializer(self.get_object()).data)

    @extend_schema(request=s.CollectionSettingsInput, responses={200: s.CollectionSerializer})
    def patch(self, request: Request, slug: str) -> Response:
        """Change the collection's settings (admin): name, description, guidelines, pool
        depth. The scale, relevant grade and unit are fixed at creation."""
        data = s.CollectionSettingsInput(data=request.data)
        data.is_valid(raise_exception=True)
        update_collection_settings(collection=self.collection, **data.validated_data)
        return Response(self.get_serializer(self.get_object()).data)


MEMBER_CONFLICT = error(
    "The change would leave the collection without an admin, or the "
    "user is a member already (the message says which)."
)


@extend_schema_view(
    list=extend_schema(summary="List the members and their roles (admin)."),
    retrieve=extend_schema(summary="One member's role (admin)."),
    create=extend_schema(
        summary="Add a member with a role (admin).",
        request=s.MemberCreateInput,
        responses={201: s.MemberSerializer, 409: MEMBER_CONFLICT},
    ),
    partial_update=extend_schema(
        summary="Change a member's role (admin).",
        request=s.MemberRoleInput,
        responses={200: s.MemberSerializer, 409: MEMBER_CONFLICT},
    ),
    destroy=extend_schema(
        summary="Remove a member (admin).",
        responses={204: None, 409: MEMBER_CONFLICT},
    ),
)
@extend_schema(tags=["members"])
class MemberViewSet(
    CollectionScoped,
    NamedLookup,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = s.MemberSerializer
    required_roles = {m: Role.ADMIN for m in ("GET", "POST", "PATCH", "DELETE")}
    lookup_field = "user__username"
    lookup_url_kwarg = "username"
    lookup_what = "member"

    def get_queryset(self) -> QuerySet[Membership]:
        if self.schema_only():
            return Membership.objects.none()
        return (
            Membership.objects.filter(collection=self.collection)
            .select_related("user")
            .order_by("user__username")
        )

    def create(self, request: Request, slug: str) -> Response:
        data = s.MemberCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        user = data.validated_data["username"]
        held = self.get_queryset().filter(user=user).first()
        if held is not None:
            raise ApiError(
                409,
                f"{user.get_username()} is a member already, as {held.role}; change the role "
                f"with PATCH /api/collections/{slug}/members/{user.get_username()}/",
            )
        membership = set_member_role(
            collection=self.collection, user=user, role=data.validated_data["role"]
        )
        return Response(self.get_serializer(membership).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request: Request, slug: str, username: str) -> Response:
        membership = self.get_object()
        data = s.MemberRoleInput(data=request.data)
        data.is_valid(raise_exception=True)
        membership = set_member_role(
            collection=self.collection, user=membership.user, role=data.validated_data["role"]
        )
        return Response(self.get_serializer(membership).data)

    def destroy(self, request: Request, slug: str, username: str) -> Response:
        membership = self.get_object()
        set_member_role(collection=self.collection, user=membership.user, role=None)
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- queries and items ----------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(summary="The collection's queries, filtered by status and tag."),
    retrieve=extend_schema(summary="One query, with its status and evidence condition."),
    partial_update=extend_schema(
        summary="Set the query's review status.",
        description="`relevant` needs a relevant judgment; `no_answer` allows none. A "
        "refused change answers 409 and leaves the status as it was.",
        request=s.QueryStatusInput,
        responses={
            200: s.QuerySerializer,
            409: error("The judgments refuse this status (the message says why)."),
        },
    ),
)
@extend_schema(tags=["queries"])
class QueryViewSet(CollectionScoped, NamedLookup, viewsets.ReadOnlyModelViewSet):
    serializer_class = s.QuerySerializer
    filterset_class = QueryFilter
    lookup_field = "external_id"
    lookup_url_kwarg = "qid"
    lookup_what = "query"

    def get_queryset(self) -> QuerySet[Query]:
        if self.schema_only():
            return Query.objects.none()
        return (
            queries_of(self.collection)
            .annotate(n_judgments=Count("judgments"))
            .order_by("external_id")
        )

    def partial_update(self, request: Request, slug: str, qid: str) -> Response:
        query = self.get_object()
        data = s.QueryStatusInput(data=request.data)
        data.is_valid(raise_exception=True)
        set_query_status(
            query=query,
            status=data.validated_data["status"],
            by=request.user,
            source=ChangeSource.API,
        )
        return Response(self.get_serializer(self.get_object()).data)


@extend_schema_view(
    list=extend_schema(summary="The collection's items (id, title, text, url)."),
    retrieve=extend_schema(summary="One item."),
)
@extend_schema(tags=["items"])
class ItemViewSet(CollectionScoped, NamedLookup, viewsets.ReadOnlyModelViewSet):
    serializer_class = s.ItemSerializer
    filterset_class = ItemFilter
    lookup_field = "external_id"
    lookup_url_kwarg = "item_id"
    lookup_what = "item"

    def get_queryset(self) -> QuerySet[Item]:
        if self.schema_only():
            return Item.objects.none()
        return Item.objects.filter(collection=self.collection).order_by("external_id")


# -- judgments ------------------------------------------------------------------------------

ETAG_RE = re.compile(r'(?:W/)?"?([0-9]{1,18})"?')


def judgment_etag(judgment: Judgment) -> str:
    return f'"{judgment.version}"'


def if_match_version(request: Request) -> int:
    """The judgment version named by ``If-Match``: required (428), one strong or weak
    ETag such as ``"3"`` (400 otherwise)."""
    raw = request.headers.get("If-Match", "").strip()
    if not raw or raw == "*":
        raise ApiError(
            428,
            "This edit needs an If-Match header naming the version you read: send the ETag "
            'of GET on this judgment, e.g. If-Match: "3". Without it the edit could '
            "overwrite a change you have not seen.",
        )
    match = ETAG_RE.fullmatch(raw)
    if match is None:
        raise ApiError(
            400,
            f"If-Match {raw!r} is not a judgment's ETag; send the ETag header of GET on this "
            'judgment, e.g. If-Match: "3" (one version, no list).',
            errors=[{"field": "If-Match", "message": 'expected one ETag such as "3"'}],
        )
    return int(match.group(1))


def idempotency_key(request: Request, body_key: str | None) -> str | None:
    header = request.headers.get("Idempotency-Key")
    if header is not None:
        header = header.strip()
        if not header or len(header) > 100:
            raise serializers.ValidationError(
                {"Idempotency-Key": "must be 1 to 100 characters, e.g. a UUID"}
            )
    if header and body_key and header != body_key:
        raise serializers.ValidationError(
            {"client_key": "differs from the Idempotency-Key header; send one key, or the same"}
        )
    return header or body_key or None


IF_MATCH = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=True,
    description='The ETag of the judgment version this edit is based on, e.g. "3".',
)
IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    description=s.CLIENT_KEY_HELP,
)
ETAG_HEADER = OpenApiResponse(s.JudgmentSerializer, description="ETag: the judgment's version.")
CONFLICT_CREATE = OpenApiResponse(
    s.JudgmentConflictSerializer,
    description="The pair is judged already (`current`); edit it with PATCH and If-Match. "
    "Also any other refusal by the stored data (no `current` then).",
)
PRECONDITION = {
    412: OpenApiResponse(
        s.JudgmentConflictSerializer,
        description="Stale If-Match: the judgment changed since that version; `current` "
        "holds it now, and the ETag header its version. Reapply your edit to it.",
    ),
    428: error("If-Match is missing."),
    409: error("The stored data refuses the change (the message says what to change first)."),
}


def judgment_conflict(code: int, conflict: JudgmentConflict, slug: str) -> ApiError:
    current = (
        Judgment.objects.select_related("query__collection", "item", "reviewer")
        .filter(pk=conflict.current.pk)
        .first()
    ) or conflict.current
    hint = (
        f" To change it, send PATCH /api/collections/{slug}/judgments/{current.pk}/ with "
        f"If-Match: {judgment_etag(current)}."
        if code == 409
        else ""
    )
    return ApiError(
        code,
        str(conflict) + hint,
        extra={"current": s.JudgmentSerializer(current).data},
        headers={"ETag": judgment_etag(current)},
    )


def judgment_response(judgment: Judgment, *, created: bool, slug: str, replayed: bool) -> Response:
    judgment = Judgment.objects.select_related("query__collection", "item", "reviewer").get(
        pk=judgment.pk
    )
    response = Response(
        s.JudgmentSerializer(judgment).data,
        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
    )
    response["ETag"] = judgment_etag(judgment)
    response["Location"] = f"/api/collections/{slug}/judgments/{judgment.pk}/"
    if replayed:
        response["Idempotent-Replayed"] = "true"
    return response


@extend_schema_view(
    list=extend_schema(summary="The collection's current judgments."),
    retrieve=extend_schema(
        summary="One judgment; its ETag header is the version to send in If-Match.",
        responses={200: ETAG_HEADER},
    ),
    create=extend_schema(
        summary="Judge a (query, item) pair.",
        description="201 with the new judgment. With a client key (Idempotency-Key header "
        "or `client_key`), a retry returns the judgment that key created, as it is now, "
        "with 200 and `Idempotent-Replayed: true`; a key used for another judgment is "
        "refused (409).",
        parameters=[IDEMPOTENCY_KEY],
        request=s.JudgmentCreateInput,
        responses={201: ETAG_HEADER, 200: ETAG_HEADER, 409: CONFLICT_CREATE},
    ),
    partial_update=extend_schema(
        summary="Change a judgment's grade or note (If-Match required).",
        parameters=[IF_MATCH],
        request=s.JudgmentUpdateInput,
        responses={200: ETAG_HEADER, **PRECONDITION},
    ),
    destroy=extend_schema(
        summary="Remove a judgment, as an undo (If-Match required).",
        description="Its history keeps the removal; the pair's review task, if it had one, "
        "goes back to the queue.",
        parameters=[IF_MATCH],
        responses={204: None, **PRECONDITION},
    ),
)
@extend_schema(tags=["judgments"])
class JudgmentViewSet(
    CollectionScoped, NamedLookup, mixins.ListModelMixin, viewsets.GenericViewSet
):
    serializer_class = s.JudgmentSerializer
    filterset_class = JudgmentFilter
    lookup_field = "pk"
    lookup_what = "judgment"

    def get_queryset(self) -> QuerySet[Judgment]:
        if self.schema_only():
            return Judgment.objects.none()
        return (
            Judgment.objects.filter(query__collection=self.collection)
            .select_related("query__collection", "item", "reviewer")
            .order_by("query__external_id", "item__external_id")
        )

    def retrieve(self, request: Request, slug: str, pk: int) -> Response:
        judgment = self.get_object()
        response = Response(self.get_serializer(judgment).data)
        response["ETag"] = judgment_etag(judgment)
        return response

    def create(self, request: Request, slug: str) -> Response:
        data = s.JudgmentCreateInput(data=request.data, context={"collection": self.collection})
        data.is_valid(raise_exception=True)
        v = data.validated_data
        key = idempotency_key(request, v.get("client_key"))
        try:
            judgment, created = record_judgment_once(
                query=v["query"],
                item=v["item"],
                grade=v["grade"],
                reviewer=request.user,
                client_key=key,
                note=v["note"],
                source=ChangeSource.API,
            )
        except JudgmentConflict as conflict:
            raise judgment_conflict(409, conflict, slug) from None
        return judgment_response(judgment, created=created, slug=slug, replayed=not created)

    def partial_update(self, request: Request, slug: str, pk: int) -> Response:
        judgment = self.get_object()
        expected = if_match_version(request)
        data = s.JudgmentUpdateInput(data=request.data, context={"collection": self.collection})
        data.is_valid(raise_exception=True)
        try:
            judgment = record_judgment(
                query=judgment.query,
                item=judgment.item,
                grade=data.validated_data.get("grade", judgment.grade),
                note=data.validated_data.get("note", judgment.note),
                reviewer=request.user,
                expected_version=expected,
                source=ChangeSource.API,
            )
        except JudgmentConflict as conflict:
            raise judgment_conflict(412, conflict, slug) from None
        return judgment_response(judgment, created=False, slug=slug, replayed=False)

    def destroy(self, request: Request, slug: str, pk: int) -> Response:
        judgment = self.get_object()
        expected = if_match_version(request)
        try:
            remove_judgment(
                query=judgment.query,
                item=judgment.item,
                reviewer=request.user,
                expected_version=expected,
                source=ChangeSource.API,
            )
        except JudgmentConflict as conflict:
            raise judgment_conflict(412, conflict, slug) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


# -- review tasks ---------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(summary="The collection's review tasks, highest priority first."),
    retrieve=extend_schema(summary="One review task, with the query and item to read."),
)
@extend_schema(tags=["tasks"])
class TaskViewSet(
    CollectionScoped,
    NamedLookup,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = s.TaskSerializer
    filterset_class = TaskFilter
    lookup_field = "pk"
    lookup_what = "review task"

    def get_queryset(self) -> QuerySet[ReviewTask]:
        if self.schema_only():
            return ReviewTask.objects.none()
        return (
            ReviewTask.objects.filter(collection=self.collection)
            .select_related("query", "item", "claimed_by")
            .prefetch_related("sources")
            .order_by("-priority", "pk")
        )

    @extend_schema(
        summary="Claim the next open task, with a 10-minute lease.",
        description="A reviewer holding a live lease gets that task back. 204 when no task "
        "is open for you (skipped ones are not offered again).",
        request=None,
        responses={200: s.TaskSerializer, 204: OpenApiResponse(description="Queue empty.")},
    )
    def claim(self, request: Request, slug: str) -> Response:
        task = claim_next_task(reviewer=request.user, collection=self.collection)
        if task is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(self.get_serializer(self.get_queryset().get(pk=task.pk)).data)

    @extend_schema(
        summary="Give back a task you hold; it is not offered to you again.",
        request=None,
        responses={204: None, 409: error("You do not hold this task (its lease may have ended).")},
    )
    def skip(self, request: Request, slug: str, pk: int) -> Response:
        skip_task(task=self.get_object(), reviewer=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Judge the task's (query, item) pair; this completes the task.",
        description="201 with the judgment; refused (409) while another reviewer holds the "
        "task, or when the pair was judged meanwhile (`current`). A client key makes a retry "
        "return the judgment it created (200).",
        parameters=[IDEMPOTENCY_KEY],
        request=s.TaskJudgeInput,
        responses={201: ETAG_HEADER, 200: ETAG_HEADER, 409: CONFLICT_CREATE},
    )
    def judge(self, request: Request, slug: str, pk: int) -> Response:
        task = self.get_object()
        data = s.TaskJudgeInput(data=request.data, context={"collection": self.collection})
        data.is_valid(raise_exception=True)
        v = data.validated_data
        key = idempotency_key(request, v.get("client_key"))
        try:
            judgment, created = judge_task(
                task=task,
                reviewer=request.user,
                grade=v["grade"],
                note=v["note"],
                client_key=key,
                source=ChangeSource.API,
            )
        except JudgmentConflict as conflict:
            raise judgment_conflict(409, conflict, slug) from None
        return judgment_response(judgment, created=created, slug=slug, replayed=not created)


# -- snapshots ------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(summary="The collection's snapshots, newest first."),
    retrieve=extend_schema(summary="One snapshot: its content hash and counts."),
    create=extend_schema(
        summary="Freeze the collection's labels as the next snapshot (evaluator).",
        description="201 with the new version; 200 with the latest one (`created` false) "
        "when nothing changed since it.",
        request=s.FreezeInput,
        responses={201: s.FreezeResultSerializer, 200: s.FreezeResultSerializer},
    ),
)
@extend_schema(tags=["snapshots"])
class SnapshotViewSet(CollectionScoped, mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = s.SnapshotSerializer
    required_roles = {"create": Role.EVALUATOR}
    lookup_field = "number"

    def get_queryset(self) -> QuerySet[Snapshot]:
        if self.schema_only():
            return Snapshot.objects.none()
        return (
            Snapshot.objects.filter(collection=self.collection)
            .select_related("created_by")
            .order_by("-number")
        )

    def retrieve(self, request: Request, slug: str, number: int) -> Response:
        return Response(self.get_serializer(snapshot_of(self.collection, number)).data)

    def create(self, request: Request, slug: str) -> Response:
        data = s.FreezeInput(data=request.data)
        data.is_valid(raise_exception=True)
        snapshot, created = freeze_snapshot(
            collection=self.collection, by=request.user, note=data.validated_data["note"]
        )
        body = s.FreezeResultSerializer(snapshot, context={"created": created}).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(
        summary="What changed from snapshot {number} to snapshot {other}.",
        responses={200: s.SnapshotDiffSerializer},
    )
    def diff(self, request: Request, slug: str, number: int, other: int) -> Response:
        a, b = snapshot_of(self.collection, number), snapshot_of(self.collection, other)
        return Response(s.SnapshotDiffSerializer(diff_snapshots(a, b)).data)


class IgnoreFormatParameter(DefaultContentNegotiation):
    """The qrels export's ``?format=`` picks the export format; errors are JSON."""

    def select_renderer(
        self, request: Request, renderers: list[Any], format_suffix: str | None = None
    ) -> tuple[Any, str]:
        return renderers[0], renderers[0].media_type


QRELS_MEDIA_TYPES = {"trec": "text/plain; charset=utf-8", "jsonl": "application/jsonl"}
TRUE, FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off", ""}


def _encoded(lines: Iterator[str]) -> Iterator[bytes]:
    for line in lines:
        yield line.encode("utf-8")


@extend_schema(
    tags=["snapshots"],
    summary="Export a snapshot's qrels (evaluator), streamed.",
    description="TREC qrels `qid 0 docid grade` sorted by (qid, docid), byte-identical to "
    "`manage.py export_qrels SLUG --snapshot N`; `with_unjudged=1` adds open review "
    "tasks as grade -1. `format=jsonl` gives the snapshot's canonical form (statuses, "
    "evidence, unjudged markers), whose sha256 is the snapshot's content hash. The ETag is "
    '`"sha256:<content hash>"` in both formats; If-None-Match with it answers 304.',
    parameters=[
        OpenApiParameter(
            "format",
            OpenApiTypes.STR,
            enum=list(QRELS_MEDIA_TYPES),
            default="trec",
            description="trec (text/plain) or jsonl (canonical form, application/jsonl).",
        ),
        OpenApiParameter(
            "with_unjudged",
            OpenApiTypes.BOOL,
            default=False,
            description="trec: add 'qid 0 docid -1' for the snapshot's unjudged markers.",
        ),
    ],
    responses={
        (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="TREC qrels."),
        (200, "application/jsonl"): OpenApiResponse(
            OpenApiTypes.STR, description="The canonical form, one JSON array per line."
        ),
        304: OpenApiResponse(description="If-None-Match named this ETag: unchanged."),
        400: error("format or with_unjudged has a value not listed."),
    },
)
class QrelsView(CollectionScoped, APIView):
    required_roles = {"GET": Role.EVALUATOR}
    renderer_classes = [JSONRenderer]
    content_negotiation_class = IgnoreFormatParameter

    def get(self, request: Request, slug: str, number: int) -> HttpResponse:
        fmt = request.query_params.get("format", "trec")
        if fmt not in QRELS_MEDIA_TYPES:
            raise serializers.ValidationError({"format": f"{fmt!r} is not one of trec, jsonl"})
        flag = request.query_params.get("with_unjudged", "0").strip().lower()
        if flag not in TRUE | FALSE:
            raise serializers.ValidationError({"with_unjudged": f"{flag!r} is not 1 or 0"})
        snapshot = snapshot_of(self.collection, number)
        etag = f'"sha256:{snapshot.content_hash}"'
        if etag in [t.strip() for t in request.headers.get("If-None-Match", "").split(",")]:
            response = HttpResponse(status=304)
        else:
            chunks = (
                snapshot_canonical_lines(snapshot)
                if fmt == "jsonl"
                else _encoded(snapshot_trec_lines(snapshot, with_unjudged=flag in TRUE))
            )
            response = StreamingHttpResponse(chunks, content_type=QRELS_MEDIA_TYPES[fmt])
            suffix = "jsonl" if fmt == "jsonl" else "qrels"
            response["Content-Disposition"] = (
                f'inline; filename="{self.collection.slug}-v{snapshot.number}.{suffix}"'
            )
        response["ETag"] = etag
        return response


# -- health ---------------------------------------------------------------------------------


@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness and database check for load balancers: 200 when a query runs, else 503."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # any database failure means "not ready"
        return JsonResponse(
            {"status": "error", "database": f"unavailable: {type(exc).__name__}"}, status=503
        )
    return JsonResponse({"status": "ok", "database": "ok"})
