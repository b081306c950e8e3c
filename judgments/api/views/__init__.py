"""API views of collections, members, queries, items, judgments, tasks and snapshots.

Each view parses its input with a serializer, calls one service or selector, and
renders; access rules live in ``permissions.py``, error shapes in ``errors.py``.
"""

from .assessments import AgreementView
from .collections import (
    CollectionDetailView,
    CollectionImportJobView,
    CollectionListView,
    MemberViewSet,
)
from .common import NamedLookup, error, not_found
from .health import healthz
from .judgments import JudgmentViewSet
from .queries import ItemViewSet, QueryViewSet
from .snapshots import QrelsExportJobView, QrelsView, SnapshotViewSet
from .tasks import TaskViewSet

__all__ = [
    "AgreementView",
    "CollectionDetailView",
    "CollectionImportJobView",
    "CollectionListView",
    "ItemViewSet",
    "JudgmentViewSet",
    "MemberViewSet",
    "NamedLookup",
    "QrelsExportJobView",
    "QrelsView",
    "QueryViewSet",
    "SnapshotViewSet",
    "TaskViewSet",
    "error",
    "healthz",
    "not_found",
]
