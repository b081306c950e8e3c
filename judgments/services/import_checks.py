"""The checking half of an import: read what the input names, collect every problem.

``formats`` reports what a file gets wrong on its own; these checks compare the input
with the collection and decide what the writes (``import_writes.py``) will create.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from ..formats import AdjudicationRecord, Bundle, JudgmentRecord, Problem, Where
from ..models import (
    AdjudicationStatus,
    AdjudicationTask,
    Assessment,
    Collection,
    EvidenceCondition,
    Item,
    Judgment,
    Query,
    QueryStatus,
)
from ._common import User
from .queries import normalize_evidence

_LOOKUP_CHUNK = 500  # ids per ``__in`` lookup, well under every backend's parameter limit


@dataclass
class ImportReport:
    """What an import did, for the summary a command or API prints."""

    collection: Collection
    collection_created: bool = False
    items_created: int = 0
    placeholders_created: int = 0
    placeholders_filled: int = 0
    items_skipped: int = 0
    queries_created: int = 0
    queries_skipped: int = 0
    evidence_set: int = 0
    judgments_created: int = 0
    judgments_skipped: int = 0
    assessments_created: int = 0
    adjudications_created: int = 0
    adjudications_skipped: int = 0
    runs_created: int = 0
    statuses_set: dict[str, int] = field(default_factory=dict)
    unreviewed_with_relevant: int = 0
    unjudged_pairs: int = 0
    tasks_created: int = 0
    tasks_completed: int = 0


def parse_time(text: str) -> datetime:
    """An adjudication's ``decided_at`` (checked ISO 8601 with an offset by the reader)."""
    return datetime.fromisoformat(text)


