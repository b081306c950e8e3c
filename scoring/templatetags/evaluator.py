"""``{% evaluator_panel collection %}``: the evaluator's panel on a collection's page.

The collection page belongs to ``judgments``, which never imports ``scoring``; this tag
is how the scoring side adds its panel there (a template loads it at render time). It
renders for evaluators (and admins) only: snapshots, runs, evaluations and recent jobs,
with counts, the latest of each, and links.
"""

from __future__ import annotations

from typing import Any

from django import template

from judgments.models import Collection, Role, Snapshot, role_allows

from ..models import Evaluation, Run

register = template.Library()


@register.inclusion_tag("scoring/_evaluator_panel_body.html", takes_context=True)
def evaluator_panel(context: Any, collection: Collection) -> dict[str, Any]:
    from jobs.selectors import jobs_visible_to  # here: template libraries load at start-up

    request = context["request"]
    role = getattr(request, "collection_role", None)
    if not role_allows(role, Role.EVALUATOR):
        return {"show": False}
    snapshots = Snapshot.objects.filter(collection=collection)
    runs = Run.objects.filter(collection=collection)
    evaluations = Evaluation.objects.filter(collection=collection)
    return {
        "show": True,
        "collection": collection,
        "n_snapshots": snapshots.count(),
        "latest_snapshot": snapshots.order_by("-number").first(),
        "n_runs": runs.count(),
        "latest_run": runs.order_by("-created_at", "-pk").prefetch_related("stages").first(),
        "n_evaluations": evaluations.count(),
        "latest_evaluation": evaluations.select_related("run", "stage", "snapshot")
        .order_by("-created_at", "-pk")
        .first(),
        "jobs": jobs_visible_to(request.user)
        .filter(collection=collection)
        .order_by("-created_at", "-pk")[:5],
        "csrf_token": context.get("csrf_token"),
    }
