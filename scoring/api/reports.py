"""The report, stage diagnosis and comparison endpoints: the browser pages' data as JSON,
or CSV with ``?format=csv``.

Readable by every member of the collection (the reviewer role); a collection you are not
a member of answers 404. The dicts come from ``scoring.reports``, which the pages
render too. Their URLs are in ``report_urls.py``, mounted under ``/api/``.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.api import JOB_ACCEPTED, job_accepted
from judgments.api.errors import ApiError, ErrorSerializer
from judgments.api.permissions import CollectionScoped
from judgments.models import Role, Snapshot
from judgments.selectors import may_see_assessments
from judgments.services import InvariantError

from .. import comparison, reports
from ..models import Evaluation, Run
from ..selectors import evaluation_in, run_by_name
from ..services import record_report_export
from ..settling import queue_comparison_pairs, review_url, settlement_for
from ..tasks import missing_diagnosis_stages, start_diagnosis

FORMAT = OpenApiParameter(
    "format",
    OpenApiTypes.STR,
    enum=["json", "csv"],
    description="json (default) or csv: the same content as long-format rows.",
)
JSON_OR_CSV = {
    (200, "application/json"): OpenApiResponse(OpenApiTypes.OBJECT, description="The data."),
    (200, "text/csv"): OpenApiResponse(
        OpenApiTypes.STR, description="With format=csv: the same content as CSV rows."
    ),
}
BAD_REQUEST = OpenApiResponse(
    ErrorSerializer, description="A parameter cannot be used; `errors` names it."
)
#: Largest value a numeric parameter takes: ids are 64-bit in the database, and a cutoff
#: beyond this describes no ranking anyone uploads.
MAX_ID = 2**63 - 1
MAX_K = 1_000_000


def _format(request: Request) -> str:
    fmt = request.query_params.get("format", "json") or "json"
    if fmt not in ("json", "csv"):
        raise ApiError(
            400,
            f"format={fmt!r} is not offered; use format=json or format=csv",
            errors=[{"field": "format", "message": "expected json or csv"}],
        )
    return fmt


def _int(
    request: Request,
    name: str,
    *,
    minimum: int = 1,
    maximum: int = MAX_ID,
    required: bool = False,
) -> int | None:
    raw = (request.query_params.get(name) or "").strip()
    if not raw:
        if required:
            raise ApiError(
                400,
                f"{name} is required",
                errors=[{"field": name, "message": "give an evaluation id"}],
            )
        return None
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not minimum <= value <= maximum:
        raise ApiError(
            400,
            f"{name}={raw!r} must be a whole number from {minimum} to {maximum}",
            errors=[{"field": name, "message": f"a whole number from {minimum} to {maximum}"}],
        )
    return value


def _csv(text: str, filename: str) -> HttpResponse:
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
    return response


def _answer(
    view: Any, request: Request, data: dict[str, Any], to_csv: Any, name: str, fmt: str
) -> Any:
    """The data as JSON or CSV, audited as an ``export.report`` (an API answer is the
    data leaving the app, as the pages' downloads are)."""
    record_report_export(request=request, collection=view.collection, name=name, fmt=fmt)
    if fmt == "csv":
        return _csv(to_csv(data), name)
    return Response(data)


class EvaluationReportApi(CollectionScoped, APIView):
    """One evaluation's full report (``scoring.reports.build_report``)."""

    labels = True

    @extend_schema(
        operation_id="evaluation_report",
        parameters=[FORMAT],
        responses={**JSON_OR_CSV, 400: BAD_REQUEST},
        summary="An evaluation's report: header, aggregates, accounting, per query",
    )
    def get(self, request: Request, slug: str, pk: int) -> Any:
        fmt = _format(request)
        try:
            evaluation = evaluation_in(self.collection, pk)
        except Evaluation.DoesNotExist:
            raise ApiError(404, f"collection '{slug}' has no evaluation {pk}") from None
        report = reports.build_report(evaluation)
        return _answer(self, request, report, reports.report_csv, f"{slug}-evaluation-{pk}", fmt)


def bounded(minimum: int = 1, maximum: int = MAX_ID) -> dict[str, object]:
    """The schema of an integer parameter read by ``_int`` with these bounds."""
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


DIAGNOSIS_PARAMETERS = [
    OpenApiParameter("snapshot", bounded(), description="snapshot number (default: latest)"),
    OpenApiParameter(
        "k", bounded(maximum=MAX_K), description="cutoff (default: the last stage's depth)"
    ),
    OpenApiParameter("rel", bounded(), description="threshold (default: the snapshot's)"),
    OpenApiParameter(
        "unjudged", str, enum=["nonrel", "judged-only", "bounds"], description="policy"
    ),
    OpenApiParameter("mapping", bounded(), description="unit mapping version"),
]


class RunDiagnosisApi(CollectionScoped, APIView):
    """Where each relevant item of a run was lost, with each stage's scores at the same
    parameters. GET reads what is stored and never scores: a stage not scored at these
    parameters shows ``evaluation: null``. POST (evaluator) scores those stages as a job."""

    labels = True

    required_roles = {"POST": Role.EVALUATOR}

    @extend_schema(
        operation_id="run_diagnosis",
        parameters=[FORMAT, *DIAGNOSIS_PARAMETERS],
        responses={**JSON_OR_CSV, 400: BAD_REQUEST},
        summary="Stage diagnosis of a multi-stage run",
    )
    def get(self, request: Request, slug: str, name: str) -> Any:
        fmt = _format(request)
        params = self._params(request, name)
        diagnosis = reports.diagnosis_for(**params)
        return _answer(
            self, request, diagnosis, reports.diagnosis_csv, f"{slug}-{name}-diagnosis", fmt
        )

    @extend_schema(
        operation_id="run_diagnosis_score",
        parameters=DIAGNOSIS_PARAMETERS,
        request=None,
        responses={
            202: JOB_ACCEPTED,
            200: OpenApiResponse(
                description="Every stage is scored at these parameters already: nothing to do."
            ),
            400: BAD_REQUEST,
        },
        summary="Score the stages a diagnosis lacks (evaluator), as a job",
    )
    def post(self, request: Request, slug: str, name: str) -> Any:
        params = self._params(request, name)
        if not missing_diagnosis_stages(params):
            return Response({"detail": "Every stage is scored at these parameters already."})
        return job_accepted(start_diagnosis(params=params, by=request.user))

    def _params(self, request: Request, name: str) -> dict[str, Any]:
        try:
            run = run_by_name(self.collection, name)
        except Run.DoesNotExist as exc:
            raise ApiError(404, str(exc)) from None
        try:
            return reports.diagnosis_params(
                run=run,
                snapshot=_int(request, "snapshot"),
                k=_int(request, "k", maximum=MAX_K),
                rel_level=_int(request, "rel"),
                unjudged=request.query_params.get("unjudged") or "nonrel",
                mapping=_int(request, "mapping"),
            )
        except (reports.DiagnosisError, Snapshot.DoesNotExist) as exc:
            raise ApiError(400, str(exc)) from None


class EvaluationCompareApi(CollectionScoped, APIView):
    """Paired comparison of evaluations a and b (a - b per query); refused, with every
    reason, unless both measure the same thing."""

    labels = True

    @extend_schema(
        operation_id="evaluation_compare",
        parameters=[
            FORMAT,
            OpenApiParameter("a", bounded(), required=True, description="evaluation id"),
            OpenApiParameter("b", bounded(), required=True, description="evaluation id"),
            OpenApiParameter(
                "seed",
                bounded(minimum=0),
                description=f"random seed (default {comparison.DEFAULT_SEED})",
            ),
        ],
        responses={
            **JSON_OR_CSV,
            400: OpenApiResponse(
                ErrorSerializer,
                description="Not comparable: `errors` lists every reason (field null).",
            ),
        },
        summary="Paired comparison of two evaluations",
    )
    def get(self, request: Request, slug: str) -> Any:
        fmt = _format(request)
        a_id = _int(request, "a", required=True)
        b_id = _int(request, "b", required=True)
        seed = _int(request, "seed", minimum=0)
        try:
            a = evaluation_in(self.collection, a_id)
            b = evaluation_in(self.collection, b_id)
        except Evaluation.DoesNotExist:
            raise ApiError(404, f"collection '{slug}' has no evaluation {a_id} or {b_id}") from None
        try:
            result = reports.compare_evaluations(
                a,
                b,
                seed=comparison.DEFAULT_SEED if seed is None else seed,
                with_assessors=may_see_assessments(request.user, self.collection),
            )
        except reports.ComparisonRefused as exc:
            raise ApiError(
                400,
                f"evaluations {a.pk} and {b.pk} cannot be compared: {exc}",
                errors=[{"field": None, "message": r} for r in exc.reasons],
                extra={"refused": True, "reasons": exc.reasons},
            ) from None
        if fmt != "csv" and result["mode"] == "runs":
            result["settlement"] = settlement_for(a, b)
        name = f"{slug}-compare-{a.pk}-{b.pk}"
        return _answer(self, request, result, reports.comparison_csv, name, fmt)


class CompareFocusApi(CollectionScoped, APIView):
    """Queue, first in every reviewer's queue, exactly the unjudged pairs that could change
    the sign of comparison (a, b) (``settlement.pairs`` of the comparison's JSON), as the
    focus set ``compare-A-B``; reviewers are pointed at ``review_url``. Evaluator: it
    reorders every reviewer's queue (``judgments/services/focus.py``)."""

    labels = True
    required_roles = {"POST": Role.EVALUATOR}

    @extend_schema(
        operation_id="evaluation_compare_focus",
        parameters=[
            OpenApiParameter("a", bounded(), required=True, description="evaluation id"),
            OpenApiParameter("b", bounded(), required=True, description="evaluation id"),
        ],
        request=None,
        responses={
            200: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="focus, pairs, unjudged, queued, raised, rows, review_url",
            ),
            400: BAD_REQUEST,
        },
        summary="Queue the pairs that could change a comparison (evaluator)",
        description="JSON body `{a, b, measure?}` (or a and b in the query string): every "
        "unjudged pair that could change the sign of a - b, or only those of `measure` (400 "
        "when the comparison has no such measure).",
    )
    def post(self, request: Request, slug: str) -> Any:
        ids = []
        for side in ("a", "b"):
            raw = request.data.get(side, request.query_params.get(side))
            try:
                ids.append(evaluation_in(self.collection, int(raw)))
            except (TypeError, ValueError):
                raise ApiError(
                    400,
                    f"{side} must be an evaluation id",
                    errors=[{"field": side, "message": "expected an integer"}],
                ) from None
            except Evaluation.DoesNotExist:
                raise ApiError(404, f"collection '{slug}' has no evaluation {raw}") from None
        a, b = ids
        try:
            outcome = queue_comparison_pairs(
                a, b, by=request.user, measure=request.data.get("measure") or None, request=request
            )
        except InvariantError as exc:
            raise ApiError(
                400, str(exc), errors=[{"field": "measure", "message": str(exc)}]
            ) from None
        except reports.ComparisonRefused as exc:
            raise ApiError(
                400,
                f"evaluations {a.pk} and {b.pk} cannot be compared: {exc}",
                errors=[{"field": None, "message": r} for r in exc.reasons],
            ) from None
        name = reports.focus_name(a, b)
        if outcome is None:
            return Response(
                {"focus": name, "pairs": 0, "unjudged": 0, "queued": 0, "raised": 0, "rows": []}
            )
        rows = sorted(outcome.focus.pairs.values_list("query__external_id", "item__external_id"))
        return Response(
            {
                "focus": name,
                "pairs": outcome.pairs,
                "unjudged": outcome.unjudged,
                "queued": outcome.queued,
                "raised": outcome.raised,
                "rows": [list(r) for r in rows],
                "review_url": review_url(self.collection, name),
            }
        )
