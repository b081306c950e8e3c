"""State changes for judgments: every change is one function that owns its transaction.

Each function states the invariant it keeps. History rows are written inside the same
transaction as the change they record, so a change and its history land together or
not at all.

One module per concept; this package re-exports the public names, so callers import
them from ``judgments.services``.
"""

from .assessments import (
    adjudicate,
    assess_task,
    assessment_settled,
    change_own_assessment,
    record_assessment,
    resolve_pair,
)
from .collections import (
    COLLECTION_SETTINGS,
    RESERVED_SLUGS,
    create_collection,
    update_collection_settings,
    validate_scale,
)
from .errors import ImportRefused, InvariantError, JudgmentConflict, VerityError
from .exports import record_export
from .focus import MAX_FOCUS_PAIRS, FocusOutcome, queue_focus
from .import_writes import IMPORT_BATCH_SIZE, PROGRESS_EVERY
from .imports import ImportReport, import_collection_data
from .judging import edit_judgment, judge_task
from .judgments import (
    UndoneChange,
    record_judgment,
    record_judgment_once,
    remove_judgment,
    undo_judgment_change,
)
from .members import set_adjudicator, set_member_access, set_member_role, set_membership
from .pooling import PoolOutcome, pool_items
from .queries import (
    normalize_evidence,
    set_evidence_condition,
    set_query_status,
    set_query_statuses,
)
from .queue import (
    DEFAULT_LEASE,
    claim_next_task,
    queue_unjudged,
    release_expired_leases,
    skip_task,
    task_priority,
)
from .setup import REVIEW_SETTINGS, set_up_collection
from .snapshots import freeze_snapshot
from .statistics import analyze_after_commit
from .tokens import (
    IssuedToken,
    create_api_token,
    revoke_api_token,
    revoke_api_tokens_of,
    rotate_api_token,
)

__all__ = [
    "COLLECTION_SETTINGS",
    "DEFAULT_LEASE",
    "IMPORT_BATCH_SIZE",
    "MAX_FOCUS_PAIRS",
    "PROGRESS_EVERY",
    "RESERVED_SLUGS",
    "REVIEW_SETTINGS",
    "FocusOutcome",
    "ImportRefused",
    "ImportReport",
    "InvariantError",
    "IssuedToken",
    "JudgmentConflict",
    "PoolOutcome",
    "UndoneChange",
    "VerityError",
    "adjudicate",
    "analyze_after_commit",
    "assess_task",
    "assessment_settled",
    "change_own_assessment",
    "claim_next_task",
    "create_api_token",
    "create_collection",
    "edit_judgment",
    "freeze_snapshot",
    "import_collection_data",
    "judge_task",
    "normalize_evidence",
    "pool_items",
    "queue_focus",
    "queue_unjudged",
    "record_assessment",
    "record_export",
    "record_judgment",
    "record_judgment_once",
    "release_expired_leases",
    "remove_judgment",
    "resolve_pair",
    "revoke_api_token",
    "revoke_api_tokens_of",
    "rotate_api_token",
    "set_adjudicator",
    "set_evidence_condition",
    "set_member_access",
    "set_member_role",
    "set_membership",
    "set_query_status",
    "set_query_statuses",
    "set_up_collection",
    "skip_task",
    "task_priority",
    "undo_judgment_change",
    "update_collection_settings",
    "validate_scale",
]
