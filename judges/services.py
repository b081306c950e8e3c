"""State changes of the judges app: asking a judge about pairs and storing its
proposals; recording what a reviewer did with a shown proposal; and the labels a
collection's policy accepts from a judge at freeze.

Asking (``ask_judge``) holds no transaction and writes nothing: a job may spend minutes
on a model server. Storing (``store_proposals``) is one transaction. ``propose_labels``
does both, for the management command.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from audit.services import record
from jobs.progress import Progress
from judgments.extensions import ModelLabel
from judgments.models import Collection, Item, Judgment, Query

from . import egress, selectors
from .models import DecisionOutcome, JudgeConfig, Proposal, ProposalDecision, ProposalState
from .prompts import fill_prompt
from .providers import Outcome
from .selectors import Pair


class JudgeError(Exception):
    """The judge cannot run as asked (no such pairs, a missing key, a bad template)."""


@dataclass
class Asked:
    """What a judge made of the pairs: the outcomes, and the provenance to store."""

    judge: JudgeConfig
    model: str
    prompt_hash: str
    params: dict[str, Any]
    outcomes: list[Outcome] = field(default_factory=list)
    #: Said with the summary: e.g. that pairs graded by the judge's former model are
    #: asked again.
    note: str = ""

    @property
    def unasked(self) -> int:
        return sum(1 for o in self.outcomes if o.attempts == 0)

    @property
    def graded(self) -> int:
        return sum(1 for o in self.outcomes if o.grade is not None)

    @property
    def failed(self) -> int:
        return sum(1 for o in self.outcomes if o.attempts and o.grade is None)

    @property
    def all_failed(self) -> bool:
        """Every pair asked failed (and at least one was asked): the judge, its server
        or its key is wrong, not the pairs."""
        return self.failed > 0 and self.graded == 0

    def first_failure(self) -> str:
        return next((o.failure for o in self.outcomes if o.attempts and o.failure), "")

    def summary(self, stored: int) -> str:
        text = (
            f"{self.judge.name}: {stored} proposals stored "
            f"({self.graded} graded, {self.failed} failed)"
        )
        if self.unasked:
            text += f"; {self.unasked} pairs not asked: the request budget was spent"
        text += "."
        if self.all_failed:
            text += f" Every pair failed; the first: {self.first_failure()}"
        if self.note:
            text += f" {self.note}"
        return text


def model_of(judge: JudgeConfig) -> str:
    """The model a judge's proposals record."""
    if judge.is_baseline:
        from .providers.baseline import MODEL

        return MODEL
    return judge.model


def reasked_note(collection: Collection, judge: JudgeConfig, pairs: Sequence[Pair]) -> str:
    """What a run says when it asks again pairs the judge graded with another model or
    prompt: the judge was changed, and its former proposals stay beside the new ones."""
    model = model_of(judge)
    current = selectors.current_proposals(collection, judge.name)
    former = sorted(
        {
            (p.model, p.prompt_version)
            for key in pairs
            if (p := current.get(key)) is not None
            and (p.model, p.prompt_version) != (model, judge.prompt_version)
        }
    )
    if not former:
        return ""
    count = sum(
        1
        for key in pairs
        if (p := current.get(key)) is not None
        and (p.model, p.prompt_version) != (model, judge.prompt_version)
    )
    was = ", ".join(f"model '{m}' with prompt {v}" for m, v in former)
    return (
        f"{count} pairs graded before by {was} are asked again: the judge now uses model "
        f"'{model}' with prompt {judge.prompt_version}; the former proposals are kept."
    )


def active_job(collection: Collection, judge: str) -> Any:
    """The queued or running judging job of ``judge`` in ``collection``, if any."""
    from jobs.models import Job, JobKind, JobState

    return (
        Job.objects.filter(
            kind=JobKind.JUDGING,
            collection=collection,
            state__in=[JobState.QUEUED, JobState.RUNNING],
            params__judge=judge,
        )
        .order_by("pk")
        .first()
    )


