"""Focus sets: queue named pairs first (``URGENT_PRIORITY``), and name them as a scope.

Who may: the evaluator role (``may_score``), checked by the views and the API. Queueing a
focus set reorders every reviewer's queue (its pairs are served before any pooled
order), which is a decision about where reviewers' hours go, like uploading a run (which
pools its pairs); a reviewer labels what is served and does not decide that.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction
from django.utils.text import slugify

from audit.services import record

from ..models import Collection, FocusPair, FocusSet, Item, Query, ReviewTask, TaskStatus
from ._common import User
from .errors import InvariantError
from .pooling import URGENT_PRIORITY, pool_items

#: Pairs one focus set may name at once: a comparison's flipping pairs are a few hundred;
#: a set larger than this is a pool, and belongs to pooling.
MAX_FOCUS_PAIRS = 20_000


@dataclass(frozen=True)
class FocusOutcome:
    focus: FocusSet
    pairs: int  # pairs named (distinct)
    unjudged: int  # of them, pairs with no judgment when queued
    queued: int  # review tasks created (the others existed and were raised)
    raised: int  # open tasks now at URGENT_PRIORITY that were below it
    created: bool  # the focus set is new


@transaction.atomic
def queue_focus(
    *,
    collection: Collection,
    name: str,
    pairs: Sequence[tuple[str, str]],
    by: User | None,
    description: str = "",
    request: object = None,
) -> FocusOutcome:
    """Name ``pairs`` ((query external id, item external id)) as the focus set ``name``
    and queue the unjudged ones at ``URGENT_PRIORITY``: served before every pooled pair
    (``claim_next_task`` orders by priority) and never lowered by later pooling
    (``pooling._queue_staged`` keeps an urgent priority). An item the collection lacks is
    created as a placeholder, as pooling does (refused when the collection holds its
    whole corpus). A judged pair is named but not queued. Queueing the same name again
    adds the pairs it lacks; nothing is removed. Recorded as ``review.focus``.
    """
    if slugify(name) != name or not name:
        raise InvariantError(
            f"focus set name {name!r} must be a slug (letters, digits, '-' or '_'), "
            "e.g. 'compare-12-15'"
        )
    wanted = sorted(set(pairs))
    if len(wanted) > MAX_FOCUS_PAIRS:
        raise InvariantError(
            f"{len(wanted)} pairs: a focus set names at most {MAX_FOCUS_PAIRS:,}; "
            "pool them with a run instead"
        )
    qids = {q for q, _ in wanted}
    query_pks = dict(
        Query.objects.filter(collection=collection, external_id__in=qids).values_list(
            "external_id", "pk"
        )
    )
    unknown = sorted(qids - query_pks.keys())
    if unknown:
        raise InvariantError(
            f"no query {', '.join(repr(q) for q in unknown[:5])} in '{collection.slug}'; "
            "a focus set names pairs of the collection's queries"
        )

    def check_missing(missing: list[str]) -> None:
        if missing and collection.holds_whole_corpus:
            raise InvariantError(
                f"items {', '.join(missing[:5])} are not in '{collection.slug}', which holds "
                "its whole corpus; import them first"
            )

    outcome = pool_items(
        collection=collection,
        rows=((query_pks[q], item, None, 0) for q, item in wanted),
        labels=[f"focus {name}"],
        check_missing=check_missing,
    )
    focus, created = FocusSet.objects.get_or_create(
        collection=collection,
        name=name,
        defaults={"description": description[:500], "created_by": by},
    )
    item_pks = dict(
        Item.objects.filter(
            collection=collection, external_id__in={i for _, i in wanted}
        ).values_list("external_id", "pk")
    )
    FocusPair.objects.bulk_create(
        [FocusPair(focus=focus, query_id=query_pks[q], item_id=item_pks[i]) for q, i in wanted],
        ignore_conflicts=True,
    )
    raised = (
        ReviewTask.objects.filter(
            collection=collection,
            status__in=(TaskStatus.PENDING, TaskStatus.CLAIMED),
            priority__lt=URGENT_PRIORITY,
        )
        .filter(focus.holds_task())
        .update(priority=URGENT_PRIORITY)
    )
    record(
        "review.focus",
        actor=by,
        collection=collection,
        target=f"focus {name}",
        after={"pairs": len(wanted), "unjudged": outcome.unjudged, "queued": outcome.queued},
        detail={"description": description[:500], "created": created},
        request=request,
    )
    return FocusOutcome(
        focus=focus,
        pairs=len(wanted),
        unjudged=outcome.unjudged,
        queued=outcome.queued,
        raised=raised,
        created=created,
    )
