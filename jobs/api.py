"""``/api/jobs/…``: a job's state, progress and result; retrying a failed one; its output.

Long operations elsewhere in the API answer ``202 Accepted`` with ``Location:
/api/jobs/<id>/`` and this representation (``job_accepted``); a client polls the
Location until ``state`` is ``done`` (then ``result.api_url`` names what was made) or
``failed`` (then ``error`` says why, and ``errors`` lists a refused file's lines).
"""

from __future__ import annotations

from typing import Any

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from . import files
from .models import Job, JobKind, JobState
from .selectors import job_for, job_status, may_manage_job
from .services import JobStateError, cancel_job, retry_job


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class JobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=JobKind.choices)
    kind_label = serializers.CharField()
    label = serializers.CharField(help_text="What the job does, in a few words.")
    state = serializers.ChoiceField(
        choices=JobState.choices,
        help_text="queued → running → done, failed or cancelled. A running job whose "
        "worker stopped answering is shown failed (stale true).",
    )
    stale = serializers.BooleanField()
    phase = serializers.CharField(help_text="What it is doing now, e.g. 'storing ranked lists'.")
    done = serializers.IntegerField(help_text="Units of the phase done.")
    total = serializers.IntegerField(allow_null=True, help_text="Units in the phase, if known.")
    percent = serializers.FloatField(
        allow_null=True,
        help_text="The whole job's percent: it only grows, and is 100 when done ('done' "
        "and 'total' count the current phase).",
    )
    result = serializers.DictField(
        help_text="When done: 'url' (the page), 'api_url', 'summary', and what the job made "
        "(e.g. the run's stages and what was pooled); 'download_url' for an export."
    )
    error = serializers.CharField(help_text="When failed: why, and what to do.")
    errors = serializers.ListField(
        child=serializers.CharField(), help_text="A refused file's problems, 'file line N: ...'."
    )
    waiting = serializers.CharField(help_text="A hint when no worker has taken the job yet.")
    collection = serializers.CharField(allow_null=True)
    created_by = serializers.CharField(allow_null=True)
    created_at = serializers.CharField()
    started_at = serializers.CharField(allow_null=True)
    finished_at = serializers.CharField(allow_null=True)
    retry_of = serializers.IntegerField(allow_null=True)
    can_retry = serializers.BooleanField()
    cancelling = serializers.BooleanField(
        help_text="A cancel was asked for; the worker stops the job at its next step."
    )
    cancelled_by = serializers.CharField(allow_null=True, help_text="Who cancelled it.")
    cancelled_at = serializers.CharField(allow_null=True)
    can_cancel = serializers.BooleanField(help_text="Queued or running: it can be cancelled.")
    url = serializers.CharField(help_text="The job's page in the browser.")
    api_url = serializers.CharField()


JOB_ACCEPTED = OpenApiResponse(
    JobSerializer,
    description="Accepted: the work runs as a job. `Location` names it (/api/jobs/<id>/); "
    "poll it until `state` is done or failed.",
)


def job_accepted(job: Job) -> Response:
    """``202 Accepted`` with ``Location`` naming the job, and the job as the body."""
    body = job_status(job)
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["api_url"]})


def wants_async(request: Request) -> bool:
    """The client asked for a job whatever the size (RFC 7240 ``Prefer: respond-async``)."""
    prefer = request.headers.get("Prefer", "")
    return any(p.strip().lower() == "respond-async" for p in prefer.split(","))


def _visible(request: Request, pk: int) -> Job:
    job = job_for(request.user, pk)
    # An API token limited to one collection (judgments.api.auth) sees that one's jobs.
    limited_to = getattr(request.auth, "collection_id", None)
    if job is not None and limited_to is not None and job.collection_id != limited_to:
        raise exceptions.PermissionDenied(
            f"Your token is limited to another collection than job {pk}'s; use a token for "
            "that collection."
        )
    if job is None:
        raise exceptions.NotFound(
            f"No job {pk} among those you may see: a collection's jobs, for its members "
            "holding the role its kind needs (evaluator; admin for collection imports)."
        )
    return job


@extend_schema(tags=["jobs"])
class JobApi(APIView):
    token_collection_aware = True  # _visible checks the token's collection

    @extend_schema(
        summary="A job: state, progress, and its result or error.", responses={200: JobSerializer}
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(job_status(_visible(request, pk)))


@extend_schema(tags=["jobs"])
class JobRetryApi(APIView):
    token_collection_aware = True  # _visible checks the token's collection

    @extend_schema(
        summary="Start a failed job again (its author or a superuser), as a new job.",
        description="Same parameters, same input file. A job whose worker died shows as "
        "failed (stale) and can be retried; nothing of the first attempt was stored.",
        request=None,
        responses={
            202: JOB_ACCEPTED,
            409: OpenApiResponse(description="Not failed, or its input file is gone."),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        job = _visible(request, pk)
        if not may_manage_job(request.user, job):
            raise exceptions.PermissionDenied(
                "Only the job's author (or a superuser) may start it again."
            )
        try:
            new = retry_job(job, by=request.user)
        except JobStateError as exc:
            raise Conflict(str(exc)) from None
        return job_accepted(new)


@extend_schema(tags=["jobs"])
class JobCancelApi(APIView):
    token_collection_aware = True  # _visible checks the token's collection

    @extend_schema(
        summary="Cancel a queued or running job (its author or a superuser).",
        description="A queued job is cancelled at once (200, state cancelled). A running "
        "one is asked to stop (202, cancelling true): its worker rolls back what it was "
        "storing at its next step, then the job reads cancelled; nothing half-done is "
        "stored. A job that ends before its worker sees the request keeps its outcome. "
        "The job records who cancelled it.",
        request=None,
        responses={
            200: JobSerializer,
            202: JobSerializer,
            409: OpenApiResponse(description="The job has ended (done, failed or cancelled)."),
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        job = _visible(request, pk)
        if not may_manage_job(request.user, job):
            raise exceptions.PermissionDenied(
                "Only the job's author (or a superuser) may cancel it."
            )
        try:
            job = cancel_job(job, by=request.user, via="api")
        except JobStateError as exc:
            raise Conflict(str(exc)) from None
        body = job_status(job)
        code = (
            status.HTTP_200_OK if body["state"] == JobState.CANCELLED else status.HTTP_202_ACCEPTED
        )
        return Response(body, status=code)


@extend_schema(tags=["jobs"])
class JobFileApi(APIView):
    token_collection_aware = True  # _visible checks the token's collection

    @extend_schema(
        summary="Download what an export job wrote (its author or a superuser).",
        # The content type the job recorded: TREC qrels are text, JSON Lines exports
        # application/jsonl (judgments.tasks); anything else is bytes.
        responses={
            (200, media): OpenApiResponse(OpenApiTypes.BINARY)
            for media in ("text/plain", "application/jsonl", "application/octet-stream")
        },
    )
    def get(self, request: Request, pk: int) -> Any:
        job = _visible(request, pk)
        if not may_manage_job(request.user, job):
            raise exceptions.PermissionDenied("Only the job's author may download its output.")
        if job.state != JobState.DONE or not job.result.get("file"):
            raise exceptions.NotFound(f"job {pk} has no output file (it is {job.state}).")
        name = job.result["file"].rsplit("/", 1)[-1]
        return FileResponse(
            files.open_output(job),
            as_attachment=True,
            filename=name,
            content_type=job.result.get("content_type", "application/octet-stream"),
        )
