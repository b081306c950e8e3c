"""The paired comparison of two evaluations."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from judgments.models import Collection, Role
from judgments.selectors import may_see_assessments
from judgments.views.common import RoleRequired

from .. import comparison, reports
from ..models import Evaluation, Run, RunStage
from ..selectors import evaluation_in, evaluations_of, run_by_name, stage_of
from ..settling import settlement_for
from ..tasks import start_comparison
from .common import (
    BadParameter,
    _bad_request,
    _collection_url,
    _data_response,
    int_param,
    label_page,
)
from .settled import settlement_view


@require_GET
@label_page
def compare(request: HttpRequest, collection: Collection) -> HttpResponse:
    evaluations = evaluations_of(collection)[:500]
    may_score = reports.may_score(request.user, collection)
    context: dict[str, Any] = {
        "collection": collection,
        "collection_url": _collection_url(collection),
        "evaluations": evaluations,
        "may_score": may_score,
        "stages": _stage_choices(collection) if may_score else [],
    }
    if not request.GET.get("a") or not request.GET.get("b"):
        # The form opens on two different evaluations that compare (else two different
        # ones), never one evaluation on both sides, which could only be refused.
        context["a"], context["b"] = default_pair(list(evaluations[:DEFAULT_PAIR_SCAN]))
        return render(request, "scoring/compare.html", context)
    try:
        a_id = int_param(request, "a")
        b_id = int_param(request, "b")
        seed = int_param(request, "seed", default=comparison.DEFAULT_SEED, minimum=0)
    except BadParameter as exc:
        return _bad_request(request, collection, "These evaluations cannot be compared", [str(exc)])
    try:
        a = evaluation_in(collection, a_id)
        b = evaluation_in(collection, b_id)
    except Evaluation.DoesNotExist:
        raise Http404(f"collection '{collection.slug}' has no such evaluation") from None
    context.update({"a": a, "b": b, "seed": seed})
    try:
        result = reports.compare_evaluations(
            a, b, seed=seed, with_assessors=may_see_assessments(request.user, collection)
        )
    except reports.ComparisonRefused as exc:
        if request.GET.get("format") == "json":
            return JsonResponse({"refused": True, "reasons": exc.reasons}, status=400)
        context["reasons"] = exc.reasons
        return render(request, "scoring/compare.html", context, status=400)
    if result["mode"] == "runs":
        result["settlement"] = settlement_for(a, b)
    data = _data_response(
        request,
        result,
        lambda: reports.comparison_csv(result),
        f"{collection.slug}-compare-{a.pk}-{b.pk}",
        collection=collection,
    )
    if data is not None:
        return data
    context.update(
        {
            "result": result,
            "view": comparison_view(result),
            "settled_view": settlement_view(result["settlement"])
            if result.get("settlement", {}).get("applies")
            else None,
            "chart_data": {
                "measures": [e["key"] for e in result["measures"]],
                "values": result["per_query"]["values"],
                "rates": {e["key"]: reports.is_rate(e["measure"]) for e in result["measures"]},
            },
        }
    )
    return render(request, "scoring/compare.html", context)


#: How many of the newest evaluations the default pair is looked for among.
DEFAULT_PAIR_SCAN = 50


def default_pair(evaluations: list[Evaluation]) -> tuple[Evaluation | None, Evaluation | None]:
    """(a, b) for the compare form: the newest evaluation and the newest other one it
    compares with; else the two newest; ``None`` where there are not enough."""
    if not evaluations:
        return None, None
    a = evaluations[0]
    others = evaluations[1:]
    for b in others:
        if not reports.comparison_refusals(a, b):
            return a, b
    return a, (others[0] if others else None)


def _stage_choices(collection: Collection) -> list[tuple[str, str]]:
    stages = RunStage.objects.filter(run__collection=collection).select_related("run")
    return [
        (f"{s.run.name}/{s.name}", f"{s.run.name} / {s.name}")
        for s in stages.order_by("-run__created_at", "run__pk", "position")
    ]


@require_POST
@label_page
def compare_score(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Score run b's stage as evaluation a was scored (a job), then show the comparison;
    when that evaluation exists already, show the comparison at once."""
    if not reports.may_score(request.user, collection):
        raise RoleRequired(
            "Scoring stores an evaluation: it needs the evaluator role.", role=Role.EVALUATOR
        )
    try:
        a = evaluation_in(collection, int(request.POST.get("a", "")))
        run_name, _, stage_name = request.POST.get("stage", "").partition("/")
        run = run_by_name(collection, run_name)
        stage = stage_of(run, stage_name or None)
    except (ValueError, Evaluation.DoesNotExist, Run.DoesNotExist, RunStage.DoesNotExist) as exc:
        return _bad_request(request, collection, "Nothing to compare", [str(exc)])
    return redirect("jobs:job", pk=start_comparison(a=a, run=run, stage=stage, by=request.user).pk)