def pairs_from_lines(collection: Collection, text: str, name: str) -> list[Pair]:
    """Pairs named one per line as ``QUERY_ID ITEM_ID`` (blank lines and ``#`` comments
    skipped). Every problem is listed with its line, and nothing is returned then."""
    queries = dict(Query.objects.filter(collection=collection).values_list("external_id", "pk"))
    items = dict(Item.objects.filter(collection=collection).values_list("external_id", "pk"))
    pairs, problems = [], []
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != 2:
            problems.append(f"{name} line {number}: expected 'QUERY_ID ITEM_ID', got {line!r}")
            continue
        qid, iid = fields
        if qid not in queries:
            problems.append(f"{name} line {number}: no query '{qid}' in '{collection.slug}'")
        elif iid not in items:
            problems.append(f"{name} line {number}: no item '{iid}' in '{collection.slug}'")
        else:
            pairs.append((queries[qid], items[iid]))
    if problems:
        raise JudgeError("\n".join(problems))
    if not pairs:
        raise JudgeError(f"{name}: names no pair; write one 'QUERY_ID ITEM_ID' per line")
    return list(dict.fromkeys(pairs))


def choose_pairs(
    collection: Collection,
    judge: JudgeConfig,
    *,
    pairs: Sequence[Pair] | None = None,
    include_judged: bool = False,
    limit: int | None = None,
) -> list[Pair]:
    """The pairs a job asks about: the given ones, or the pooled unjudged pairs (and the
    judged ones with ``include_judged``, to calibrate the judge) that this judge has not
    graded yet with its current model and prompt (a changed model asks them again:
    ``reasked_note`` says so)."""
    if pairs is None:
        chosen = selectors.open_pairs(collection)
        if include_judged:
            chosen += selectors.judged_pairs(collection)
        model = model_of(judge)
        done = {
            key
            for key, p in selectors.current_proposals(collection, judge.name).items()
            if (p.prompt_version, p.model) == (judge.prompt_version, model)
        }
        chosen = [p for p in dict.fromkeys(chosen) if p not in done]
    else:
        chosen = list(pairs)
    return chosen[:limit] if limit is not None else chosen


def _chat_judge(judge: JudgeConfig, collection: Collection) -> tuple[Any, str, dict[str, Any]]:
    from .providers.chat import ChatJudge

    try:
        prompt = fill_prompt(
            judge.prompt_version,
            scale=collection.scale,
            relevant_grade=collection.relevant_grade,
            guidelines=collection.guidelines,
        )
    except KeyError as exc:
        raise JudgeError(str(exc.args[0])) from None
    # Checked again here, not only when saved: a judge saved before the operator's rules
    # (or before they changed) must not send a secret or reach a host they refuse.
    try:
        judge.clean_fields(exclude=["collection"])
        judge.clean()
    except ValidationError as exc:
        problems = "; ".join(
            f"{name}: {' '.join(messages)}" for name, messages in exc.message_dict.items()
        )
        raise JudgeError(
            f"judge '{judge.name}' cannot run as configured ({problems}); edit the judge"
        ) from None
    if not judge.base_url or not judge.model:
        raise JudgeError(f"judge '{judge.name}' needs a base URL and a model name")
    key = ""
    if judge.api_key_env:
        key = os.environ.get(judge.api_key_env, "")
        if not key:
            raise JudgeError(
                f"judge '{judge.name}' reads its API key from the environment variable "
                f"{judge.api_key_env}, which is not set where this runs; set it, then retry"
            )
    asker = ChatJudge(
        target=egress.checked_target(judge.base_url, resolve=False),
        allow=egress.allow_list(),
        model=judge.model,
        prompt=prompt,
        grades=collection.grades,
        api_key=key,
        timeout=judge.timeout,
        retries=judge.retries,
        concurrency=judge.concurrency,
        request_budget=judge.request_budget,
        backoff=judge.backoff,
        temperature=judge.temperature,
        max_tokens=judge.max_tokens,
    )
    return asker, prompt.hash, judge.params()


