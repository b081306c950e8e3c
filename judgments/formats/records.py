"""The records a file holds, the Bundle of them, and the problems found in a file.

The limits here are the database's: ids, grades and integers that do not fit are
refused when the file is read, not when it is stored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from verity_limits import ID_MAX, INT16_MAX, INT32_MAX

MAX_LISTED = 25
# The column limits live in ``verity_limits``; these names stay for the callers.
MAX_ID_LENGTH = ID_MAX  # Query.external_id and Item.external_id, in UTF-8 bytes
MAX_SMALL_INT = INT16_MAX  # grades are stored as small integers
MAX_INT = INT32_MAX
UTF8_BOM = b"\xef\xbb\xbf"
UNJUDGED_GRADE = -1
QRELS_UNJUDGED_SOURCE = "qrels -1"
#: The bundle format this code writes (``"format_version"`` on the collection line) and
#: the newest it reads; a line without the field is format 1 (docs/BUNDLES.md).
BUNDLE_FORMAT = 2


@dataclass(frozen=True)
class Where:
    """A place in the input: a file (or "command line") and a 1-based line number."""

    file: str
    line: int | None = None

    def __str__(self) -> str:
        return self.file if self.line is None else f"{self.file}, line {self.line}"


@dataclass(frozen=True)
class Problem:
    where: Where
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def describe_problems(problems: Sequence[Problem], *, limit: int = MAX_LISTED) -> str:
    """The refusal message: a count, then the first ``limit`` problems in file order."""
    files: dict[str, int] = {}
    for p in problems:
        files.setdefault(p.where.file, len(files))
    ordered = sorted(problems, key=lambda p: (files[p.where.file], p.where.line or 0))
    n = len(ordered)
    lines = [f"Nothing was imported: {n} problem{'' if n == 1 else 's'} in the input."]
    lines += [str(p) for p in ordered[:limit]]
    if n > limit:
        lines.append(f"… and {n - limit} more")
    return "\n".join(lines)


@dataclass(frozen=True)
class CollectionRecord:
    where: Where
    slug: str
    name: str
    scale: list[dict[str, Any]]
    relevant_grade: int
    unit: str = "document"
    description: str = ""
    guidelines: str = ""
    pool_depth: int = 10
    format_version: int = 1
    # Format 2's settings; None when the line does not give them (a format 1 bundle): a
    # new collection then takes the defaults, and an existing one is not compared on them.
    holds_whole_corpus: bool | None = None
    assessors_per_item: int | None = None
    resolution_policy: str | None = None
    adjudicate_distance: int | None = None
    model_labels: str | None = None
    # Written only when not the default (``writers.OPTIONAL_SETTING_DEFAULTS``), so a
    # collection pooled by depth exports the same bytes as before they existed.
    pool_strategy: str | None = None
    pool_floor: int | None = None

    def settings(self) -> dict[str, Any]:
        """The format 2 settings the line gives, by ``Collection`` field name."""
        names = (
            "holds_whole_corpus",
            "assessors_per_item",
            "resolution_policy",
            "adjudicate_distance",
            "model_labels",
            "pool_strategy",
            "pool_floor",
        )
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}


@dataclass(frozen=True)
class ItemRecord:
    where: Where
    id: str
    title: str = ""
    text: str = ""
    url: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    placeholder: bool = False


@dataclass(frozen=True)
class QueryRecord:
    where: Where
    id: str
    text: str
    tags: list[str] = field(default_factory=list)
    status: str = "unreviewed"
    evidence: list[list[str]] | None = None


@dataclass(frozen=True)
class JudgmentRecord:
    where: Where
    query: str
    item: str
    grade: int
    note: str = ""
    reviewer: str | None = None
    assessor: str | None = None  # set: one assessor's assessment, not the resolved label


@dataclass(frozen=True)
class UnjudgedRecord:
    where: Where
    query: str
    item: str
    source: str = "import"
    rank: int | None = None


@dataclass(frozen=True)
class AdjudicationRecord:
    """A pair the collection's policy left to an adjudicator: open, or decided (grade,
    who by name, when as an ISO 8601 time)."""

    where: Where
    query: str
    item: str
    status: str = "decided"
    grade: int | None = None
    decided_by: str | None = None
    decided_at: str | None = None
    reason: str = ""


@dataclass(frozen=True)
class RunRecord:
    """A stored run (``export_collection --runs``): what it is, its stages in order; its
    ranked lists are ``RankingRecord``s."""

    where: Where
    name: str
    stages: list[str]
    description: str = ""
    source_filename: str = ""
    source_sha256: str = ""
    source_format: str = ""
    order_rule: str = "score"
    dedup_policy: str = "error"
    duplicates_dropped: int = 0


@dataclass(frozen=True)
class RankingRecord:
    """One stage's ranked list for one query: ordered, distinct item ids."""

    where: Where
    run: str
    stage: str
    query: str
    items: list[str]
    abstained: bool = False


@dataclass(frozen=True)
class StatusRecord:
    where: Where
    query: str
    status: str


@dataclass
class Bundle:
    """Everything one import carries, or one export holds."""

    collection: CollectionRecord | None = None
    items: list[ItemRecord] = field(default_factory=list)
    queries: list[QueryRecord] = field(default_factory=list)
    judgments: list[JudgmentRecord] = field(default_factory=list)
    unjudged: list[UnjudgedRecord] = field(default_factory=list)
    statuses: list[StatusRecord] = field(default_factory=list)
    adjudications: list[AdjudicationRecord] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)
    rankings: list[RankingRecord] = field(default_factory=list)

    def credit_to(self, assessor: str) -> None:
        """Make every judgment of this bundle ``assessor``'s assessment (``--assessor``)."""
        self.judgments = [dataclasses.replace(r, assessor=assessor) for r in self.judgments]

    def absorb(self, other: Bundle) -> None:
        if other.collection is not None:
            self.collection = other.collection
        self.items += other.items
        self.queries += other.queries
        self.judgments += other.judgments
        self.unjudged += other.unjudged
        self.statuses += other.statuses
        self.adjudications += other.adjudications
        self.runs += other.runs
        self.rankings += other.rankings
