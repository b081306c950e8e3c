"""Reads: querysets with their joins applied, named as questions.

One module per concept; this package re-exports the public names, so callers import
them from ``judgments.selectors``.
"""

from .access import collections_for, may, may_adjudicate, may_score, role_of
from .assessments import (
    agreement_report,
    assessments_of_pair,
    frozen_assessments,
    frozen_unresolved,
    live_assessments,
    one_assessor,
    open_adjudications,
    unresolved_pairs,
)
from .collections import (
    collection_by_slug,
    collections_with_progress,
    item_in,
    queries_with_progress,
    query_in,
    query_tags_of,
    status_change_plan,
)
from .exports import bundle_of, judgments_of, queries_of, unjudged_items_for
from .review import (
    OPEN_TASK_STATUSES,
    QueryProgress,
    ReviewProgress,
    change_that_made,
    collections_with_review_progress,
    evidence_of,
    held_task_for,
    judgment_changes,
    judgments_for_query,
    open_tasks_for_query,
    open_tasks_of,
    query_progress,
    queue_progress,
    task_for_review,
)
from .reviewers import labels_per_hour, reviewer_stats
from .search import SearchHit, search_items
from .snapshots import (
    SnapshotDiff,
    diff_snapshots,
    frozen_judgments,
    frozen_queries,
    frozen_unjudged,
    snapshot_canonical_lines,
    snapshot_of,
    snapshot_trec_lines,
)

__all__ = [
    "OPEN_TASK_STATUSES",
    "QueryProgress",
    "ReviewProgress",
    "SearchHit",
    "SnapshotDiff",
    "agreement_report",
    "assessments_of_pair",
    "bundle_of",
    "change_that_made",
    "collection_by_slug",
    "collections_for",
    "collections_with_progress",
    "collections_with_review_progress",
    "diff_snapshots",
    "evidence_of",
    "frozen_assessments",
    "frozen_judgments",
    "frozen_queries",
    "frozen_unjudged",
    "frozen_unresolved",
    "held_task_for",
    "item_in",
    "judgment_changes",
    "judgments_for_query",
    "judgments_of",
    "labels_per_hour",
    "live_assessments",
    "may",
    "may_adjudicate",
    "may_score",
    "one_assessor",
    "open_adjudications",
    "open_tasks_for_query",
    "open_tasks_of",
    "queries_of",
    "queries_with_progress",
    "query_in",
    "query_progress",
    "query_tags_of",
    "queue_progress",
    "reviewer_stats",
    "role_of",
    "search_items",
    "snapshot_canonical_lines",
    "snapshot_of",
    "snapshot_trec_lines",
    "status_change_plan",
    "task_for_review",
    "unjudged_items_for",
    "unresolved_pairs",
]
