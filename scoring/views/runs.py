"""The runs of a collection (and the upload form), and one run's ranked list for one
query with each item's label beside it."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from judgments.models import Collection, Item, Query, Role, Snapshot
from judgments.selectors import (
    judgments_for_query,
    may_score,
    may_see_labels,
    open_tasks_for_query,
    snapshot_of,
)
from judgments.views.common import RoleRequired, _grade_label, _grades

from ..forms import RunUploadForm
from ..models import RankedList, Run
from ..selectors import hole_ks, run_by_name, stage_holes, stage_lists_of, stages_in_order
from ..tasks import start_run_import
from .common import (
    BadParameter,
    _bad_request,
    _collection_url,
    int_param,
    label_page,
    member_page,
)

#: Items of a ranked list shown per stage (the rest is counted, not listed).
LIST_SHOWN = 200
#: The runs page counts holes inline for stages up to this many ranked rows (a few
#: seconds at most, once: cached); a larger stage's are on its run's page and API.
LIST_HOLES_MAX_ROWS = 1_000_000


def _runs_of(collection: Collection) -> Any:
    return (
        Run.objects.filter(collection=collection)
        .select_related("created_by")
        .prefetch_related("stages")
        .order_by("-created_at", "-pk")
    )


@require_http_methods(["GET", "POST"])
@member_page
def run_list(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Every run with its stages; evaluators also get the upload form, whose POST
    starts an import job and lands on its page."""
    may_upload = may_score(request.user, collection)
    form = None
    if may_upload:
        if request.method == "POST":
            form = RunUploadForm(request.POST, request.FILES, collection=collection)
            if form.is_valid():
                v = form.cleaned_data
                job = start_run_import(
                    collection=collection,
                    upload=v["file"],
                    filename=v["file"].name or "run",
                    name=v["name"],
                    description=v["description"],
                    order=v["order"],
                    dedup=v["dedup"],
                    pool_depth=v["pool_depth"],
                    ignore_unknown_queries=v["ignore_unknown_queries"],
                    by=request.user,
                    via="form",
                    pool_strategy=v["pool_strategy"] or None,
                )
                return redirect("jobs:job", pk=job.pk)
        else:
            form = RunUploadForm(collection=collection)
    elif request.method == "POST":
        raise RoleRequired(
            "Uploading runs needs the evaluator role in this collection.", role=Role.EVALUATOR
        )
    snapshot = _holes_snapshot(request, collection)
    ks = hole_ks(collection)
    runs = []
    for run in _runs_of(collection):
        stages = sorted(run.stages.all(), key=lambda s: s.position)
        runs.append(
            {
                "run": run,
                "stages": stages,
                "n_queries": max((s.n_queries for s in stages), default=0),
                "holes": [
                    {
                        "stage": stage.name,
                        "ks": _overall(stage_holes(stage, snapshot, ks))
                        if stage.n_rows <= LIST_HOLES_MAX_ROWS
                        else None,
                    }
                    for stage in stages
                ]
                if snapshot is not None
                else None,
            }
        )
    return render(
        request,
        "scoring/runs.html",
        {
            "collection": collection,
            "collection_url": _collection_url(collection),
            "crumb": "Runs",
            "runs": runs,
            "holes_snapshot": snapshot,
            "hole_ks": ks,
            "form": form,
            "may_score": may_upload,
            # the file chosen before a refusal, named, since no browser re-fills a file input
            "chosen_file": request.FILES.get("file") if form is not None and form.errors else None,
            "status": 400 if form is not None and form.errors else 200,
        },
        status=400 if form is not None and form.errors else 200,
    )


RUN_QUERIES_PER_PAGE = 100


def _holes_snapshot(request: HttpRequest, collection: Collection) -> Snapshot | None:
    """The snapshot holes are counted against (the latest), or ``None``: none frozen yet,
    or a reviewer of a blind collection (which items are judged is the labels' business)."""
    if not may_see_labels(request.user, collection):
        return None
    try:
        return snapshot_of(collection)
    except Snapshot.DoesNotExist:
        return None


def _overall(holes: Any) -> list[dict[str, Any]]:
    overall = holes.overall()
    return [
        {
            "k": k,
            "judged_text": "undefined"
            if v["judged_at"] is None
            else f"{100 * v['judged_at']:.1f}%",
            **v,
        }
        for k, v in ((int(k), v) for k, v in overall["ks"].items())
    ]


def _per_query(holes: Any, qids: list[str]) -> dict[str, list[dict[str, Any]]]:
    return {
        qid: [
            {"k": int(k), "judged_text": f"{100 * v['judged_at']:.0f}%", **v}
            for k, v in row["k"].items()
        ]
        for qid, row in holes.per_query(qids).items()
    }