def ask_judge(
    *,
    collection: Collection,
    judge: JudgeConfig,
    pairs: Sequence[Pair],
    progress: Progress | None = None,
    keep: Callable[[Asked, Outcome], None] | None = None,
) -> Asked:
    """Ask ``judge`` to grade ``pairs``; writes nothing itself, but hands each finished
    outcome to ``keep`` (a ``Keeper`` stores them as they come). Invariant: one outcome
    per pair, a grade only when it is on the collection's scale."""
    import hashlib

    progress = progress or Progress()
    texts = selectors.pair_texts(pairs)
    if judge.is_baseline:
        from .providers import baseline

        humans = selectors.human_labels(collection)
        reference = [
            (t, humans[(t.query_pk, t.item_pk)].grade) for t in selectors.pair_texts(sorted(humans))
        ]
        asker: Any = baseline.BaselineJudge(collection.grades, reference)
        model, prompt_hash = baseline.MODEL, hashlib.sha256(baseline.METHOD.encode()).hexdigest()
        params: dict[str, Any] = {"method": baseline.METHOD}
    else:
        asker, prompt_hash, params = _chat_judge(judge, collection)
        model = judge.model
    asked = Asked(
        judge=judge,
        model=model,
        prompt_hash=prompt_hash,
        params=params,
        note=reasked_note(collection, judge, pairs),
    )

    def done(outcome: Outcome) -> None:
        if judge.is_baseline:
            params["cuts"] = asker.cuts
        progress.advance(1)
        if keep is not None:
            keep(asked, outcome)

    progress.phase(f"asking {judge.name}", len(texts))
    asked.outcomes = asker.judge(texts, done=done)
    if judge.is_baseline:
        params["cuts"] = asker.cuts
    return asked


class Keeper:
    """Stores proposals while a judge is still asking: every ``every`` answers or
    ``seconds``, one transaction each, so a job or command killed midway keeps the
    answers it received (paid for) and a new run asks only the pairs left."""

    def __init__(
        self, *, collection: Collection, job: Any = None, every: int = 50, seconds: float = 5.0
    ) -> None:
        self.collection, self.job = collection, job
        self.every, self.seconds = every, seconds
        self.pending: list[Outcome] = []
        self.stored: list[Proposal] = []
        self.asked: Asked | None = None
        self._last = time.monotonic()

    def __call__(self, asked: Asked, outcome: Outcome) -> None:
        self.asked = asked
        if outcome.attempts == 0:
            return
        self.pending.append(outcome)
        if len(self.pending) >= self.every or time.monotonic() - self._last >= self.seconds:
            self.flush()

    def flush(self) -> None:
        if self.pending and self.asked is not None:
            part = replace(self.asked, outcomes=self.pending)
            self.stored += store_proposals(collection=self.collection, asked=part, job=self.job)
        self.pending = []
        self._last = time.monotonic()


@transaction.atomic
def store_proposals(*, collection: Collection, asked: Asked, job: Any = None) -> list[Proposal]:
    """Store one proposal per pair that was asked, failed ones with their reasons; never
    a ``Judgment``: proposals enter no snapshot unless a policy accepts them."""
    rows = [
        Proposal(
            collection=collection,
            query_id=o.pair.query_pk,
            item_id=o.pair.item_pk,
            judge=asked.judge.name,
            provider=asked.judge.provider,
            model=asked.model,
            prompt_version=asked.judge.prompt_version,
            prompt_hash=asked.prompt_hash,
            params=asked.params,
            grade=o.grade,
            rationale=o.rationale,
            raw_answer=o.raw,
            state=ProposalState.OK if o.grade is not None else ProposalState.FAILED,
            failure_reason=o.failure,
            attempts=o.attempts,
            prompt_tokens=o.prompt_tokens,
            completion_tokens=o.completion_tokens,
            job=job,
        )
        for o in asked.outcomes
        if o.attempts > 0
    ]
    return Proposal.objects.bulk_create(rows, batch_size=1000)


def propose_labels(
    *,
    collection: Collection,
    judge: JudgeConfig,
    pairs: Sequence[Pair] | None = None,
    include_judged: bool = False,
    limit: int | None = None,
    progress: Progress | None = None,
) -> tuple[Asked, list[Proposal]]:
    """Ask the judge about the chosen pairs, storing its proposals as they come (what
    was received is kept if the run is stopped). Refused while a job of the same judge
    is queued or running: both would ask the same pairs."""
    running = active_job(collection, judge.name)
    if running is not None:
        raise JudgeError(
            f"judge '{judge.name}' is already asking in job #{running.pk} ({running.state}); "
            "wait for it to end, or cancel it, then run again"
        )
    chosen = choose_pairs(
        collection, judge, pairs=pairs, include_judged=include_judged, limit=limit
    )
    keeper = Keeper(collection=collection)
    try:
        asked = ask_judge(
            collection=collection, judge=judge, pairs=chosen, progress=progress, keep=keeper
        )
    finally:
        keeper.flush()
    return asked, keeper.stored


