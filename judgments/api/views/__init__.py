"""API views of collections, members, queries, items, judgments, tasks and snapshots.

Each view parses its input with a serializer, calls one service or selector, and
renders; access rules live in ``permissions.py``, error shapes in ``errors.py``.
"""

from .collections import CollectionDetailView, CollectionListView, MemberViewSet
from .common import NamedLookup, error, not_found
from .health import healthz
from .judgments import JudgmentViewSet
from .queries import ItemViewSet, QueryViewSet
from .snapshots import QrelsView, SnapshotViewSet
from .tasks import TaskViewSet

__all__ = [
    "CollectionDetailView",
    "CollectionListView",
    "ItemViewSet",
    "JudgmentViewSet",
    "MemberViewSet",
    "NamedLookup",
    "QrelsView",
    "QueryViewSet",
    "SnapshotViewSet",
    "TaskViewSet",
    "error",
    "healthz",
    "not_found",
]