@require_GET
@member_page
def run_detail(request: HttpRequest, collection: Collection, name: str) -> HttpResponse:
    """One run: its stages, its evaluations, and each query it ranks with a link to the
    ranked list, so that a run nobody scored yet can be read too."""
    try:
        run = run_by_name(collection, name)
    except Run.DoesNotExist:
        raise Http404(f"collection '{collection.slug}' has no run '{name}'") from None
    stages = stages_in_order(run)
    qids = (
        RankedList.objects.filter(stage__run=run)
        .order_by("query_id")
        .values_list("query_id", flat=True)
        .distinct()
    )
    page = Paginator(qids, RUN_QUERIES_PER_PAGE).get_page(request.GET.get("page"))
    texts = dict(
        Query.objects.filter(
            collection=collection, external_id__in=list(page.object_list)
        ).values_list("external_id", "text")
    )
    snapshot = _holes_snapshot(request, collection)
    ks = hole_ks(collection)
    shown = list(page.object_list)
    holes = (
        {stage.name: _per_query(stage_holes(stage, snapshot, ks), shown) for stage in stages}
        if snapshot is not None
        else {}
    )
    return render(
        request,
        "scoring/run.html",
        {
            "collection": collection,
            "collection_url": _collection_url(collection),
            "crumb": f"Run {run.name}",
            "run": run,
            "stages": stages,
            "page": page,
            "queries": [
                {
                    "id": q,
                    "text": texts.get(q),
                    "holes": [
                        {"stage": name, "ks": per[q]} for name, per in holes.items() if q in per
                    ],
                }
                for q in shown
            ],
            "holes_snapshot": snapshot,
            "multi_stage": len(stages) > 1,
            "evaluations": run.evaluations.select_related("stage", "snapshot").order_by("-pk")[:50],
            "may_score": may_score(request.user, collection),
        },
    )


@require_GET
@label_page
def ranked_list(request: HttpRequest, collection: Collection, name: str, qid: str) -> HttpResponse:
    """One query's ranked list in every stage of the run, each item with its grade (or
    "unjudged"), and the relevant items the run missed."""
    try:
        run = run_by_name(collection, name)
    except Run.DoesNotExist:
        raise Http404(f"collection '{collection.slug}' has no run '{name}'") from None
    query = Query.objects.filter(collection=collection, external_id=qid).first()
    stages = stages_in_order(run)
    lists = [stage_lists_of(stage, [qid]).get(qid) for stage in stages]
    if query is None and all(entry is None for entry in lists):
        raise Http404(f"neither the collection nor run '{name}' has a query '{qid}'")
    grades: dict[str, Any] = {}
    queued: set[str] = set()
    if query is not None:
        grades = {j.item.external_id: j for j in judgments_for_query(query)}
        queued = {t.item.external_id for t in open_tasks_for_query(query)}
    # Ranks shown: LIST_SHOWN from ``?from=`` (1 by default), with links to the pages
    # before and after, so that a list of any length can be read to its end.
    try:
        first = int_param(request, "from", default=1) or 1
    except BadParameter as exc:
        return _bad_request(request, collection, "This ranked list cannot be shown", [str(exc)])
    window = slice(first - 1, first - 1 + LIST_SHOWN)
    shown_ids = {i for entry in lists if entry for i in entry[0][window]}
    items = {
        i.external_id: i
        for i in Item.objects.filter(collection=collection, external_id__in=shown_ids)
    }
    relevant = {item for item, j in grades.items() if collection.is_relevant_grade(j.grade)}

    def row(rank: int, item_id: str) -> dict[str, Any]:
        judgment = grades.get(item_id)
        item = items.get(item_id)
        return {
            "rank": rank,
            "id": item_id,
            "title": item.title if item else "",
            "placeholder": item is None or item.placeholder,
            "judgment": judgment,
            "label": _grade_label(collection, judgment.grade) if judgment else "",
            "relevant": item_id in relevant,
            "queued": item_id in queued,
        }

    columns = []
    for stage, entry in zip(stages, lists, strict=True):
        ranked, abstained = entry if entry else ([], False)
        columns.append(
            {
                "stage": stage,
                "rows": [row(r, i) for r, i in enumerate(ranked[window], start=first)],
                "hidden": max(0, len(ranked) - (first - 1 + LIST_SHOWN)),
                "before": first > 1,
                "length": len(ranked),
                "in_run": entry is not None,
                "abstained": abstained,
                "relevant_found": len(relevant & set(ranked)),
            }
        )
    in_any = {i for entry in lists if entry for i in entry[0]}
    missed = [
        {
            "id": item_id,
            "label": _grade_label(collection, grades[item_id].grade),
            "in_stages": [
                c["stage"].name
                for c, entry in zip(columns, lists, strict=True)
                if entry and item_id in entry[0]
            ],
        }
        for item_id in sorted(relevant)
        if len(stages) > 1 or item_id not in in_any
    ]
    return render(
        request,
        "scoring/ranked_list.html",
        {
            "collection": collection,
            "collection_url": _collection_url(collection),
            "crumb": f"{run.name} · query {qid}",
            "run": run,
            "query": query,
            "qid": qid,
            "columns": columns,
            "missed": [m for m in missed if m["id"] not in in_any],
            "coverage": missed if len(stages) > 1 else [],
            "grades": _grades(collection),
            "may_label": query is not None,
            "here": request.get_full_path(),
            "first": first,
            "last_shown": first + LIST_SHOWN - 1,
            "next_from": first + LIST_SHOWN,
            "prev_from": max(1, first - LIST_SHOWN),
            "page_size": LIST_SHOWN,
            "query_url": reverse("judgments:query", args=[collection.slug, qid])
            if query is not None
            else None,
        },
    )
