"""API views of judgments, and the HTTP shape of their concurrency: ETags and If-Match
(412 on a stale version, 428 when missing), idempotency keys, and conflict responses."""

from __future__ import annotations

import re

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from judgments.models import ChangeSource, Judgment, TokenScope
from judgments.services import (
    JudgmentConflict,
    edit_judgment,
    record_judgment_once,
    remove_judgment,
)

from .. import serializers as s
from ..errors import ApiError
from ..filters import JudgmentFilter
from ..permissions import CollectionScoped
from .common import NamedLookup, error, not_found

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
    # What ETAG_RE reads: one version, quoted or not, strong or weak (a list is a 400).
    {"type": "string", "pattern": '^(W/)?"?[0-9]{1,18}"?$'},
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
    """The judgment as the services return it: with its query (and collection), item and
    reviewer loaded, the values it was stored with; no read back."""
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
    labels = True
    serializer_class = s.JudgmentSerializer
    filterset_class = JudgmentFilter
    lookup_field = "pk"
    lookup_what = "judgment"
    token_scopes = {m: TokenScope.JUDGE for m in ("create", "partial_update", "destroy")}

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
        try:
            expected = if_match_version(request)
        except ApiError:
            self.get_object()  # an unknown judgment answers 404 before a missing If-Match
            raise
        data = s.JudgmentUpdateInput(data=request.data, context={"collection": self.collection})
        data.is_valid(raise_exception=True)
        try:
            # By pk: the service's one locking read finds the judgment (404 if it is not
            # this collection's), so no read of it here first.
            judgment = edit_judgment(
                collection=self.collection,
                judgment_id=pk,
                grade=data.validated_data.get("grade"),
                note=data.validated_data.get("note"),
                reviewer=request.user,
                expected_version=expected,
                source=ChangeSource.API,
            )
        except Judgment.DoesNotExist:
            raise not_found(f"{self.lookup_what} '{pk}'") from None
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
