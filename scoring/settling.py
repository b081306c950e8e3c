"""Settled comparisons for the page and the API: ``settlement_for`` (the comparison JSON's
``settlement``) and ``queue_comparison_pairs``, the one write behind the compare page's
button and the API's ``compare/focus/`` (both check the evaluator role)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.core.cache import cache
from django.urls import reverse

from judgments.models import Collection
from judgments.services import FocusOutcome, InvariantError, queue_focus

from . import reports
from .models import Evaluation


def review_url(collection: Collection, focus: str) -> str:
    """The review queue scoped to focus set ``focus``."""
    return reverse("judgments:review", args=[collection.slug]) + "?" + urlencode({"scope": focus})


def queue_comparison_pairs(
    a: Evaluation, b: Evaluation, *, by: Any, measure: str | None = None, request: Any = None
) -> FocusOutcome | None:
    """Queue the pairs of ``settlement(a, b)`` that could change any measure, or only
    ``measure`` (AP's may be every ranked item; P@10's a few); ``None`` when there are
    none. ``ComparisonRefused`` when a and b cannot be compared, ``InvariantError`` for a
    measure the comparison does not have."""
    reasons = reports.comparison_refusals(a, b)
    if reasons:
        raise reports.ComparisonRefused(reasons)
    data = reports.settlement(a, b)
    if not data["applies"]:
        return None
    pairs = data["pairs"]
    if measure:
        entry = next((e for e in data["measures"] if e["measure"] == measure), None)
        if entry is None:
            have = ", ".join(e["measure"] for e in data["measures"])
            raise InvariantError(f"the comparison has no measure {measure!r}; it has {have}")
        pairs = entry["pairs"]
    if not pairs["count"]:
        return None
    return queue_focus(
        collection=a.collection,
        name=data["focus"],
        pairs=[tuple(p) for p in pairs["rows"]],
        by=by,
        description=f"the unjudged pairs that could change the sign of '{a.run.name}' - "
        f"'{b.run.name}' on snapshot v{a.snapshot.number} (evaluations {a.pk}, {b.pk})",
        request=request,
    )


def settlement_for(a: Evaluation, b: Evaluation) -> dict[str, Any]:
    """The comparison's ``settlement`` for its JSON and page: whether each measure is
    settled and the pairs that could change it, the focus set queued for them (with how
    many are judged now), and the comparison on a newer snapshot, if there is one."""
    # Two evaluations never change, so neither does their settlement: cached by their
    # ids and fingerprints (every input's hash). The focus set and a newer snapshot are live.
    key = f"verity:settlement:{a.pk}:{a.fingerprint}:{b.pk}:{b.fingerprint}"
    data = cache.get(key)
    if data is None:
        data = reports.settlement(a, b)
        cache.set(key, data, timeout=3600)
    data = dict(data)
    if data["applies"]:
        data["focus_state"] = reports.focus_state(a, b)
        data["review_url"] = review_url(a.collection, data["focus"])
        data["newer"] = reports.newer_comparison(a, b)
    return data