def _fmt3(value: float | None) -> str:
    if value is None:
        return "undefined"
    return "0.000" if abs(value) <= comparison.TIE else f"{value:.3f}"


def _methods_disagree(e: dict[str, Any]) -> bool:
    """The bootstrap interval excludes 0 while p >= 0.05, or includes it while p < 0.05."""
    if e["ci_low"] is None or e["p"] is None:
        return False
    excludes_zero = e["ci_low"] > 0 or e["ci_high"] < 0
    return excludes_zero != (e["p"] < 0.05)


def comparison_view(result: dict[str, Any]) -> dict[str, Any]:
    rows = []
    for e in result["measures"]:
        m = e["measure"]
        rows.append(
            {
                **e,
                "mean_a_text": reports.fmt_number(m, e["mean_a"]),
                "mean_b_text": reports.fmt_number(m, e["mean_b"]),
                "diff_text": reports.fmt_diff(m, e["mean_diff"]),
                "ci_text": (
                    f"[{reports.fmt_diff(m, e['ci_low'])}, {reports.fmt_diff(m, e['ci_high'])}]"
                    if e["ci_low"] is not None
                    else "undefined"
                ),
                "p_text": reports.fmt_p(e["p"]),
                "p_holm_text": reports.fmt_p(e["p_holm"]),
                "p_t_text": reports.fmt_p(e["p_t"]),
                "t_text": _fmt3(e["t"]),
                "d_z_text": _fmt3(e["d_z"]),
                "significant": e["p_holm"] is not None and e["p_holm"] < 0.05,
                "disagree": _methods_disagree(e),
            }
        )
    pooled = [
        {
            "measure": m,
            **p,
            "a_text": reports.fmt_number(m, p["pooled_a"]),
            "b_text": reports.fmt_number(m, p["pooled_b"]),
            "diff_text": reports.fmt_diff(m, p["diff"]),
            "ci_text": (
                f"[{reports.fmt_diff(m, p['ci_low'])}, {reports.fmt_diff(m, p['ci_high'])}]"
                if p["ci_low"] is not None
                else "undefined"
            ),
        }
        for m, p in result["pooled"].items()
    ]
    descriptive = [
        {
            **d,
            "mean_a_text": reports.fmt_number(d["measure"], d["mean_a"]),
            "mean_b_text": reports.fmt_number(d["measure"], d["mean_b"]),
            "diff_text": reports.fmt_diff(d["measure"], d["mean_diff"]),
        }
        for d in result["descriptive"]
    ]
    keys = [e["key"] for e in result["measures"]]
    measure_of = {e["key"]: e["measure"] for e in result["measures"]}
    tag_tables = []
    for key in keys:
        m = measure_of[key]
        tag_tables.append(
            {
                "key": key,
                "rows": [
                    {
                        "tag": tag,
                        "n": per[key]["n"],
                        "a": reports.fmt_number(m, per[key]["mean_a"]),
                        "b": reports.fmt_number(m, per[key]["mean_b"]),
                        "diff": reports.fmt_diff(m, per[key]["mean_diff"]),
                        "diff_sort": reports.sort_value(per[key]["mean_diff"]),
                        "wins": per[key]["wins"],
                        "ties": per[key]["ties"],
                        "losses": per[key]["losses"],
                    }
                    for tag, per in result["tags"].items()
                ],
            }
        )
    query_tables = []
    for key in keys:
        m = measure_of[key]
        v = result["per_query"]["values"][key]
        query_tables.append(
            {
                "key": key,
                "rows": [
                    {
                        "query": q,
                        "a": reports.fmt_number(m, x),
                        "b": reports.fmt_number(m, y),
                        "diff": reports.fmt_diff(m, x - y),
                        "diff_sort": x - y,
                    }
                    for q, x, y in zip(v["queries"], v["a"], v["b"], strict=True)
                ],
            }
        )
    return {
        "rows": rows,
        "disagree": [r["key"] for r in rows if r["disagree"]],
        "pooled": pooled,
        "descriptive": descriptive,
        "keys": keys,
        "tag_tables": tag_tables,
        "query_tables": query_tables,
        "default_key": keys[0] if keys else None,
    }
