"""The stage diagnosis page of a run: the last stage each relevant item reached, and each
stage's scores at the same cutoff."""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from judgments.models import Collection, Role, Snapshot
from judgments.views.common import RoleRequired

from .. import reports
from ..models import Run
from ..selectors import run_by_name
from ..tasks import diagnosis_url, missing_diagnosis_stages, start_diagnosis
from .common import (
    BadParameter,
    _bad_request,
    _collection_url,
    _data_response,
    int_param,
    label_page,
)

#: The diagnosis page lists this many relevant items; the CSV and JSON hold all of them.
ITEMS_SHOWN = 2000


def _diagnosis_request(
    request: HttpRequest, collection: Collection, name: str, query: dict[str, str]
) -> tuple[Run, dict[str, Any]] | HttpResponse:
    """The run and its diagnosis parameters from the query string (or the form), or the
    page that says why they cannot be used."""
    try:
        run = run_by_name(collection, name)
    except Run.DoesNotExist:
        raise Http404(f"collection '{collection.slug}' has no run '{name}'") from None
    try:
        params = reports.diagnosis_params(
            run=run,
            snapshot=int_param(query, "snapshot"),
            k=int_param(query, "k", maximum=1_000_000),
            rel_level=int_param(query, "rel"),
            unjudged=query.get("unjudged") or "nonrel",
            mapping=int_param(query, "mapping"),
        )
    except (BadParameter, reports.DiagnosisError, Snapshot.DoesNotExist) as exc:
        return _bad_request(request, collection, "This diagnosis cannot be made", [str(exc)])
    return run, params


@require_GET
@label_page
def run_diagnosis(request: HttpRequest, collection: Collection, name: str) -> HttpResponse:
    """The diagnosis from what is stored; it never scores (a GET writes nothing). Stages
    with no evaluation at these parameters are named, and an evaluator may score them
    with one POST (a job) before coming back."""
    resolved = _diagnosis_request(request, collection, name, request.GET)
    if isinstance(resolved, HttpResponse):
        return resolved
    run, params = resolved
    diagnosis = reports.diagnosis_for(**params)
    data = _data_response(
        request,
        diagnosis,
        lambda: reports.diagnosis_csv(diagnosis),
        f"{collection.slug}-{run.name}-diagnosis-v{params['snapshot'].number}-k{params['k']}",
        collection=collection,
    )
    if data is not None:
        return data
    e = params["params"]
    return render(
        request,
        "scoring/diagnosis.html",
        {
            "collection": collection,
            "collection_url": _collection_url(collection),
            "run": run,
            "d": diagnosis,
            "view": diagnosis_view(diagnosis),
            "may_score": reports.may_score(request.user, collection),
            "score_params": {
                "snapshot": params["snapshot"].number,
                "k": params["k"],
                "rel": e.rel_level,
                "unjudged": e.unjudged,
                "mapping": params["mapping"].number if params["mapping"] else "",
            },
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


@require_POST
@label_page
def diagnosis_score(request: HttpRequest, collection: Collection, name: str) -> HttpResponse:
    """Score the stages the diagnosis lacks (evaluators), as a job that lands back on the
    diagnosis when it is done."""
    if not reports.may_score(request.user, collection):
        raise RoleRequired(
            "Scoring stores evaluations: it needs the evaluator role.", role=Role.EVALUATOR
        )
    resolved = _diagnosis_request(request, collection, name, request.POST)
    if isinstance(resolved, HttpResponse):
        return resolved
    run, params = resolved
    if not missing_diagnosis_stages(params):
        e = params["params"]
        return redirect(diagnosis_url(run, params["snapshot"], params["k"], e, params["mapping"]))
    return redirect("jobs:job", pk=start_diagnosis(params=params, by=request.user).pk)


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