def _chunks(values: Iterable[Any], size: int = _LOOKUP_CHUNK) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for value in values:
        batch.append(value)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class _ImportChecks:
    """Every check of one import, collecting problems and what the writes will create."""

    def __init__(
        self,
        collection: Collection,
        data: Bundle,
        *,
        create_missing_items: bool,
        set_status: bool,
        by: User | None,
    ) -> None:
        self.c = collection
        self.data = data
        self.create_missing_items = create_missing_items
        self.set_status = set_status
        self.by = by
        self.now = timezone.now()
        self.problems: list[Problem] = []
        self.report = ImportReport(collection=collection)
        # external id → stored row, for the ids this import names
        self.items: dict[str, Item] = {}
        self.queries: dict[str, Query] = {}
        self.evidence: dict[int, list[list[str]]] = {}  # query pk → stored groups
        self.stored: dict[tuple[int, int], tuple[int, int, str | None]] = {}
        self.users: dict[str, Any] = {}
        # what the import will write
        self.new_items: list[Item] = []
        self.filled_items: list[Item] = []
        self.placeholders: dict[str, None] = {}  # ordered set of item ids
        self.new_queries: list[Query] = []
        self.new_evidence: dict[str, list[list[str]]] = {}
        self.new_judgments: list[JudgmentRecord] = []
        self.new_assessments: list[JudgmentRecord] = []
        self.stored_assessments: dict[tuple[int, int, str], int] = {}  # → grade
        # (query pk, item pk) → (status, grade) of the stored adjudication task
        self.stored_adjudications: dict[tuple[int, int], tuple[str, int | None]] = {}
        self.new_adjudications: list[AdjudicationRecord] = []
        self.claims: dict[str, tuple[str, Where | None]] = {}  # query id → (status, where)
        self.new_item_ids: set[str] = set()
        self.new_query_ids: set[str] = set()
        self.unknown: dict[tuple[str, str], list[Where]] = defaultdict(list)

    # -- checks ---------------------------------------------------------------------------

    def check(self) -> None:
        self._load()
        self._check_items()
        self._check_queries()
        self._check_judgments()
        self._check_unjudged()
        self._check_evidence()
        self._check_statuses()
        self._check_adjudications()
        self._report_unknown()

    def _problem(self, where: Where, message: str) -> None:
        self.problems.append(Problem(where, message))

    def _load(self) -> None:
        d = self.data
        query_ids = {r.id for r in d.queries} | {s.query for s in d.statuses}
        query_ids |= {r.query for r in d.judgments} | {r.query for r in d.unjudged}
        item_ids = {r.id for r in d.items} | {r.item for r in d.judgments}
        item_ids |= {r.item for r in d.unjudged}
        item_ids |= {i for r in d.queries for g in r.evidence or [] for i in g}
        for chunk in _chunks(sorted(item_ids)):
            for item in Item.objects.filter(collection=self.c, external_id__in=chunk):
                self.items[item.external_id] = item
        for chunk in _chunks(sorted(query_ids)):
            for query in Query.objects.filter(collection=self.c, external_id__in=chunk):
                self.queries[query.external_id] = query
        query_pks = [q.pk for q in self.queries.values()]
        username = get_user_model().USERNAME_FIELD
        for chunk in _chunks(query_pks):
            for query_pk, groups in EvidenceCondition.objects.filter(
                query_id__in=chunk
            ).values_list("query_id", "groups"):
                self.evidence[query_pk] = groups
            for query_pk, item_pk, grade, version, who, name in Judgment.objects.filter(
                query_id__in=chunk
            ).values_list(
                "query_id", "item_id", "grade", "version", f"reviewer__{username}", "reviewer_name"
            ):
                self.stored[(query_pk, item_pk)] = (grade, version, who or name)
            for query_pk, item_pk, name, who, grade in Assessment.objects.filter(
                query_id__in=chunk
            ).values_list("query_id", "item_id", "assessor_name", f"assessor__{username}", "grade"):
                self.stored_assessments[(query_pk, item_pk, who or name)] = grade
            for query_pk, item_pk, status, grade in AdjudicationTask.objects.filter(
                query_id__in=chunk
            ).values_list("query_id", "item_id", "status", "grade"):
                self.stored_adjudications[(query_pk, item_pk)] = (status, grade)
        # A named reviewer is kept as the label's reviewer only when they are a member of
        # the collection; any other name is stored as an external assessor's name, never
        # as a user (an import cannot attribute labels to whoever it likes), and nothing
        # tells the importer whether a user of that name exists. Assessors and deciders
        # alike.
        names = sorted(
            {r.reviewer for r in d.judgments if r.reviewer}
            | {r.assessor for r in d.judgments if r.assessor}
            | {r.decided_by for r in d.adjudications if r.decided_by}
        )
        for chunk in _chunks(names):
            for user in get_user_model().objects.filter(
                **{f"{username}__in": chunk}, memberships__collection=self.c
            ):
                self.users[user.get_username()] = user

    def _check_items(self) -> None:
        for r in self.data.items:
            stored = self.items.get(r.id)
            if stored is None:
                self.new_items.append(
                    Item(
                        collection=self.c,
                        external_id=r.id,
                        title=r.title,
                        text=r.text,
                        url=r.url,
                        metadata=r.metadata,
                        placeholder=r.placeholder,
                    )
                )
                continue
            mine = (r.title, r.text, r.url, r.metadata, r.placeholder)
            theirs = (stored.title, stored.text, stored.url, stored.metadata, stored.placeholder)
            if mine == theirs or r.placeholder:
                self.report.items_skipped += 1
            elif stored.placeholder:
                stored.title, stored.text, stored.url = r.title, r.text, r.url
                stored.metadata, stored.placeholder = r.metadata, False
                self.filled_items.append(stored)
            else:
                fields = ("title", "text", "url", "metadata")
                differ = [f for f, a, b in zip(fields, mine, theirs, strict=False) if a != b]
                self._problem(
                    r.where,
                    f"item '{r.id}' exists in collection '{self.c.slug}' with a different "
                    f"{', '.join(differ)}. An import never overwrites an item: give the new "
                    "version a new id, or remove this line to keep the stored one",
                )
        self.new_item_ids = {i.external_id for i in self.new_items}

    def _check_queries(self) -> None:
        for r in self.data.queries:
            groups = normalize_evidence(r.evidence) if r.evidence is not None else None
            stored = self.queries.get(r.id)
            if stored is None:
                self.new_queries.append(
                    Query(collection=self.c, external_id=r.id, text=r.text, tags=r.tags)
                )
                if groups is not None:
                    self.new_evidence[r.id] = groups
            elif (stored.text, stored.tags) != (r.text, r.tags):
                differ = "text" if stored.text != r.text else "tags"
                self._problem(
                    r.where,
                    f"query '{r.id}' exists in collection '{self.c.slug}' with different "
                    f"{differ}. An import never overwrites a query: give the new one a new "
                    "id, or remove this line to keep the stored one",
                )
            else:
                self.report.queries_skipped += 1
                held = self.evidence.get(stored.pk)
                if groups is None or groups == held:
                    pass
                elif held is None:
                    self.new_evidence[r.id] = groups
                else:
                    self._problem(
                        r.where,
                        f"query '{r.id}' has the evidence condition {held} stored; this line "
                        f"says {groups}. Change it in the review screen, or drop 'evidence' "
                        "from this line",
                    )
            self._claim(r.id, r.status, r.where)
        self.new_query_ids = {q.external_id for q in self.new_queries}

    def _known(self, kind: str, external_id: str, where: Where) -> bool:
        """Is the query or item stored or imported? Remember it as unknown if not.

        With ``create_missing_items`` an unknown item becomes a placeholder instead.
        """
        if kind == "query":
            if external_id in self.queries or external_id in self.new_query_ids:
                return True
        else:
            if external_id in self.items or external_id in self.new_item_ids:
                return True
            if self.create_missing_items:
                self.placeholders[external_id] = None
                return True
        self.unknown[(kind, external_id)].append(where)
        return False

    def _check_judgments(self) -> None:
        c = self.c
        scale = ", ".join(f"{g['grade']} {g['name']}" for g in c.scale)
        for r in self.data.judgments:
            ok = self._known("query", r.query, r.where)
            ok = self._known("item", r.item, r.where) and ok
            if r.grade not in c.grades:
                ok = False
                self._problem(
                    r.where,
                    f"grade {r.grade} is not on the scale of collection '{c.slug}' ({scale}); "
                    "use one of those grades (in qrels, -1 marks pooled but unjudged)",
                )
            if not ok:
                continue
            query, item = self.queries.get(r.query), self.items.get(r.item)
            if r.assessor is not None:
                self._check_assessment(r, query, item)
                continue
            held = self.stored.get((query.pk, item.pk)) if query and item else None
            if held is None:
                self.new_judgments.append(r)
            elif held[0] == r.grade:
                self.report.judgments_skipped += 1
            else:
                grade, version, who = held
                self._problem(
                    r.where,
                    f"query '{r.query}' item '{r.item}' is already judged grade {grade} "
                    f"(version {version}, by {who or 'an import'}); this line says grade "
                    f"{r.grade}. An import never overwrites a judgment: change it in the "
                    "review screen (which keeps its history), or remove this line to keep "
                    "the stored grade",
                )

    def _check_assessment(self, r: JudgmentRecord, query: Query | None, item: Item | None) -> None:
        """An assessor's assessment: new, identical to the stored one (skipped), or
        refused when the assessor graded the pair otherwise already."""
        assert r.assessor is not None
        held = (
            self.stored_assessments.get((query.pk, item.pk, r.assessor)) if query and item else None
        )
        if held is None:
            self.new_assessments.append(r)
        elif held == r.grade:
            self.report.judgments_skipped += 1
        else:
            self._problem(
                r.where,
                f"assessor '{r.assessor}' already graded query '{r.query}' item '{r.item}' "
                f"{held}; this line says {r.grade}. An import never overwrites an assessment: "
                "remove this line, or import it under another assessor name",
            )

    def _check_adjudications(self) -> None:
        """An adjudication names a known pair and, decided, a grade on the scale. A
        stored decision is never overwritten: the same one is skipped, another refused;
        a stored open task may be decided by the import."""
        c = self.c
        for r in self.data.adjudications:
            ok = self._known("query", r.query, r.where)
            ok = self._known("item", r.item, r.where) and ok
            if r.grade is not None and r.grade not in c.grades:
                ok = False
                self._problem(
                    r.where,
                    f"adjudicated grade {r.grade} is not on the scale of collection "
                    f"'{c.slug}'; use one of {', '.join(map(str, c.grades))}",
                )
            if not ok:
                continue
            query, item = self.queries.get(r.query), self.items.get(r.item)
            held = self.stored_adjudications.get((query.pk, item.pk)) if query and item else None
            if held is None or (held[0] == AdjudicationStatus.OPEN and r.status != held[0]):
                self.new_adjudications.append(r)
            elif held == (r.status, r.grade):
                self.report.adjudications_skipped += 1
            else:
                grade = held[1]
                stored = "open" if grade is None else f"decided grade {grade}"
                self._problem(
                    r.where,
                    f"query '{r.query}' item '{r.item}' has its adjudication {stored} "
                    "already; an import never changes a decision: remove this line",
                )

    def _check_unjudged(self) -> None:
        for r in self.data.unjudged:
            self._known("query", r.query, r.where)
            self._known("item", r.item, r.where)

    def _check_evidence(self) -> None:
        known = set(self.items) | self.new_item_ids | set(self.placeholders)
        wheres = {r.id: r.where for r in self.data.queries}
        for query_id, groups in self.new_evidence.items():
            missing = sorted({i for g in groups for i in g} - known)
            if missing:
                self._problem(
                    wheres[query_id],
                    f"the evidence condition names unknown item(s) "
                    f"{', '.join(map(repr, missing))}; add an item record for each, or fix "
                    "the ids",
                )

    def _claim(self, query_id: str, status: str, where: Where) -> None:
        """A status the input gives a query: set if the query is unreviewed, else equal."""
        if status not in QueryStatus.values:
            self._problem(
                where,
                f"status {status!r} is not one of {', '.join(QueryStatus.values)}; use one of them",
            )
            return
        if status == QueryStatus.UNREVIEWED:
            return  # no claim: an import never takes a reviewed status back
        earlier = self.claims.get(query_id)
        if earlier is not None and earlier[0] != status:
            self._problem(
                where,
                f"query '{query_id}' is given status '{status}' here and '{earlier[0]}' at "
                f"{earlier[1]}; keep one",
            )
            return
        stored = self.queries.get(query_id)
        stored_status = stored.status if stored else QueryStatus.UNREVIEWED
        if stored_status == status:
            return
        if stored_status != QueryStatus.UNREVIEWED:
            self._problem(
                where,
                f"query '{query_id}' is stored with status '{stored_status}'; this line says "
                f"'{status}'. An import never changes a reviewed status: change it in the "
                "review screen, or remove the status from this line",
            )
            return
        self.claims[query_id] = (status, where)

    def _check_statuses(self) -> None:
        c = self.c
        for r in self.data.statuses:
            if self._known("query", r.query, r.where):
                self._claim(r.query, r.status, r.where)
        relevant: Counter[str] = Counter()
        by_pk = {q.pk: q.external_id for q in self.queries.values()}
        for (query_pk, _), (grade, _, _) in self.stored.items():
            if c.is_relevant_grade(grade):
                relevant[by_pk[query_pk]] += 1
        for r in self.new_judgments:
            if c.is_relevant_grade(r.grade):
                relevant[r.query] += 1
                stored = self.queries.get(r.query)
                if stored is not None and stored.status == QueryStatus.NO_ANSWER:
                    self._problem(
                        r.where,
                        f"query '{r.query}' is marked 'confirmed no answer', so it cannot get "
                        f"a relevant judgment (grade {r.grade}); set its status to unreviewed "
                        "in the review screen first, or grade this item below "
                        f"{c.relevant_grade}",
                    )
        touched = {r.query for r in self.data.judgments} | {r.id for r in self.data.queries}
        for query_id in sorted(touched):
            stored = self.queries.get(query_id)
            stored_status = stored.status if stored else QueryStatus.UNREVIEWED
            if (
                stored_status == QueryStatus.UNREVIEWED
                and query_id not in self.claims
                and relevant[query_id]
            ):
                if self.set_status:
                    self.claims[query_id] = (QueryStatus.RELEVANT, None)
                else:
                    self.report.unreviewed_with_relevant += 1
        for query_id, (status, where) in self.claims.items():
            n = relevant[query_id]
            if status == QueryStatus.RELEVANT and not n and where is not None:
                self._problem(
                    where,
                    f"status 'relevant' needs a relevant judgment, but query '{query_id}' has "
                    f"none (grade ≥ {c.relevant_grade}) in the collection or this import; add "
                    "one, or leave the status unreviewed",
                )
            elif status == QueryStatus.NO_ANSWER and n and where is not None:
                self._problem(
                    where,
                    f"status 'no_answer' (confirmed no answer), but query '{query_id}' has {n} "
                    f"relevant judgment(s) (grade ≥ {c.relevant_grade}); regrade them, or "
                    "leave the status unreviewed",
                )

    def _report_unknown(self) -> None:
        slug = self.c.slug
        fixes = {
            "query": "add it with --queries FILE (TREC topics or JSONL query records)",
            "item": "add an item record for it (in the bundle or an --items file), or pass "
            "--create-missing-items to create it as a placeholder (id only, no text)",
        }
        first_of_kind: dict[str, Where] = {}
        for (kind, name), wheres in self.unknown.items():
            more = f" (on {len(wheres)} lines; this is the first)" if len(wheres) > 1 else ""
            first = first_of_kind.setdefault(kind, wheres[0])
            if first is not wheres[0]:  # the fix was given once, in full
                message = f"unknown {kind} '{name}'{more}; see {first} for the fix"
            else:
                message = (
                    f"unknown {kind} '{name}': it is neither in collection '{slug}' nor in "
                    f"this import{more}; {fixes[kind]}"
                )
            self._problem(wheres[0], message)
