"""The reviewer's pages: collections, one collection's queries, the review queue, a query.

Views parse the request, call one service or selector, and render. The queue's POST
endpoints answer JSON to the page's script (``Accept: application/json``), with the next
panel as server-rendered HTML, and redirect or render a whole page otherwise, so the
queue also works without JavaScript. Nothing is ever saved over someone else's change:
a stale edit renders both values and waits for the reviewer to choose.
"""

from .assessments import (
    adjudication_decide,
    adjudication_queue,
    agreement_page,
    reviewer_stats_page,
)
from .audit_log import audit_log, collection_audit_log
from .collections import bulk_status, collection_detail, home
from .common import member_view, wants_json
from .exports import collection_bundle, snapshot_download
from .queries import query_detail
from .review_queue import (
    review,
    review_claim,
    review_judge,
    review_settle,
    review_skip,
    review_undo,
)
from .review_scope import ReviewScope, ReviewSession
from .setup import collection_members, collection_settings, new_collection
from .snapshots import snapshot_diff, snapshot_diff_pick, snapshot_freeze, snapshot_list

__all__ = [
    "ReviewScope",
    "ReviewSession",
    "adjudication_decide",
    "adjudication_queue",
    "agreement_page",
    "audit_log",
    "bulk_status",
    "collection_audit_log",
    "collection_bundle",
    "collection_detail",
    "collection_members",
    "collection_settings",
    "home",
    "member_view",
    "new_collection",
    "query_detail",
    "review",
    "review_claim",
    "review_judge",
    "review_settle",
    "review_skip",
    "review_undo",
    "reviewer_stats_page",
    "snapshot_diff",
    "snapshot_diff_pick",
    "snapshot_download",
    "snapshot_freeze",
    "snapshot_list",
    "wants_json",
]
