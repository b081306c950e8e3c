"""API view of agreement between a collection's assessors (several assessors per item)."""

from __future__ import annotations

import re

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from judgments.models import Role
from judgments.selectors import agreement_report, may_see_assessments, snapshot_of
from verity_limits import INT32_MAX

from ..permissions import CollectionScoped
from .common import error


@extend_schema(
    tags=["agreement"],
    summary="Agreement between the collection's assessors (evaluator).",
    description="Krippendorff's alpha (ordinal, nominal) over all assessors and per query, "
    "Cohen's kappa (plain and quadratic-weighted), raw agreement and shared units for "
    "every pair of assessors, the confusion of grades, and each assessor against the "
    "resolved labels: the JSON of `manage.py agreement SLUG --json`. A figure with fewer "
    "than `min_shared_units` shared units, or 0/0, is null with its reason under "
    "`undefined`, never 0 or 1.",
    parameters=[
        OpenApiParameter(
            "snapshot",
            {"type": "integer", "minimum": 1, "maximum": INT32_MAX},
            description="the assessments frozen in snapshot vN",
        )
    ],
    responses={
        200: OpenApiResponse(OpenApiTypes.OBJECT, description="The agreement figures."),
        400: error("snapshot is not a positive integer."),
        404: error("No such snapshot."),
    },
)
class AgreementView(CollectionScoped, APIView):
    required_roles = {"GET": Role.EVALUATOR}

    def get(self, request: Request, slug: str) -> Response:
        if not may_see_assessments(request.user, self.collection):  # the one rule
            raise exceptions.PermissionDenied("Agreement is for evaluators and admins.")
        raw = request.query_params.get("snapshot", "")
        snapshot = None
        if raw:
            if not re.fullmatch(r"[0-9]{1,10}", raw) or not 1 <= int(raw) <= INT32_MAX:
                raise serializers.ValidationError({"snapshot": f"{raw!r} is not a version"})
            snapshot = snapshot_of(self.collection, int(raw))
        return Response(agreement_report(self.collection, snapshot))
