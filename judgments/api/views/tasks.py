"""API views of review tasks: list, claim the next one, skip it, judge it."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from judgments.models import ChangeSource, Judgment, Query, ReviewTask, TokenScope
from judgments.selectors import task_for_review
from judgments.services import (
    JudgmentConflict,
    assess_task,
    claim_next_task,
    judge_task,
    skip_task,
)

from .. import serializers as s
from ..errors import ApiError
from ..filters import TaskFilter
from ..permissions import CollectionScoped
from .common import NamedLookup, error, not_found
from .judgments import (
    CONFLICT_CREATE,
    ETAG_HEADER,
    IDEMPOTENCY_KEY,
    idempotency_key,
    judgment_conflict,
    judgment_response,
)


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
    token_scopes = {m: TokenScope.JUDGE for m in ("claim", "skip", "judge")}

    def get_queryset(self) -> QuerySet[ReviewTask]:
        if self.schema_only():
            return ReviewTask.objects.none()
        tasks = ReviewTask.objects.filter(collection=self.collection)
        if self.action in ("judge", "skip"):
            return tasks  # the service reads what it needs under its locks
        if not self.sees_labels:  # blind: the tasks they are given, not the others' states
            tasks = tasks.filter(claimed_by=self.request.user)
        return (
            tasks.select_related("query", "item", "claimed_by")
            .prefetch_related("sources")
            .order_by("-priority", "pk")
        )

    @extend_schema(
        summary="Claim the next open task, with a 10-minute lease.",
        description="A reviewer holding a live lease gets that task back. 204 when no task "
        "is open for you (skipped ones are not offered again). Query at a time: `current` "
        "(a query id) is served first while it has open tasks; `query` or `tag` limit the "
        "queue to one query or to the queries with one tag.",
        parameters=[
            OpenApiParameter("query", str, description="Only this query's tasks."),
            OpenApiParameter("tag", str, description="Only the tasks of queries with this tag."),
            OpenApiParameter("current", str, description="The query you are working on."),
        ],
        request=None,
        responses={200: s.TaskSerializer, 204: OpenApiResponse(description="Queue empty.")},
    )
    def claim(self, request: Request, slug: str) -> Response:
        def query_named(param: str) -> Query | None:
            external_id = request.query_params.get(param)
            if not external_id:
                return None
            found = Query.objects.filter(collection=self.collection, external_id=external_id)
            query = found.first()
            if query is None:
                raise ApiError(404, f"no query '{external_id}' in this collection")
            return query

        current = query_named("current")
        task = claim_next_task(
            reviewer=request.user,
            collection=self.collection,
            query=query_named("query"),
            tag=request.query_params.get("tag") or None,
            current_query_id=current.pk if current is not None else None,
        )
        if task is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        shown = task_for_review(self.collection, task.pk)
        shown.claimed_by = request.user  # claim_next_task hands out only the caller's
        return Response(s.task_answer(shown))

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
        "return the judgment it created (200). In a collection with several assessors per "
        "item the grade is your blind assessment: 202 with it and the pair's resolved grade "
        "(null until every assessor has graded it, or while it awaits an adjudicator).",
        parameters=[IDEMPOTENCY_KEY],
        request=s.TaskJudgeInput,
        responses={
            201: ETAG_HEADER,
            200: ETAG_HEADER,
            202: OpenApiResponse(OpenApiTypes.OBJECT, description="Your assessment."),
            409: CONFLICT_CREATE,
        },
    )
    def judge(self, request: Request, slug: str, pk: int) -> Response:
        data = s.TaskJudgeInput(data=request.data, context={"collection": self.collection})
        data.is_valid(raise_exception=True)
        v = data.validated_data
        if self.collection.has_overlap:
            return self._assess(request, self.get_object(), v)
        key = idempotency_key(request, v.get("client_key"))
        try:
            # By pk: the service's one locking read finds the task (404 if it is not
            # this collection's), so no read of it here first.
            judgment, created = judge_task(
                task=pk,
                collection=self.collection,
                reviewer=request.user,
                grade=v["grade"],
                note=v["note"],
                client_key=key,
                source=ChangeSource.API,
            )
        except ReviewTask.DoesNotExist:
            raise not_found(f"{self.lookup_what} '{pk}'") from None
        except JudgmentConflict as conflict:
            raise judgment_conflict(409, conflict, slug) from None
        return judgment_response(judgment, created=created, slug=slug, replayed=not created)

    def _assess(self, request: Request, task: ReviewTask, v: dict[str, Any]) -> Response:
        """Several assessors per item: the grade is the reviewer's blind assessment."""
        assessment = assess_task(
            task=task,
            reviewer=request.user,
            grade=v["grade"],
            note=v["note"],
            source=ChangeSource.API,
        )
        resolved = None
        if self.sees_labels:  # the resolved label would tell the others' grades (blind)
            resolved = (
                Judgment.objects.filter(query_id=task.query_id, item_id=task.item_id)
                .values_list("grade", flat=True)
                .first()
            )
        return Response(
            {
                "query": task.query.external_id,
                "item": task.item.external_id,
                "assessor": request.user.get_username(),
                "grade": assessment.grade,
                "version": assessment.version,
                "resolved_grade": resolved,
            },
            status=status.HTTP_202_ACCEPTED,
        )
