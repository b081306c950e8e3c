"""API views of runs, unit mappings and evaluations, under ``/api/collections/<slug>/``.

Uploads are multipart: the file streams to a temporary file on disk (never into memory),
is handed to the service by path under its own name, and is removed afterwards.

A run upload or a scoring bigger than ``VERITY_INLINE_MAX_BYTES`` / ``_ROWS`` (or any,
with ``Prefer: respond-async``) becomes a background job: ``202 Accepted`` with
``Location: /api/jobs/<id>/``. Smaller ones are done in the request (201/200).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from jobs.api import JOB_ACCEPTED, job_accepted, wants_async
from judgments.api.errors import ApiError
from judgments.api.permissions import CollectionScoped
from judgments.api.uploads import StreamedUploads, staged_upload
from judgments.api.views import NamedLookup, error
from judgments.models import Role, Snapshot
from judgments.selectors import snapshot_of
from scoring.models import Evaluation, EvaluationQuery, Run, UnitMapping
from scoring.run_work import run_work
from scoring.selectors import (
    ScoringInputError,
    evaluation_report,
    hole_ks,
    run_holes,
    scoring_inputs,
)
from scoring.services import RunImportError, import_run, score_run_stage
from scoring.tasks import start_mapping_import, start_run_import, start_scoring
from verity_eval.params import parse_ks

from . import serializers as s

TOO_LARGE = error("The request body is over VERITY_MAX_UPLOAD_BYTES; nothing was read.")
REFUSED_FILE = error(
    "The request or the file is invalid; for a file, `errors` lists each problem with its "
    "file name and line, and nothing was stored."
)


def refused_file(exc: RunImportError, path: Path) -> ApiError:
    """The reader's errors as the client knows the file (``as_client_sees_it``)."""
    detail, messages = exc.as_client_sees_it(path)
    return ApiError(
        400, detail, errors=[{"field": "file", "message": m} for m in messages or [detail]]
    )


