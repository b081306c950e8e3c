"""Evaluation reports, stage diagnosis and paired comparison in the browser.

Every page is visible to the collection's members, whatever their role, and a 404 to
everyone else (a non-member learns nothing, not even that the collection exists). Each
page also answers ``?format=json`` and ``?format=csv`` with the very dicts it renders
(``scoring/reports.py``), so what a reader sees and what they download cannot disagree.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET

from judgments.models import Collection, Snapshot
from judgments.selectors import role_of

from . import comparison, reports
from .models import Evaluation, Run
from .selectors import evaluation_in, evaluations_of, run_by_name

#: The diagnosis page lists this many relevant items; the CSV and JSON hold all of them.
ITEMS_SHOWN = 2000

# -- access and parameters ----------------------------------------------------------------


def member_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Resolve ``slug`` to a collection the user is a member of (any role), else 404."""

    @wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        collection = Collection.objects.filter(slug=slug).first()
        role = role_of(request.user, collection) if collection is not None else None
        if collection is None or role is None:
            raise Http404("No such collection, or you are not one of its members.")
        request.collection_role = role  # type: ignore[attr-defined]
        return view(request, collection, *args, **kwargs)

    return wrapper


class BadParameter(ValueError):
    """A query-string parameter that cannot be used; the message says how to fix it."""


def int_param(
    request: HttpRequest,
    name: str,
    *,
    default: int | None = None,
    minimum: int = 1,
    maximum: int = 2**63 - 1,
) -> int | None:
    raw = request.GET.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadParameter(f"{name}={raw!r} is not a whole number") from None
    if value < minimum:
        raise BadParameter(f"{name} must be at least {minimum}, got {value}")
    if value > maximum:
        raise BadParameter(f"{name} must be at most {maximum}, got {value}")
    return value


def _collection_url(collection: Collection) -> str | None:
    try:
        return reverse("judgments:collection", kwargs={"slug": collection.slug})
    except NoReverseMatch:
        return None


