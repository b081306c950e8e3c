"""API views of runs, unit mappings and evaluations, under ``/api/collections/<slug>/``.

Uploads are multipart: the file streams to a temporary file on disk (never into memory),
is handed to the service by path under its own name, and is removed afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db import IntegrityError
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from judgments.api.errors import ApiError
from judgments.api.permissions import CollectionScoped
from judgments.api.uploads import staged_upload, stream_uploads_to_disk
from judgments.api.views import NamedLookup, error
from judgments.models import Role, Snapshot
from judgments.selectors import snapshot_of
from scoring import engine
from scoring.models import Evaluation, EvaluationQuery, Run, RunStage, UnitMapping
from scoring.selectors import evaluation_report, run_by_name, stage_of
from scoring.services import RunImportError, import_run, import_unit_mapping, score_run_stage

from . import serializers as s

TOO_LARGE = error("The request body is over VERITY_MAX_UPLOAD_BYTES; nothing was read.")
REFUSED_FILE = error(
    "The request or the file is invalid; for a file, `errors` lists each problem with its "
    "file name and line, and nothing was stored."
)


def refused_file(exc: RunImportError, path: Path) -> ApiError:
    """The reader's errors as the client knows the file: by its own name (not the
    temporary path), and with the form field where the command line says --dedup."""

    def client_side(message: str) -> str:
        return (
            message.replace(str(path), path.name)
            .replace("pass --dedup first", "send dedup=first")
            .replace("pass --ignore-unknown-queries", "send ignore_unknown_queries=true")
        )

    messages = [client_side(m) for m in exc.errors] or [client_side(str(exc))]
    return ApiError(
        400, client_side(str(exc)), errors=[{"field": "file", "message": m} for m in messages]
    )


class StreamedUploads:
    """Upload views: multipart bodies, files streamed to disk with a size limit."""

    parser_classes = [MultiPartParser]

    def initialize_request(self, request: Any, *args: Any, **kwargs: Any) -> Request:
        # Before DRF (or the CSRF check) reads the body: afterwards it is too late.
        stream_uploads_to_disk(request)
        return super().initialize_request(request, *args, **kwargs)  # type: ignore[misc]


@extend_schema_view(
    list=extend_schema(summary="The collection's runs, newest first."),
    retrieve=extend_schema(summary="One run and its stages."),
    create=extend_schema(
        summary="Upload a run file (evaluator), multipart.",
        description="The file is validated whole before anything is stored: a refused file "
        "answers 400 listing each problem as 'file line N: ...'. For every collection query, "
        "the unjudged items within the pool depth become review tasks.",
        request=s.RunUploadInput,
        responses={
            201: s.RunUploadResultSerializer,
            400: REFUSED_FILE,
            409: error("The collection has a run of that name already; runs never change."),
            413: TOO_LARGE,
        },
    ),
)
@extend_schema(tags=["runs"])
class RunViewSet(
    CollectionScoped,
    StreamedUploads,
    NamedLookup,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = s.RunSerializer
    required_roles = {"create": Role.EVALUATOR}
    lookup_field = "name"
    lookup_what = "run"

    def get_queryset(self) -> QuerySet[Run]:
        if self.schema_only():
            return Run.objects.none()
        return (
            Run.objects.filter(collection=self.collection)
            .select_related("created_by")
            .prefetch_related("stages")
            .order_by("-created_at", "-pk")
        )

    def create(self, request: Request, slug: str) -> Response:
        data = s.RunUploadInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        collection = self.collection
        if Run.objects.filter(collection=collection, name=v["name"]).exists():
            raise ApiError(
                409,
                f"collection '{collection.slug}' has a run named '{v['name']}' already; runs "
                "never change, so upload this one under another name",
                errors=[{"field": "name", "message": "taken"}],
            )
        try:
            with staged_upload(v["file"]) as path:
                try:
                    report = import_run(
                        collection=collection,
                        path=path,
                        name=v["name"],
                        description=v["description"],
                        order=v["order"],
                        dedup=v["dedup"],
                        by=request.user,
                        ignore_unknown_queries=v["ignore_unknown_queries"],
                    )
                except RunImportError as exc:
                    raise refused_file(exc, path) from None
        except IntegrityError:  # the same name, uploaded at the same moment
            raise ApiError(409, f"a run named '{v['name']}' was stored meanwhile") from None
        run = self.get_queryset().get(pk=report.run.pk)
        body = s.RunUploadResultSerializer(run, context={"report": report}).data
        return Response(body, status=status.HTTP_201_CREATED)


@extend_schema_view(
    list=extend_schema(summary="The collection's unit mappings, newest first."),
    retrieve=extend_schema(summary="One unit mapping version."),
    create=extend_schema(
        summary="Upload a unit mapping (fine<TAB>coarse per line) as the next version "
        "(evaluator), multipart.",
        description="201 with the new version; 200 with the latest one (`created` false) "
        "when the content is the same.",
        request=s.MappingUploadInput,
        responses={
            201: s.MappingUploadResultSerializer,
            200: s.MappingUploadResultSerializer,
            400: REFUSED_FILE,
            413: TOO_LARGE,
        },
    ),
)
@extend_schema(tags=["mappings"])
class MappingViewSet(
    CollectionScoped,
    StreamedUploads,
    NamedLookup,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = s.MappingSerializer
    required_roles = {"create": Role.EVALUATOR}
    lookup_field = "number"
    lookup_what = "unit mapping"

    def get_queryset(self) -> QuerySet[UnitMapping]:
        if self.schema_only():
            return UnitMapping.objects.none()
        return (
            UnitMapping.objects.filter(collection=self.collection)
            .select_related("created_by")
            .order_by("-number")
        )

    def create(self, request: Request, slug: str) -> Response:
        data = s.MappingUploadInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        with staged_upload(v["file"]) as path:
            try:
                mapping, created = import_unit_mapping(
                    collection=self.collection,
                    path=path,
                    from_unit=v["from_unit"],
                    to_unit=v["to_unit"],
                    note=v["note"],
                    by=request.user,
                )
            except RunImportError as exc:
                raise refused_file(exc, path) from None
        body = s.MappingUploadResultSerializer(mapping, context={"created": created}).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def report_of(evaluation: Evaluation, slug: str, **extra: Any) -> dict[str, Any]:
    report = evaluation_report(evaluation, per_query=False)
    report["per_query_url"] = f"/api/collections/{slug}/evaluations/{evaluation.pk}/queries/"
    return {**report, **extra}


@extend_schema_view(
    list=extend_schema(
        summary="The collection's evaluations, newest first, with their aggregates.",
        responses={200: s.EvaluationSummarySerializer(many=True)},
    ),
    retrieve=extend_schema(
        summary="One evaluation's report: what fixes the numbers' meaning, and the numbers.",
        responses={200: s.EvaluationReportSerializer},
    ),
    create=extend_schema(
        summary="Score one stage of a run against a pinned snapshot (evaluator).",
        description="201 with the report; the same inputs scored before give 200 and the "
        "stored evaluation (identical numbers). Per-query rows: `per_query_url`.",
        request=s.EvaluationCreateInput,
        responses={
            201: s.EvaluationCreatedSerializer,
            200: s.EvaluationCreatedSerializer,
            409: error("The stored data refuses the scoring (the message says why)."),
        },
    ),
)
@extend_schema(tags=["evaluations"])
class EvaluationViewSet(
    CollectionScoped, NamedLookup, mixins.ListModelMixin, viewsets.GenericViewSet
):
    serializer_class = s.EvaluationSummarySerializer
    required_roles = {"create": Role.EVALUATOR}
    lookup_field = "pk"
    lookup_what = "evaluation"

    def get_queryset(self) -> QuerySet[Evaluation]:
        if self.schema_only():
            return Evaluation.objects.none()
        return (
            Evaluation.objects.filter(collection=self.collection)
            .select_related("run__collection", "stage", "snapshot", "mapping")
            .order_by("-created_at", "-pk")
        )

    def retrieve(self, request: Request, slug: str, pk: int) -> Response:
        return Response(s.EvaluationReportSerializer(report_of(self.get_object(), slug)).data)

    @extend_schema(
        summary="One evaluation's per-query rows, by query id.",
        responses={200: s.EvaluationQueryRowSerializer(many=True)},
    )
    def queries(self, request: Request, slug: str, pk: int) -> Response:
        evaluation = self.get_object()
        rows = EvaluationQuery.objects.filter(evaluation=evaluation).order_by("query_id")
        page = self.paginate_queryset(rows.values("query_id", "values"))
        return self.get_paginated_response(s.EvaluationQueryRowSerializer(page, many=True).data)

    def create(self, request: Request, slug: str) -> Response:
        data = s.EvaluationCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        collection = self.collection
        problems: dict[str, str] = {}
        run = stage = snapshot = mapping = None
        try:
            run = run_by_name(collection, v["run"])
            stage = stage_of(run, v.get("stage"))
        except Run.DoesNotExist as exc:
            problems["run"] = str(exc)
        except RunStage.DoesNotExist as exc:
            problems["stage"] = str(exc).replace("--stage", "'stage'")
        try:
            snapshot = snapshot_of(collection, v["snapshot"])
        except Snapshot.DoesNotExist as exc:
            problems["snapshot"] = str(exc).replace(
                "manage.py freeze_snapshot", f"POST /api/collections/{slug}/snapshots/"
            )
        if v.get("mapping") is not None:
            mapping = UnitMapping.objects.filter(collection=collection, number=v["mapping"]).first()
            if mapping is None:
                problems["mapping"] = f"collection '{slug}' has no unit mapping v{v['mapping']}"
        if problems:
            raise serializers.ValidationError(problems)
        assert run is not None and stage is not None and snapshot is not None
        try:
            params = engine.EvalParams(
                ks=tuple(v["ks"]),
                measures=tuple(v["measures"]) if v.get("measures") else None,
                rel_level=v.get("rel_level") or snapshot.relevant_grade,
                unjudged=v["unjudged"],
            )
        except engine.EngineError as exc:
            raise serializers.ValidationError(str(exc)) from None
        evaluation, created = score_run_stage(
            run=run, stage=stage, snapshot=snapshot, params=params, mapping=mapping, by=request.user
        )
        evaluation = self.get_queryset().get(pk=evaluation.pk)
        body = s.EvaluationCreatedSerializer(report_of(evaluation, slug, created=created)).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
