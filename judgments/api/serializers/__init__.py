"""The HTTP shapes of collections, members, queries, items, judgments, tasks, snapshots.

Output serializers render; input serializers (``…Input``) parse and validate a request
and never save anything: views pass their data to one service function.
Ids in URLs and bodies are the stable external ids (query, item), the snapshot number,
the run name; only judgments and tasks, which have no external id, use their row id.
"""

from __future__ import annotations

from .collections import (
    CollectionSerializer,
    CollectionSettingsInput,
    MemberCreateInput,
    MemberRoleInput,
    MemberSerializer,
)
from .common import (
    CLIENT_KEY_HELP,
    GradeField,
    KnownFieldsOnly,
    ScaleEntrySerializer,
    username_of,
)
from .judgments import (
    JudgmentConflictSerializer,
    JudgmentCreateInput,
    JudgmentSerializer,
    JudgmentUpdateInput,
)
from .queries import (
    ItemSerializer,
    QuerySerializer,
    QueryStatusInput,
)
from .snapshots import (
    EvidenceChangeSerializer,
    FreezeInput,
    FreezeResultSerializer,
    GradedPairSerializer,
    RegradedPairSerializer,
    SnapshotDiffSerializer,
    SnapshotSerializer,
    StatusChangeSerializer,
)
from .tasks import (
    TaskJudgeInput,
    TaskSerializer,
    TaskSourceSerializer,
    task_answer,
)

__all__ = [
    "CLIENT_KEY_HELP",
    "CollectionSerializer",
    "CollectionSettingsInput",
    "EvidenceChangeSerializer",
    "FreezeInput",
    "FreezeResultSerializer",
    "GradeField",
    "GradedPairSerializer",
    "ItemSerializer",
    "JudgmentConflictSerializer",
    "JudgmentCreateInput",
    "JudgmentSerializer",
    "JudgmentUpdateInput",
    "KnownFieldsOnly",
    "MemberCreateInput",
    "MemberRoleInput",
    "MemberSerializer",
    "QuerySerializer",
    "QueryStatusInput",
    "RegradedPairSerializer",
    "ScaleEntrySerializer",
    "SnapshotDiffSerializer",
    "SnapshotSerializer",
    "StatusChangeSerializer",
    "TaskJudgeInput",
    "TaskSerializer",
    "TaskSourceSerializer",
    "task_answer",
    "username_of",
]
