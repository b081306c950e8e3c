"""Several assessors per item: record one assessor's assessment of a pair, resolve the
pair by the collection's policy once it has all its assessments, and adjudicate what the
policy leaves open.

The resolved label is the pair's ``Judgment``, written through the same ``_record`` as
every judgment (so the status invariants and the judgment history hold); every
assessment keeps its own history in ``AssessmentChange``.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from audit.services import record as audit

from ..locks import lock_query
from ..models import (
    AdjudicationStatus,
    AdjudicationTask,
    Assessment,
    AssessmentChange,
    ChangeSource,
    Item,
    Judgment,
    JudgmentChange,
    Query,
    ReviewTask,
    TaskStatus,
)
from ..resolution import NEEDS_ADJUDICATION, resolve
from ._common import User
from .errors import InvariantError
from .judgments import _check_grade, _record, _refuse_dropping_last_relevant, lock_task_for


def record_assessment(
    *,
    query: Query,
    item: Item,
    grade: int,
    assessor: User | None,
    assessor_name: str = "",
    expected_version: int | None = None,
    note: str = "",
    source: str = ChangeSource.UI,
    task: ReviewTask | None = None,
) -> Assessment:
    """Create (``expected_version`` None) or change one assessor's assessment of a pair,
    with its history row; then resolve the pair if it has all its assessments.

    The assessor is a user or, for imported labels, a name. An assessor has one
    assessment per pair: a second create, or an edit based on a stale version, raises
    :class:`InvariantError` and changes nothing. A new assessment completes one open slot
    of the pair's review tasks (``task`` when given).
    """
    with transaction.atomic():
        return _assess(
            query=lock_query(query.pk),
            item=item,
            grade=grade,
            assessor=assessor,
            assessor_name=assessor_name,
            expected_version=expected_version,
            note=note,
            source=source,
            task=task,
        )


def _assess(
    *,
    query: Query,
    item: Item,
    grade: int,
    assessor: User | None,
    assessor_name: str,
    expected_version: int | None,
    note: str,
    source: str,
    task: ReviewTask | None,
    resolve: bool = True,
) -> Assessment:
    """``record_assessment`` for a caller that holds ``query``'s lock; ``resolve=False``
    records the assessment and leaves the pair's label as it is (a settled one)."""
    collection = query.collection
    if item.collection_id != collection.pk:
        raise InvariantError(f"item '{item.external_id}' belongs to another collection")
    if (assessor is None) == (not assessor_name):
        raise InvariantError("an assessment needs a user or an imported assessor's name")
    _check_grade(collection, grade)
    who = assessor.get_username() if assessor is not None else assessor_name
    mine = Assessment.objects.filter(query=query, item=item)
    mine = mine.filter(assessor=assessor) if assessor else mine.filter(assessor_name=assessor_name)
    current = mine.first()
    where = f"item '{item.external_id}' of query '{query.external_id}'"
    if expected_version is None:
        if current is not None:
            raise InvariantError(
                f"{who} has assessed {where} already (grade {current.grade}, version "
                f"{current.version}); edit that assessment instead"
            )
        try:
            with transaction.atomic():
                assessment = Assessment.objects.create(
                    collection=collection,
                    query=query,
                    item=item,
                    assessor=assessor,
                    assessor_name="" if assessor else assessor_name,
                    grade=grade,
                    note=note,
                    claimed_at=task.claimed_at if task is not None else None,
                )
        except IntegrityError:
            raise InvariantError(f"{who} has assessed {where} already") from None
        old_grade = None
        complete_slot(query=query, item=item, assessor=assessor, task=task)
    else:
        if current is None or current.version != expected_version:
            raise InvariantError(
                f"{who}'s assessment of {where} changed since version {expected_version}; "
                "reload it and apply your change again"
            )
        now = timezone.now()
        changed = mine.filter(version=expected_version).update(
            grade=grade, note=note, version=F("version") + 1, updated_at=now
        )
        if changed != 1:
            raise InvariantError(f"{who}'s assessment of {where} changed meanwhile; reload it")
        old_grade = current.grade
        # The compare-and-set above wrote exactly these values: no need to read them back.
        current.grade, current.note = grade, note
        current.version, current.updated_at = expected_version + 1, now
        assessment = current
    AssessmentChange.objects.create(
        query=query,
        item=item,
        assessor_name=who,
        old_grade=old_grade,
        new_grade=grade,
        new_note=note,
        version=assessment.version,
        changed_by=assessor,
        source=source,
    )
    if resolve:
        resolve_pair(query=query, item=item, by=assessor)
    return assessment


