"""The evaluations of a collection, and one evaluation's report."""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from judgments.models import Collection, Role
from judgments.selectors import may_score
from judgments.views.common import RoleRequired

from .. import reports
from ..forms import EvaluationForm
from ..models import Evaluation
from ..selectors import ScoringInputError, evaluation_in, evaluations_of, scoring_inputs
from ..tasks import start_scoring
from .common import _collection_url, _data_response, label_page, member_page


@require_GET
@label_page
def evaluation_list(request: HttpRequest, collection: Collection) -> HttpResponse:
    evaluations = evaluations_of(collection)[:500]
    return render(
        request,
        "scoring/evaluations.html",
        {
            "collection": collection,
            "collection_url": _collection_url(collection),
            "evaluations": evaluations,
            "may_score": may_score(request.user, collection),
        },
    )


@require_http_methods(["GET", "POST"])
@member_page
def evaluation_new(request: HttpRequest, collection: Collection) -> HttpResponse:
    """The scoring form (evaluators): its POST starts a scoring job, whose page lands on
    the report when it is done."""
    if not may_score(request.user, collection):
        raise RoleRequired(
            "Scoring stores an evaluation: it needs the evaluator role.", role=Role.EVALUATOR
        )
    if request.method == "POST":
        form = EvaluationForm(request.POST, collection=collection)
        if form.is_valid():
            v = form.cleaned_data
            run, stage = form.run_and_stage()
            try:
                inputs = scoring_inputs(
                    collection,
                    run=run,
                    stage=stage,
                    snapshot=v["snapshot"],
                    ks=v["ks"],
                    measures=v["measures"],
                    rel_level=v["rel_level"],
                    unjudged=v["unjudged"],
                    mapping=v["mapping"],
                )
            except ScoringInputError as exc:
                for field, message in exc.problems.items():
                    field = field if field in form.fields else None
                    form.add_error(field, message.replace("--stage", "the run and stage"))
            else:
                return redirect("jobs:job", pk=start_scoring(inputs=inputs, by=request.user).pk)
    else:
        form = EvaluationForm(collection=collection, initial={"stage": request.GET.get("stage")})
    return render(
        request,
        "scoring/evaluation_new.html",
        {
            "collection": collection,
            "collection_url": _collection_url(collection),
            "crumb": "New evaluation",
            "here": "New evaluation",
            "form": form,
        },
        status=400 if form.errors else 200,
    )


@require_GET
@label_page
def evaluation_detail(request: HttpRequest, collection: Collection, pk: int) -> HttpResponse:
    try:
        evaluation = evaluation_in(collection, pk)
    except Evaluation.DoesNotExist:
        raise Http404(f"collection '{collection.slug}' has no evaluation {pk}") from None
    report = reports.build_report(evaluation)
    data = _data_response(
        request,
        report,
        lambda: reports.report_csv(report),
        f"{collection.slug}-evaluation-{evaluation.pk}",
        collection=collection,
    )
    if data is not None:
        return data
    return render(
        request,
        "scoring/report.html",
        {
            "collection": collection,
            "collection_url": _collection_url(collection),
            "evaluation": evaluation,
            "crumb": f"Evaluation {evaluation.pk}",
            "report": report,
            "view": report_view(report),
            "others": evaluations_of(collection).exclude(pk=evaluation.pk)[:200],
            "multi_stage": evaluation.run.stages.count() > 1,
            "chart_data": report["charts"],
        },
    )


def report_view(report: dict[str, Any]) -> dict[str, Any]:
    """The report's tables with display strings beside sort values, for the template."""
    measures = report["measures"]
    per_query = report["per_query"]
    bounds = report["params"]["unjudged"] == "bounds"
    aggregates = []
    scorable = report["accounting"]["scorable"]
    for m in measures:
        agg = report["aggregates"].get(m, {})
        n = agg.get("n", scorable)
        aggregates.append(
            {
                "measure": m,
                "label": reports.measure_label(m),
                "macro": reports.fmt_value(m, agg.get("macro")),
                "pooled": reports.fmt_value(m, agg["pooled"]) if "pooled" in agg else "",
                "has_pooled": "pooled" in agg,
                "n": n,
                "n_reason": agg.get("n_reason", ""),
                "undefined_reason": reports.undefined_reason(m, n=n, scorable=scorable)
                if agg.get("macro") is None
                else "",
            }
        )
    rows = []
    for w in report["weights"]:
        q = w["query"]
        values = per_query[q]
        info = report["queries"].get(q, {})
        rows.append(
            {
                "query": q,
                "text": info.get("text", ""),
                "tags": info.get("tags", []),
                "tags_json": json.dumps(info.get("tags", [])),
                "relevant": w["relevant"],
                "weight": reports.fmt_number("R", w["pooled"]),
                "weight_sort": w["pooled"],
                "abstained": bool(values.get("abstained")),
                "cells": [
                    {
                        "text": reports.fmt_value(m, values.get(m)),
                        "sort": reports.sort_value(values.get(m)),
                        "why": reports.undefined_cell_reason(m) if values.get(m) is None else "",
                    }
                    for m in measures
                ],
            }
        )
    weights = [
        {
            "query": w["query"],
            "relevant": w["relevant"],
            "pooled": reports.fmt_number("R", w["pooled"]),
            "macro": reports.fmt_number("R", w["macro"]),
        }
        for w in report["weights"]
    ]
    tags = sorted({t for r in rows for t in r["tags"]})
    ab = report["abstention"]
    return {
        "aggregates": aggregates,
        "rows": rows,
        "weights": weights,
        "total_relevant": sum(w["relevant"] for w in report["weights"]),
        "tags": tags,
        "bounds": bounds,
        "excluded": [
            {
                "query": q,
                "reason": reason,
                "text": report["queries"].get(q, {}).get("text", ""),
            }
            for q, reason in report["excluded"].items()
        ],
        "reasons": [
            {"reason": r, "count": n, "description": report["accounting"]["reasons"][r]}
            for r, n in report["accounting"]["excluded"].items()
        ],
        "abstention_rows": [
            {**row, "text": report["queries"].get(row["query"], {}).get("text", "")}
            for row in ab["queries"]
        ],
    }