@extend_schema_view(
    list=extend_schema(summary="The collection's runs, newest first."),
    retrieve=extend_schema(
        summary="One run and its stages, with its holes.",
        description="`holes`: for each stage and cutoff k, Judged@k (judged items among the "
        "first k / k) and the number of unjudged items in the first k, per query and "
        "overall, against the latest snapshot (`?snapshot=N` for another; `?k=5,10` for "
        "other cutoffs; default 10 and the pool depth). `null` when the collection has no "
        "snapshot yet; absent for a reviewer of a blind (several assessors) collection.",
        parameters=[
            OpenApiParameter(
                "snapshot",
                {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
                description="snapshot number (default: the latest)",
            ),
            OpenApiParameter(
                "k",
                {"type": "string", "pattern": "^[1-9][0-9]{0,5}(,[1-9][0-9]{0,5}){0,9}$"},
                description="cutoffs, e.g. 5,10",
            ),
        ],
    ),
    create=extend_schema(
        summary="Upload a run file (evaluator), multipart.",
        description="The file is validated whole before anything is stored: a refused file "
        "answers 400 listing each problem as 'file line N: ...'. For every collection query, "
        "the unjudged items within the pool depth become review tasks. A file over "
        "VERITY_INLINE_MAX_BYTES (2 MiB by default), over VERITY_INLINE_MAX_IDS ranked ids "
        "(50,000) or VERITY_INLINE_MAX_STAGES stages (20), or any with `Prefer: "
        "respond-async`, is imported by a background job: 202 with `Location: "
        "/api/jobs/<id>/`; the job's `errors` then list a refused file's lines, and its "
        "`result.api_url` names the run.",
        request=s.RunUploadInput,
        responses={
            201: s.RunUploadResultSerializer,
            202: JOB_ACCEPTED,
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

    def retrieve(self, request: Request, slug: str, name: str) -> Response:
        run = self.get_object()
        data = dict(self.get_serializer(run).data)
        if self.sees_labels:
            params = request.query_params
            try:
                ks = hole_ks(self.collection, parse_ks(params["k"]) if params.get("k") else None)
                number = int(params["snapshot"]) if params.get("snapshot") else None
            except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
                raise ApiError(400, f"k or snapshot: {exc}; e.g. ?k=5,10&snapshot=2") from None
            try:
                snapshot = snapshot_of(self.collection, number)
            except Snapshot.DoesNotExist:
                if number is not None:
                    raise ApiError(404, f"no snapshot v{number}") from None
                data["holes"] = None
            else:
                data["holes"] = run_holes(run, snapshot, ks)
        return Response(data)

    def create(self, request: Request, slug: str) -> Response:
        data = s.RunUploadInput(data=request.data, context={"collection": self.collection})
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
        upload = v["file"]
        work = None if wants_async(request) else run_work(upload, upload.name or "")
        if work is None or not work.fits_inline():
            job = start_run_import(
                collection=collection,
                upload=upload,
                filename=upload.name or "run",
                name=v["name"],
                description=v["description"],
                order=v["order"],
                dedup=v["dedup"],
                ignore_unknown_queries=v["ignore_unknown_queries"],
                by=request.user,
                pool_strategy=v["pool_strategy"] or None,
            )
            return job_accepted(job)
        # The same name stored meanwhile is the service's InvariantError: 409, with the
        # sentence the CLI prints.
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
                    pool_strategy=v["pool_strategy"] or None,
                )
            except RunImportError as exc:
                raise refused_file(exc, path) from None
        run = self.get_queryset().get(pk=report.run.pk)
        body = s.RunUploadResultSerializer(run, context={"report": report}).data
        return Response(body, status=status.HTTP_201_CREATED)


@extend_schema_view(
    list=extend_schema(summary="The collection's unit mappings, newest first."),
    retrieve=extend_schema(summary="One unit mapping version."),
    create=extend_schema(
        summary="Upload a unit mapping (fine<TAB>coarse per line) as the next version "
        "(evaluator), multipart.",
        description="Always imported by a background job (a mapping costs a row per line; "
        "a million lines outlast any request): 202 with `Location: /api/jobs/<id>/`. The "
        "job's `result` gives the version (`mapping`, `api_url`) and `created` (false when "
        "the content equals the latest version's, which is kept); a refused file fails "
        "the job with its lines in `errors`.",
        request=s.MappingUploadInput,
        responses={202: JOB_ACCEPTED, 400: REFUSED_FILE, 413: TOO_LARGE},
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
        upload = v["file"]
        job = start_mapping_import(
            collection=self.collection,
            upload=upload,
            filename=upload.name or "mapping.tsv",
            from_unit=v["from_unit"],
            to_unit=v["to_unit"],
            note=v["note"],
            by=request.user,
        )
        return job_accepted(job)


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
        "stored evaluation (identical numbers). Per-query rows: `per_query_url`. A stage "
        "over VERITY_INLINE_MAX_ROWS lines (200,000 by default), or any with `Prefer: "
        "respond-async`, is scored by a background job: 202 with `Location: "
        "/api/jobs/<id>/`, whose `result.api_url` names the evaluation.",
        request=s.EvaluationCreateInput,
        responses={
            201: s.EvaluationCreatedSerializer,
            200: s.EvaluationCreatedSerializer,
            202: JOB_ACCEPTED,
            409: error("The stored data refuses the scoring (the message says why)."),
        },
    ),
)
@extend_schema(tags=["evaluations"])
class EvaluationViewSet(
    CollectionScoped, NamedLookup, mixins.ListModelMixin, viewsets.GenericViewSet
):
    labels = True
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
        try:
            inputs = scoring_inputs(
                collection,
                run=v["run"],
                stage=v.get("stage"),
                snapshot=v["snapshot"],
                ks=v["ks"],
                measures=v.get("measures"),
                rel_level=v.get("rel_level"),
                unjudged=v["unjudged"],
                mapping=v.get("mapping"),
            )
        except ScoringInputError as exc:
            problems = {
                field: message.replace("--stage", "'stage'").replace(
                    "manage.py freeze_snapshot", f"POST /api/collections/{slug}/snapshots/"
                )
                for field, message in exc.problems.items()
            }
            if None in problems:
                raise serializers.ValidationError(problems.pop(None)) from None
            raise serializers.ValidationError(problems) from None
        if wants_async(request) or inputs.stage.n_rows > settings.VERITY_INLINE_MAX_ROWS:
            return job_accepted(start_scoring(inputs=inputs, by=request.user))
        evaluation, created = score_run_stage(
            run=inputs.run,
            stage=inputs.stage,
            snapshot=inputs.snapshot,
            params=inputs.params,
            mapping=inputs.mapping,
            by=request.user,
        )
        evaluation = self.get_queryset().get(pk=evaluation.pk)
        body = s.EvaluationCreatedSerializer(report_of(evaluation, slug, created=created)).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