def assessment_settled(*, query: Query, item: Item) -> str:
    """Why assessors may no longer change their assessments of the pair, or ``""``: an
    adjudicator decided it, or a person set its label by hand since it was resolved. A
    label resolved by the policy is not settled: a changed assessment resolves it again
    (and may send the pair to adjudication). The answer is the same whatever the other
    assessors gave, so that it tells an assessor nothing of their grades."""
    decided = AdjudicationTask.objects.filter(
        query=query, item=item, status=AdjudicationStatus.DECIDED
    ).exists()
    last = (
        JudgmentChange.objects.filter(query=query, item=item)
        .order_by("-pk")
        .values_list("source", "new_grade")
        .first()
    )
    by_hand = last is not None and last[1] is not None and last[0] != ChangeSource.RESOLUTION
    if decided or by_hand:
        return (
            f"the label of item '{item.external_id}' for query '{query.external_id}' is "
            "settled (decided by an adjudicator or set by hand), so assessments of it no "
            "longer change; ask an adjudicator if it is wrong"
        )
    return ""


def change_own_assessment(
    *,
    assessment: Assessment,
    assessor: User,
    grade: int,
    expected_version: int,
    note: str = "",
    source: str = ChangeSource.UI,
) -> Assessment:
    """Change ``assessor``'s own assessment (a mis-keyed grade), compare-and-set on
    ``expected_version``, with its history row. Unless the pair is settled
    (``assessment_settled``: an adjudicator decided it, or a person set its label by
    hand), it is then resolved again by the policy (``resolve_pair``), which may change
    its resolved label or send it to adjudication; a settled label stands, and the
    corrected assessment counts for agreement. Never refused for being settled: a refusal
    would tell a blind assessor that the pair went to adjudication, i.e. that the others
    graded it differently. Refused for someone else's assessment or on a stale version;
    nothing changes then."""
    if assessment.assessor_id != assessor.pk:
        raise InvariantError("you can only change your own assessment")
    with transaction.atomic():
        query = lock_query(assessment.query_id)
        item = assessment.item
        settled = bool(assessment_settled(query=query, item=item))
        return _assess(
            query=query,
            item=item,
            grade=grade,
            assessor=assessor,
            assessor_name="",
            expected_version=expected_version,
            note=note,
            source=source,
            task=None,
            resolve=not settled,
        )


def complete_slot(
    *, query: Query, item: Item, assessor: User | None, task: ReviewTask | None
) -> None:
    """Mark one open slot of the pair done: the given task, else the one this assessor
    holds, else the lowest open slot (an import or an assessment made outside the queue)."""
    slots = ReviewTask.objects.filter(query=query, item=item).exclude(status=TaskStatus.DONE)
    if task is not None and slots.filter(pk=task.pk).exists():
        chosen = task.pk
    else:
        held = slots.filter(claimed_by=assessor).values_list("pk", flat=True).first()
        chosen = held or slots.order_by("slot").values_list("pk", flat=True).first()
    if chosen is not None:
        ReviewTask.objects.filter(pk=chosen).update(
            status=TaskStatus.DONE,
            claimed_by=None,
            lease_expires_at=None,
            updated_at=timezone.now(),
        )


