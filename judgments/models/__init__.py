"""Collections, queries, items, judgments, their history and the review queue.

The DESIGN table is the glossary. Models hold data and invariants the database can
check; invariants that span rows (a ``relevant`` query needs a relevant judgment) are
enforced by the service functions in ``services``, which own the transactions.

One module per concept; this package re-exports every model, so they are imported
from ``judgments.models``. Imported in this order, the modules register the models in
the order in which the single ``models.py`` defined them.
"""

from .assessments import (
    AdjudicationStatus,
    AdjudicationTask,
    Assessment,
    AssessmentChange,
)
from .collections import (
    ROLE_RANK,
    Collection,
    CollectionManager,
    LabelingUnit,
    Membership,
    ResolutionPolicy,
    Role,
    role_allows,
)
from .focus import FocusPair, FocusSet
from .immutable import AppendOnlyModel, FrozenModel, ImmutableModel, ImmutableQuerySet
from .judgments import ChangeSource, Judgment, JudgmentChange, QueryStatusChange
from .pool_arms import PoolArm
from .queries import (
    EvidenceCondition,
    Item,
    Query,
    QueryStatus,
    StatusPlan,
    plan_status_change,
    status_refusal,
)
from .queue import ReviewTask, TaskSkip, TaskSource, TaskStatus
from .snapshots import (
    Snapshot,
    SnapshotAssessment,
    SnapshotJudgment,
    SnapshotQuery,
    SnapshotUnjudged,
    UnfrozenChange,
)
from .tokens import SCOPE_RANK, ApiToken, TokenScope, hash_key, scope_allows

__all__ = [
    "ROLE_RANK",
    "SCOPE_RANK",
    "AdjudicationStatus",
    "AdjudicationTask",
    "ApiToken",
    "AppendOnlyModel",
    "Assessment",
    "AssessmentChange",
    "ChangeSource",
    "Collection",
    "CollectionManager",
    "EvidenceCondition",
    "FocusPair",
    "FocusSet",
    "FrozenModel",
    "ImmutableModel",
    "ImmutableQuerySet",
    "Item",
    "Judgment",
    "JudgmentChange",
    "LabelingUnit",
    "Membership",
    "PoolArm",
    "Query",
    "QueryStatus",
    "QueryStatusChange",
    "ResolutionPolicy",
    "ReviewTask",
    "Role",
    "Snapshot",
    "SnapshotAssessment",
    "SnapshotJudgment",
    "SnapshotQuery",
    "SnapshotUnjudged",
    "StatusPlan",
    "TaskSkip",
    "TaskSource",
    "TaskStatus",
    "TokenScope",
    "UnfrozenChange",
    "hash_key",
    "plan_status_change",
    "role_allows",
    "scope_allows",
    "status_refusal",
]
