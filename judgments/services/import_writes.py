"""The writing half of an import: bulk inserts of what the checks planned, with history."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ..models import (
    AdjudicationStatus,
    AdjudicationTask,
    Assessment,
    AssessmentChange,
    ChangeSource,
    EvidenceCondition,
    Item,
    Judgment,
    JudgmentChange,
    Query,
    QueryStatus,
    QueryStatusChange,
    ReviewTask,
    TaskStatus,
)
from ..resolution import resolve
from .assessments import complete_slot, resolve_pair
from .import_checks import ImportReport, _chunks, _ImportChecks, parse_time
from .queue import queue_unjudged
from .search_index import index_items

IMPORT_BATCH_SIZE = 1000
PROGRESS_EVERY = 10 * IMPORT_BATCH_SIZE


class _ImportPlan(_ImportChecks):
    """One import: every check first (collecting problems), then the writes.

    Runs inside the caller's transaction with the collection locked, so what the checks
    read from the database is what the writes build on.
    """

    def _bulk_create(
        self,
        model: Any,
        rows: list[Any],
        what: str,
        progress: Callable[[str], None] | None,
    ) -> None:
        for start in range(0, len(rows), IMPORT_BATCH_SIZE):
            model.objects.bulk_create(rows[start : start + IMPORT_BATCH_SIZE])
            done = min(start + IMPORT_BATCH_SIZE, len(rows))
            if progress is not None and (done % PROGRESS_EVERY == 0 or done == len(rows)):
                progress(f"{what}: {done}/{len(rows)}")

    def write(self, progress: Callable[[str], None] | None) -> ImportReport:
        c, by, now, report = self.c, self.by, self.now, self.report
        items = self.new_items + [
            Item(collection=c, external_id=i, placeholder=True) for i in self.placeholders
        ]
        self._bulk_create(Item, items, "items", progress)
        Item.objects.bulk_update(
            self.filled_items,
            ["title", "text", "url", "metadata", "placeholder"],
            batch_size=IMPORT_BATCH_SIZE,
        )
        index_items([*self.new_items, *self.filled_items])
        self.items.update((i.external_id, i) for i in items)
        report.items_created = len(self.new_items)
        report.placeholders_created = len(self.placeholders)
        report.placeholders_filled = len(self.filled_items)

        changes: list[QueryStatusChange] = []
        for query in self.new_queries:
            status, _ = self.claims.get(query.external_id, (QueryStatus.UNREVIEWED, None))
            if status != QueryStatus.UNREVIEWED:
                query.status, query.status_changed_by, query.status_changed_at = status, by, now
        self._bulk_create(Query, self.new_queries, "queries", progress)
        self.queries.update((q.external_id, q) for q in self.new_queries)
        report.queries_created = len(self.new_queries)
        for query_id, (status, _) in sorted(self.claims.items()):
            query = self.queries[query_id]
            if query_id not in self.new_query_ids:
                Query.objects.filter(pk=query.pk).update(
                    status=status, status_changed_by=by, status_changed_at=now
                )
            changes.append(
                QueryStatusChange(
                    query=query,
                    old_status=QueryStatus.UNREVIEWED,
                    new_status=status,
                    changed_by=by,
                    source=ChangeSource.IMPORT,
                )
            )
            report.statuses_set[status] = report.statuses_set.get(status, 0) + 1
        self._bulk_create(QueryStatusChange, changes, "status changes", progress)

        evidence = [
            EvidenceCondition(query=self.queries[q], groups=groups, updated_by=by)
            for q, groups in self.new_evidence.items()
        ]
        self._bulk_create(EvidenceCondition, evidence, "evidence conditions", progress)
        report.evidence_set = len(evidence)

        judgments, history = [], []
        by_policy = self._labels_the_policy_gives()
        for r in self.new_judgments:
            query, item = self.queries[r.query], self.items[r.item]
            # A member named by the record stays its reviewer; anyone else is a name.
            reviewer = self.users.get(r.reviewer) if r.reviewer else None
            judgments.append(
                Judgment(
                    query=query,
                    item=item,
                    grade=r.grade,
                    reviewer=reviewer,
                    reviewer_name=r.reviewer if r.reviewer and reviewer is None else "",
                    note=r.note,
                    version=1,
                )
            )
            history.append(
                JudgmentChange(
                    query=query,
                    item=item,
                    old_grade=None,
                    new_grade=r.grade,
                    new_note=r.note,
                    version=1,
                    changed_by=by,  # who imported it, whoever the record names
                    # As in the source: a label the policy gives stays open to resolving
                    # again when an assessment changes; any other was set by a person.
                    source=ChangeSource.RESOLUTION
                    if (r.query, r.item) in by_policy
                    else ChangeSource.IMPORT,
                )
            )
        self._bulk_create(Judgment, judgments, "judgments", progress)
        self._bulk_create(JudgmentChange, history, "judgment history", progress)
        report.judgments_created = len(judgments)

        # A judged pair's review task is done, as when a reviewer records it.
        judged = {(j.query_id, j.item_id) for j in judgments}
        done = []
        for chunk in _chunks(sorted({q for q, _ in judged})):
            done += [
                pk
                for pk, q, i in ReviewTask.objects.filter(query_id__in=chunk)
                .exclude(status=TaskStatus.DONE)
                .values_list("pk", "query_id", "item_id")
                if (q, i) in judged
            ]
        for chunk in _chunks(done):
            ReviewTask.objects.filter(pk__in=chunk).update(
                status=TaskStatus.DONE, claimed_by=None, lease_expires_at=None, updated_at=now
            )
        report.tasks_completed = len(done)

        by_source: dict[str, list[tuple[int, int, int | None]]] = defaultdict(list)
        for r in self.data.unjudged:
            pair = (self.queries[r.query].pk, self.items[r.item].pk, r.rank)
            by_source[r.source].append(pair)
        for source, pairs in sorted(by_source.items()):
            seen, created = queue_unjudged(collection=c, pairs=pairs, source=source)
            report.unjudged_pairs += seen
            report.tasks_created += created
        self._write_assessments(progress)
        self._write_adjudications()
        return report

    def _labels_the_policy_gives(self) -> set[tuple[str, str]]:
        """The labels of this import that its assessments resolve to by the collection's
        policy (several assessors per item, all assessments given, no adjudication):
        recorded as resolved, not as set by hand (``assessment_settled``)."""
        c = self.c
        if not c.has_overlap or not self.new_assessments:
            return set()
        grades: dict[tuple[str, str], list[int]] = defaultdict(list)
        for r in self.data.judgments:
            if r.assessor is not None:
                grades[(r.query, r.item)].append(r.grade)
        adjudicated = {(r.query, r.item) for r in self.data.adjudications}
        found = set()
        for r in self.new_judgments:
            pair = (r.query, r.item)
            mine = grades.get(pair, [])
            if len(mine) < c.assessors_per_item or pair in adjudicated:
                continue
            if resolve(c.resolution_policy, mine, distance=c.adjudicate_distance) == r.grade:
                found.add(pair)
        return found

    def _write_assessments(self, progress: Callable[[str], None] | None) -> None:
        """Imported assessors' assessments (records with an ``assessor``): each with its
        history row, and its assessor's account when they are a member of the collection
        (else the name, as a judgment's reviewer); each fills one open slot of its pair.
        A pair with all its assessments is resolved by the collection's policy
        (``resolve_pair``), one pair at a time, as when reviewers assess it, unless the
        import gives its label or its adjudication: then the import says how it stands
        (a label set by hand, an adjudicator's decision), as in the bundle it came from."""
        rows, history = [], []
        for r in self.new_assessments:
            assert r.assessor is not None
            query, item = self.queries[r.query], self.items[r.item]
            user = self.users.get(r.assessor)
            rows.append(
                Assessment(
                    collection=self.c,
                    query=query,
                    item=item,
                    assessor=user,
                    assessor_name="" if user is not None else r.assessor,
                    grade=r.grade,
                    note=r.note,
                )
            )
            history.append(
                AssessmentChange(
                    query=query,
                    item=item,
                    assessor_name=r.assessor,
                    new_grade=r.grade,
                    new_note=r.note,
                    version=1,
                    changed_by=self.by,
                    source=ChangeSource.IMPORT,
                )
            )
        self._bulk_create(Assessment, rows, "assessments", progress)
        self._bulk_create(AssessmentChange, history, "assessment history", progress)
        self.report.assessments_created = len(rows)
        # One slot per assessment, of the pairs that have open slots (read at once: most
        # imported pairs have none, and asking pair by pair cost seconds per thousand).
        waiting: set[tuple[int, int]] = set()
        for chunk in _chunks(sorted({a.query.pk for a in rows})):
            waiting.update(
                ReviewTask.objects.filter(query_id__in=chunk)
                .exclude(status=TaskStatus.DONE)
                .values_list("query_id", "item_id")
            )
        for a in rows:
            if (a.query.pk, a.item.pk) in waiting:
                complete_slot(query=a.query, item=a.item, assessor=None, task=None)
        given = {(r.query, r.item) for r in self.data.judgments if r.assessor is None}
        given |= {(r.query, r.item) for r in self.data.adjudications}
        pairs = sorted({(a.query.pk, a.item.pk): (a.query, a.item) for a in rows}.items())
        for _, (query, item) in pairs:
            if (query.external_id, item.external_id) not in given:
                resolve_pair(query=query, item=item, by=self.by)

    def _write_adjudications(self) -> None:
        """Adjudication tasks as the import gives them: open, or decided (grade, who by
        name or member account, when); a stored open task the import decides is
        decided. The pair's label is its judgment record's, written above."""
        for r in self.new_adjudications:
            query, item = self.queries[r.query], self.items[r.item]
            user = self.users.get(r.decided_by) if r.decided_by else None
            decided = r.status == AdjudicationStatus.DECIDED
            fields = {
                "status": r.status,
                "grade": r.grade if decided else None,
                "decided_by": user,
                "decided_by_name": (r.decided_by or "") if user is None else "",
                "decided_at": parse_time(r.decided_at) if r.decided_at else None,
            }
            task, created = AdjudicationTask.objects.get_or_create(
                query=query,
                item=item,
                defaults={"collection": self.c, "reason": r.reason[:300], **fields},
            )
            if not created:
                AdjudicationTask.objects.filter(pk=task.pk).update(**fields)
            self.report.adjudications_created += 1