def resolve_pair(*, query: Query, item: Item, by: User | None) -> Judgment | None:
    """Resolve a pair by its collection's policy once it has ``assessors_per_item``
    assessments; the caller holds ``query``'s lock. Returns the resolved judgment, or
    ``None`` when the pair waits for more assessments or for an adjudicator.

    A grade the policy resolves becomes (or updates) the pair's judgment; a pair the
    policy leaves open, or whose resolved grade the query's status refuses, gets an open
    adjudication task. An adjudicator's decision is final: later assessments keep it.
    """
    collection = query.collection
    grades = list(
        Assessment.objects.filter(query=query, item=item)
        .order_by("created_at", "pk")
        .values_list("grade", flat=True)
    )
    if len(grades) < collection.assessors_per_item or not grades:
        return None
    adjudication = AdjudicationTask.objects.filter(query=query, item=item).first()
    if adjudication is not None and adjudication.status == AdjudicationStatus.DECIDED:
        return Judgment.objects.filter(query=query, item=item).first()
    resolved = resolve(
        collection.resolution_policy, grades, distance=collection.adjudicate_distance
    )
    reason = f"{collection.resolution_policy} leaves grades {sorted(grades)} open"
    if resolved is not NEEDS_ADJUDICATION:
        assert isinstance(resolved, int)
        current = Judgment.objects.filter(query=query, item=item).first()
        if current is not None and current.grade == resolved:
            return current
        try:
            with transaction.atomic():
                judgment = _record(
                    query=query,
                    item=item,
                    grade=resolved,
                    reviewer=None,
                    expected_version=None if current is None else current.version,
                    note="",
                    source=ChangeSource.RESOLUTION,
                )
        except InvariantError as e:
            reason = f"resolved grade {resolved} refused: {e}"
        else:
            if adjudication is not None:
                adjudication.delete()  # the assessments agree now: nothing to decide
            return judgment
    _withdraw_resolution(query=query, item=item)
    if adjudication is None:
        AdjudicationTask.objects.create(
            collection=collection, query=query, item=item, reason=reason[:300]
        )
    return None


def _withdraw_resolution(*, query: Query, item: Item) -> None:
    """Remove the pair's label when the policy had resolved it and its assessments (one
    changed since) now need an adjudicator: a pair awaiting adjudication has no label.
    A label set by a person is never removed here."""
    current = Judgment.objects.filter(query=query, item=item).first()
    if current is None:
        return
    last = JudgmentChange.objects.filter(query=query, item=item).order_by("-pk").first()
    if last is None or last.source != ChangeSource.RESOLUTION:
        return
    if query.collection.is_relevant_grade(current.grade):
        _refuse_dropping_last_relevant(query, item)
    Judgment.objects.filter(pk=current.pk).delete()
    JudgmentChange.objects.create(
        query=query,
        item=item,
        old_grade=current.grade,
        new_grade=None,
        old_note=current.note,
        new_note="",
        version=current.version + 1,
        changed_by=None,
        source=ChangeSource.RESOLUTION,
    )


def adjudicate(*, task: AdjudicationTask, grade: int, by: User) -> Judgment:
    """Decide an open adjudication task: ``grade`` becomes the pair's resolved judgment,
    its history row names ``by`` (source ``adjudication``), and the task records who
    decided what and when. The caller has checked that ``by`` may adjudicate. A task
    decided meanwhile is refused and nothing changes."""
    with transaction.atomic():
        query = lock_query(task.query_id)
        _check_grade(query.collection, grade)
        now = timezone.now()
        won = AdjudicationTask.objects.filter(pk=task.pk, status=AdjudicationStatus.OPEN).update(
            status=AdjudicationStatus.DECIDED, grade=grade, decided_by=by, decided_at=now
        )
        if won != 1:
            raise InvariantError(
                f"item '{task.item.external_id}' of query '{query.external_id}' was "
                "decided already (or its assessors agree now); take the next one"
            )
        current = Judgment.objects.filter(query=query, item_id=task.item_id).first()
        judgment = _record(
            query=query,
            item=task.item,
            grade=grade,
            reviewer=by,
            expected_version=None if current is None else current.version,
            note="",
            source=ChangeSource.ADJUDICATION,
        )
        audit(
            "adjudication.decide",
            actor=by,
            collection=query.collection,
            target=f"query {query.external_id} / item {task.item.external_id}",
            before={"grade": current.grade} if current is not None else None,
            after={"grade": grade},
        )
        return judgment


def assess_task(
    *, task: ReviewTask, reviewer: User, grade: int, note: str = "", source: str = ChangeSource.UI
) -> Assessment:
    """Record the reviewer's assessment of a review task's pair (several assessors per
    item). Refused while another reviewer holds the task's live lease, or when this
    reviewer assessed the pair already."""
    with transaction.atomic():
        query, task = lock_task_for(task, reviewer)
        return _assess(
            query=query,
            item=task.item,
            grade=grade,
            assessor=reviewer,
            assessor_name="",
            expected_version=None,
            note=note,
            source=source,
            task=task,
        )