def _data_response(
    request: HttpRequest, data: dict[str, Any], csv_text: Callable[[], str], name: str
):
    fmt = request.GET.get("format", "")
    if fmt == "json":
        return JsonResponse(data, json_dumps_params={"ensure_ascii": False, "indent": 2})
    if fmt == "csv":
        response = HttpResponse(csv_text(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
        return response
    return None


def _bad_request(request: HttpRequest, collection: Collection, title: str, reasons: list[str]):
    return render(
        request,
        "scoring/refused.html",
        {"collection": collection, "title": title, "reasons": reasons},
        status=400,
    )


# -- evaluations --------------------------------------------------------------------------


@require_GET
@member_page
def evaluation_list(request: HttpRequest, collection: Collection) -> HttpResponse:
    evaluations = evaluations_of(collection)[:500]
    return render(
        request,
        "scoring/evaluations.html",
        {
            "collection": collection,
            "collection_url": _collection_url(collection),
            "evaluations": evaluations,
        },
    )


@require_GET
@member_page
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
    for m in measures:
        agg = report["aggregates"].get(m, {})
        aggregates.append(
            {
                "measure": m,
                "label": reports.measure_label(m),
                "macro": reports.fmt_value(m, agg.get("macro")),
                "pooled": reports.fmt_value(m, agg["pooled"]) if "pooled" in agg else "",
                "has_pooled": "pooled" in agg,
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


# -- diagnosis ----------------------------------------------------------------------------


@require_GET
@member_page
def run_diagnosis(request: HttpRequest, collection: Collection, name: str) -> HttpResponse:
    try:
        run = run_by_name(collection, name)
    except Run.DoesNotExist:
        raise Http404(f"collection '{collection.slug}' has no run '{name}'") from None
    try:
        params = reports.diagnosis_params(
            run=run,
            snapshot=int_param(request, "snapshot"),
            k=int_param(request, "k", maximum=1_000_000),
            rel_level=int_param(request, "rel"),
            unjudged=request.GET.get("unjudged") or "nonrel",
            mapping=int_param(request, "mapping"),
        )
    except (BadParameter, reports.DiagnosisError, Snapshot.DoesNotExist) as exc:
        return _bad_request(request, collection, "This diagnosis cannot be made", [str(exc)])
    diagnosis = reports.diagnosis_for(
        **params, may_score=reports.may_score(request.user, collection), by=request.user
    )
    data = _data_response(
        request,
        diagnosis,
        lambda: reports.diagnosis_csv(diagnosis),
        f"{collection.slug}-{run.name}-diagnosis-v{params['snapshot'].number}-k{params['k']}",
    )
    if data is not None:
        return data
    return render(
        request,
        "scoring/diagnosis.html",
        {
            "collection": collection,
            "collection_url": _collection_url(collection),
            "run": run,
            "d": diagnosis,
            "view": diagnosis_view(diagnosis),
            "snapshots": collection.snapshots.order_by("-number").values_list("number", flat=True),
            "chart_data": {
                "stages": diagnosis["stages"],
                "outcomes": diagnosis["outcomes"],
                "totals": diagnosis["totals"],
                "per_query": [
                    {"query": r["query"], "outcomes": r["outcomes"]} for r in diagnosis["per_query"]
                ],
            },
        },
    )


def diagnosis_view(d: dict[str, Any]) -> dict[str, Any]:
    k = d["header"]["k"]
    labels = {o["key"]: o["label"] for o in d["outcomes"]}
    stage_rows = []
    for s in d["stage_scores"]:
        agg = s["aggregates"] or {}
        stage_rows.append(
            {
                **s,
                "cells": [
                    reports.fmt_value(m, agg.get(m, {}).get("macro")) if agg else "not scored"
                    for m in (f"R@{k}", f"AnyHit@{k}", f"AllHit@{k}", f"nDCG@{k}")
                ],
                "pooled": reports.fmt_value(f"R@{k}", agg.get(f"R@{k}", {}).get("pooled"))
                if agg
                else "not scored",
            }
        )
    n = d["relevant_items"]
    return {
        "k": k,
        "score_columns": [f"R@{k} macro", f"AnyHit@{k}", f"AllHit@{k}", f"nDCG@{k}"],
        "stage_rows": stage_rows,
        "missing_scores": [s["stage"] for s in d["stage_scores"] if s["evaluation"] is None],
        "totals": [
            {
                **o,
                "count": d["totals"][o["key"]],
                "share": reports.fmt_number("R", d["share"][o["key"]]) if n else "undefined",
            }
            for o in d["outcomes"]
        ],
        "reached": [
            {
                "stage": s,
                "count": c,
                "share": reports.fmt_number("R", c / n) if n else "undefined",
            }
            for s, c in zip(d["stages"], d["reached_by_stage"], strict=True)
        ],
        "queries": [
            {
                **r,
                "tags_json": json.dumps(r.get("tags", [])),
                "counts": [r["outcomes"][o["key"]] for o in d["outcomes"]],
                "recall": [
                    {"text": reports.fmt_value(f"R@{k}", v), "sort": reports.sort_value(v)}
                    for v in r["recall"]
                ],
            }
            for r in d["per_query"]
        ],
        "items": [
            {
                **it,
                "label": labels[it["outcome"]],
                "rank_cells": ["—" if r is None else r for r in it["ranks"]],
            }
            for it in d["items"][:ITEMS_SHOWN]
        ],
        "items_hidden": max(0, len(d["items"]) - ITEMS_SHOWN),
        "tags": sorted({t for r in d["per_query"] for t in r.get("tags", [])}),
    }


# -- comparison ---------------------------------------------------------------------------


@require_GET
@member_page
def compare(request: HttpRequest, collection: Collection) -> HttpResponse:
    evaluations = evaluations_of(collection)[:500]
    context: dict[str, Any] = {
        "collection": collection,
        "collection_url": _collection_url(collection),
        "evaluations": evaluations,
    }
    if not request.GET.get("a") or not request.GET.get("b"):
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
        result = reports.compare_evaluations(a, b, seed=seed)
    except reports.ComparisonRefused as exc:
        if request.GET.get("format") == "json":
            return JsonResponse({"refused": True, "reasons": exc.reasons}, status=400)
        context["reasons"] = exc.reasons
        return render(request, "scoring/compare.html", context, status=400)
    data = _data_response(
        request,
        result,
        lambda: reports.comparison_csv(result),
        f"{collection.slug}-compare-{a.pk}-{b.pk}",
    )
    if data is not None:
        return data
    context.update(
        {
            "result": result,
            "view": comparison_view(result),
            "chart_data": {
                "measures": [e["key"] for e in result["measures"]],
                "values": result["per_query"]["values"],
                "rates": {e["key"]: reports.is_rate(e["measure"]) for e in result["measures"]},
            },
        }
    )
    return render(request, "scoring/compare.html", context)


def _fmt3(value: float | None) -> str:
    if value is None:
        return "undefined"
    return "0.000" if abs(value) <= comparison.TIE else f"{value:.3f}"


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
    return {
        "rows": rows,
        "pooled": pooled,
        "descriptive": descriptive,
        "keys": keys,
        "tag_tables": tag_tables,
        "default_key": keys[0] if keys else None,
    }