def accepted_proposals(collection: Collection, judge: str) -> list[Proposal]:
    """What the policy "accept model proposals where no person assessed" adds to a
    snapshot: the judge's current successful proposal of every pair that has no
    person's judgment and no person's assessment, except on queries confirmed to have
    no answer (a person decided those). Reads only; ``freeze_snapshot`` asks for it
    through ``JudgeLabels`` when the collection's ``model_labels`` names the judge."""
    people = selectors.human_pairs(collection)
    no_answer = selectors.no_answer_queries(collection)
    current = selectors.current_proposals(collection, judge)
    return [
        p for key, p in sorted(current.items()) if key not in people and key[0] not in no_answer
    ]


class JudgeLabels:
    """The judges app's label source (``judgments.extensions``), registered in
    ``JudgesConfig.ready()``: so every freeze path (page, API, command, job) applies a
    collection's ``model_labels`` policy the same way."""

    def names(self, collection: Collection) -> list[str]:
        return selectors.judge_names(collection)

    def labels(self, collection: Collection, judge: str) -> list[ModelLabel]:
        names = self.names(collection)
        if judge not in names:
            raise LookupError(
                f"collection '{collection.slug}' accepts the labels of judge '{judge}', "
                f"which it no longer has; its judges are {', '.join(names)}. Choose one of "
                f"them, or no model labels, under 'Model labels in snapshots' on "
                f"/c/{collection.slug}/judges/ (or PATCH the collection's model_labels), "
                "then freeze again"
            )
        return [
            ModelLabel(
                query_pk=p.query_id,
                item_pk=p.item_id,
                qid=p.query.external_id,
                item=p.item.external_id,
                grade=int(p.grade),  # type: ignore[arg-type]
                judge=judge,
            )
            for p in accepted_proposals(collection, judge)
        ]


def record_decision(judgment: Judgment, user: Any, posted: Mapping[str, Any]) -> None:
    """A grade given in the review queue beside a shown proposal (the form posts its id
    as ``proposal``): store whether the reviewer accepted or overrode it. Called by
    ``judgments.extensions.grade_recorded`` inside the transaction of the judgment, so
    both are stored or neither. A missing id, or one that is not a successful proposal
    of this very pair, records nothing: the grade stands on its own."""
    raw = str(posted.get("proposal", "")).strip()
    if not raw.isdigit() or len(raw) > 18:
        return
    proposal = Proposal.objects.filter(
        pk=int(raw),
        query_id=judgment.query_id,
        item_id=judgment.item_id,
        state=ProposalState.OK,
    ).first()
    if proposal is None:
        return
    ProposalDecision.objects.create(
        proposal=proposal,
        user=user,
        outcome=DecisionOutcome.ACCEPTED
        if judgment.grade == proposal.grade
        else DecisionOutcome.OVERRIDDEN,
        grade=judgment.grade,
        judgment_version=judgment.version,
    )


#: What ``judge.configure`` rows show before and after: every setting a person edits.
JUDGE_SETTINGS = (
    "name",
    "provider",
    "base_url",
    "model",
    "api_key_env",
    "timeout",
    "retries",
    "concurrency",
    "request_budget",
    "backoff",
    "temperature",
    "max_tokens",
    "prompt_version",
    "show_in_queue",
)


def judge_settings(judge: JudgeConfig) -> dict[str, Any]:
    """A judge's settings as the audit log keeps them (the key's variable, never a key)."""
    return {name: getattr(judge, name) for name in JUDGE_SETTINGS}


def configure_judge(
    *, judge: JudgeConfig, before: dict[str, Any] | None, by: Any, request: Any = None
) -> JudgeConfig:
    """Save a judge added or changed (validated by its form) and its one ``judge.configure``
    audit row: ``before`` is its settings as stored until now (None for a new judge).
    Saving it unchanged records nothing."""
    after = judge_settings(judge)
    with transaction.atomic():
        judge.save()
        if after != before:
            record(
                "judge.configure",
                actor=by,
                collection=judge.collection,
                target=judge.name,
                before=before,
                after=after,
                request=request,
            )
    return judge
