"""``/api/collections/<slug>/judges/…``: start a judging job, list proposals, read the
calibration report."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.api import JOB_ACCEPTED, job_accepted
from judgments.api.permissions import CollectionScoped
from judgments.models import Role
from judgments.selectors import may

from .models import JudgeConfig, Proposal
from .selectors import calibration_of, judge_named, proposals_of
from .services import JudgeError, pairs_from_lines
from .tasks import start_proposals


class ProposalSerializer(serializers.ModelSerializer):
    query = serializers.CharField(source="query.external_id")
    item = serializers.CharField(source="item.external_id")
    job = serializers.IntegerField(source="job_id", allow_null=True)

    class Meta:
        model = Proposal
        fields = [
            "id",
            "query",
            "item",
            "judge",
            "provider",
            "model",
            "prompt_version",
            "prompt_hash",
            "params",
            "grade",
            "rationale",
            "raw_answer",
            "state",
            "failure_reason",
            "attempts",
            "prompt_tokens",
            "completion_tokens",
            "job",
            "created_at",
        ]
        extra_kwargs = {
            "raw_answer": {
                "help_text": "The server's answer as received (cut to 16,000 characters); "
                "only for evaluators and admins: absent for reviewers."
            }
        }

    def to_representation(self, instance: Proposal) -> dict[str, object]:
        data = super().to_representation(instance)
        if not self.context.get("sees_raw", False):
            # What a model server answered is for the people who configure and run
            # judges, not for every reviewer (issue 22: it once held internal pages).
            data.pop("raw_answer", None)
        return data


#: Most pairs one judging request names or asks for (a bigger job is several jobs).
MAX_PAIRS = 100_000


class ProposeInput(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=MAX_PAIRS, required=False)
    include_judged = serializers.BooleanField(default=False)
    pairs = serializers.ListField(
        child=serializers.ListField(
            child=serializers.CharField(max_length=1000), min_length=2, max_length=2
        ),
        required=False,
        max_length=MAX_PAIRS,
        help_text='[["QUERY_ID", "ITEM_ID"], …] instead of the pooled unjudged pairs',
    )


class JudgeScoped(CollectionScoped):
    kwargs: dict[str, str]

    def judge(self) -> JudgeConfig:
        from rest_framework.exceptions import NotFound

        try:
            return judge_named(self.collection, self.kwargs["judge"])
        except JudgeConfig.DoesNotExist as exc:
            raise NotFound(str(exc)) from None


@extend_schema(tags=["judges"])
class ProposalsView(JudgeScoped, generics.ListAPIView):
    serializer_class = ProposalSerializer
    required_roles = {"POST": Role.EVALUATOR}
    # A judge's grades are labels where the collection takes them (model labels), and the
    # review queue hides them from blind assessors: as the proposals page, not for them.
    labels = frozenset({"GET"})

    def get_queryset(self) -> QuerySet[Proposal]:
        if self.schema_only():
            return Proposal.objects.none()
        return proposals_of(self.collection, self.judge().name).order_by("-created_at", "-pk")

    def get_serializer_context(self) -> dict[str, object]:
        context = super().get_serializer_context()
        if not self.schema_only():
            context["sees_raw"] = may(self.request.user, self.collection, Role.EVALUATOR)
        return context

    @extend_schema(
        summary="Start a judging job (evaluator): 202 with Location: /api/jobs/<id>/.",
        request=ProposeInput,
        responses={
            202: JOB_ACCEPTED,
            409: OpenApiResponse(description="A job of this judge is queued or running."),
        },
    )
    def post(self, request: Request, slug: str, judge: str) -> Response:
        data = ProposeInput(data=request.data)
        data.is_valid(raise_exception=True)
        config = self.judge()
        pairs = None
        if "pairs" in data.validated_data:
            text = "\n".join(f"{q} {i}" for q, i in data.validated_data["pairs"])
            try:
                pairs = pairs_from_lines(self.collection, text, "pairs")
            except JudgeError as exc:
                raise serializers.ValidationError({"pairs": str(exc).splitlines()}) from None
        try:
            job = start_proposals(
                collection=self.collection,
                judge=config.name,
                pairs=pairs,
                include_judged=data.validated_data["include_judged"],
                limit=data.validated_data.get("limit"),
                by=request.user,
            )
        except JudgeError as exc:
            return Response({"detail": str(exc)}, status=409)
        return job_accepted(job)


@extend_schema(tags=["judges"])
class CalibrationView(JudgeScoped, APIView):
    labels = True

    @extend_schema(
        summary="The judge's calibration report against the human labels.",
        description="pairs, kappa, kappa_quadratic, alpha_ordinal (null with a reason where "
        "undefined), confusion, bias, interval, per_pair [[qid, item, model, human], …].",
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request, slug: str, judge: str) -> Response:
        return Response(calibration_of(self.collection, self.judge().name))
