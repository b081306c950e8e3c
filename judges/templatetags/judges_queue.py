"""``{% queue_proposal %}``: the model's proposal for the task on the review queue's
panel, with a one-key accept. A template tag, so that the queue's views (judgments)
need not know the judges app exists."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.inclusion_tag("judges/_queue_proposal.html", takes_context=True)
def queue_proposal(context: Any) -> dict[str, Any]:
    # Imported here: template libraries load at every start-up (bench/startup_bench.py).
    from ..selectors import ACCEPTED_MARK, proposal_for_review

    task, collection = context.get("task"), context.get("collection")
    proposal = None
    if task is not None and collection is not None:
        proposal = proposal_for_review(collection, task.query_id, task.item_id)
    out: dict[str, Any] = {"proposal": proposal}
    if proposal is not None:
        out.update(
            collection=collection,
            task=task,
            scope=context.get("scope"),
            grade_name=collection.grade_name(proposal.grade),
            note=f"{ACCEPTED_MARK}{proposal.pk} ({proposal.judge}, {proposal.model})",
            csrf_token=context.get("csrf_token"),
        )
    return out
