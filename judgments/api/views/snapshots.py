"""API views of snapshots: list, freeze, diff, the streamed qrels export, and the export
as a background job for large snapshots."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import exceptions, mixins, serializers, status, viewsets
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit.services import record
from jobs.api import JOB_ACCEPTED, job_accepted, wants_async
from judgments.models import Judgment, Role, Snapshot, TokenScope
from judgments.selectors import (
    diff_snapshots,
    may_see_assessments,
    snapshot_assessor_lines,
    snapshot_canonical_lines,
    snapshot_of,
    snapshot_trec_lines,
)
from judgments.services import freeze_snapshot
from judgments.tasks import start_freeze, start_qrels_export

from .. import serializers as s
from ..permissions import CollectionScoped
from .common import error


@extend_schema_view(
    list=extend_schema(summary="The collection's snapshots, newest first."),
    retrieve=extend_schema(summary="One snapshot: its content hash and counts."),
    create=extend_schema(
        summary="Freeze the collection's labels as the next snapshot (evaluator).",
        description="201 with the new version; 200 with the latest one (`created` false) "
        "when nothing changed since it. A collection with more than VERITY_INLINE_MAX_ROWS "
        "judgments (200,000 by default), or any with `Prefer: respond-async`, is frozen by a "
        "background job: 202 with `Location: /api/jobs/<id>/`.",
        request=s.FreezeInput,
        responses={
            201: s.FreezeResultSerializer,
            200: s.FreezeResultSerializer,
            202: JOB_ACCEPTED,
        },
    ),
)
@extend_schema(tags=["snapshots"])
class SnapshotViewSet(CollectionScoped, mixins.ListModelMixin, viewsets.GenericViewSet):
    labels = frozenset({"diff"})
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

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        if not self.schema_only():
            context["blind"] = not self.sees_labels
        return context

    def retrieve(self, request: Request, slug: str, number: int) -> Response:
        return Response(self.get_serializer(snapshot_of(self.collection, number)).data)

    def create(self, request: Request, slug: str) -> Response:
        data = s.FreezeInput(data=request.data)
        data.is_valid(raise_exception=True)
        size = Judgment.objects.filter(query__collection=self.collection).count()
        if wants_async(request) or size > settings.VERITY_INLINE_MAX_ROWS:
            job = start_freeze(
                collection=self.collection, by=request.user, note=data.validated_data["note"]
            )
            return job_accepted(job)
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


class QrelsExportInput(serializers.Serializer):
    format = serializers.ChoiceField(choices=["trec", "jsonl"], default="trec")
    with_unjudged = serializers.BooleanField(default=False)


@extend_schema(tags=["snapshots"])
class QrelsExportJobView(CollectionScoped, APIView):
    required_roles = {"POST": Role.EVALUATOR}
    token_scopes = {"POST": TokenScope.READ}  # reading qrels, as a job: GET …/qrels's bytes

    @extend_schema(
        summary="Export a snapshot's qrels to a file, as a background job (evaluator).",
        description="For snapshots too large to stream comfortably: 202 with `Location: "
        "/api/jobs/<id>/`; when done, the job's `result.download_url` serves the file "
        "(the same bytes as GET …/qrels with the same parameters).",
        request=QrelsExportInput,
        responses={202: JOB_ACCEPTED},
    )
    def post(self, request: Request, slug: str, number: int) -> Response:
        data = QrelsExportInput(data=request.data)
        data.is_valid(raise_exception=True)
        snapshot = snapshot_of(self.collection, number)
        job = start_qrels_export(
            snapshot=snapshot,
            fmt=data.validated_data["format"],
            with_unjudged=data.validated_data["with_unjudged"],
            by=request.user,
            request=request,
        )
        return job_accepted(job)


class IgnoreFormatParameter(DefaultContentNegotiation):
    """The qrels export's ``?format=`` picks the export format; errors are JSON."""

    def select_renderer(
        self, request: Request, renderers: list[Any], format_suffix: str | None = None
    ) -> tuple[Any, str]:
        return renderers[0], renderers[0].media_type


#: Who made the exported labels: TREC qrels have no place for it, so a header says it.
LABELS_HEADER = "Verity-Label-Sources"


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
    '`"sha256:<content hash>"` in both formats; If-None-Match with it answers 304. The '
    "`Verity-Label-Sources` header counts the labels by who made them: `people=N`, and "
    "`model:<judge>=M` for each model judge whose proposals the collection's policy "
    "accepted (in TREC qrels they are plain lines; the JSONL form marks them).",
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
        OpenApiParameter(
            "assessor",
            OpenApiTypes.STR,
            description="This assessor's frozen assessments instead of the resolved "
            "labels (a collection with several assessors per item): trec gives "
            "`qid 0 docid grade` lines, jsonl the canonical form's "
            '`["assessment",QID,ITEM,ASSESSOR,GRADE]` lines that name them.',
        ),
    ],
    responses={
        (200, "text/plain"): OpenApiResponse(OpenApiTypes.STR, description="TREC qrels."),
        (200, "application/jsonl"): OpenApiResponse(
            OpenApiTypes.STR, description="The canonical form, one JSON array per line."
        ),
        304: OpenApiResponse(description="If-None-Match named this ETag: unchanged."),
        400: error("format or with_unjudged has a value not listed."),
        404: error("The snapshot, or the assessor in it, does not exist."),
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
        assessor = request.query_params.get("assessor") or None
        if (assessor is not None or fmt == "jsonl") and not may_see_assessments(
            request.user, self.collection
        ):  # one assessor's labels, or the canonical form that keeps every assessment
            raise exceptions.PermissionDenied("Assessments are for evaluators and admins.")
        etag = f'"sha256:{snapshot.content_hash}"'
        if assessor is not None:  # one assessor's lines: a representation of their own
            name = hashlib.sha256(assessor.encode()).hexdigest()[:16]
            etag = f'"sha256:{snapshot.content_hash}.assessor.{name}"'
        if etag in [t.strip() for t in request.headers.get("If-None-Match", "").split(",")]:
            response = HttpResponse(status=304)
        else:
            try:
                chunks = (
                    snapshot_assessor_lines(snapshot, assessor)
                    if fmt == "jsonl" and assessor is not None
                    else snapshot_canonical_lines(snapshot)
                    if fmt == "jsonl"
                    else _encoded(
                        snapshot_trec_lines(snapshot, with_unjudged=flag in TRUE, assessor=assessor)
                    )
                )
            except LookupError as e:
                raise exceptions.NotFound(str(e)) from None
            # Audited as it leaves (a GET that appends to the log, as an access log does:
            # RFC 9110 9.2.1); a 304 or a HEAD sent none of it, so it is not an export.
            if request.method == "GET":
                record(
                    "export.qrels",
                    collection=self.collection,
                    target=f"v{snapshot.number}",
                    detail={
                        "format": fmt,
                        "with_unjudged": flag in TRUE,
                        **({"assessor": assessor} if assessor is not None else {}),
                    },
                    request=request,
                )
            response = StreamingHttpResponse(chunks, content_type=QRELS_MEDIA_TYPES[fmt])
            suffix = "jsonl" if fmt == "jsonl" else "qrels"
            response["Content-Disposition"] = (
                f'inline; filename="{self.collection.slug}-v{snapshot.number}.{suffix}"'
            )
        response["ETag"] = etag
        response[LABELS_HEADER] = snapshot.label_counts
        return response
