"""The judging job: ask a model judge about pairs, then store its proposals.

``start_proposals`` runs in the request (it resolves the judge, checks the pairs and
refuses a second job of the same judge while one is queued or running: both would ask
the same pairs); ``proposals_task`` runs in a worker. The asking holds no transaction;
proposals are stored as answers come (``services.Keeper``), so a killed job keeps what
it received and a new run asks only the pairs left. A job in which every pair failed
ends failed, with the first reason.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django_tasks import task

from jobs.models import Job, JobKind, JobState
from jobs.progress import JobProgress
from jobs.runner import complete, run_job
from jobs.services import JobFailed, create_job
from judgments.models import Collection

from .selectors import judge_named
from .services import JudgeError, Keeper, active_job, ask_judge, choose_pairs


def start_proposals(
    *,
    collection: Collection,
    judge: str,
    pairs: list[tuple[int, int]] | None = None,
    include_judged: bool = False,
    limit: int | None = None,
    by: Any = None,
) -> Job:
    """Queue a judging job; ``pairs`` (query and item primary keys) or the pooled ones.
    ``JudgeError`` when a job of this judge is queued or running already."""
    judge_named(collection, judge)  # refuse an unknown judge now, not in the worker
    with transaction.atomic():
        # One starter at a time per collection, so two clicks cannot both pass the check.
        Collection.objects.select_for_update().filter(pk=collection.pk).first()
        running = active_job(collection, judge)
        if running is not None:
            raise JudgeError(
                f"judge '{judge}' is already asking in job #{running.pk} ({running.state}); "
                "wait for it to end, or cancel it, then start it again"
            )
        return _create(collection, judge, pairs, include_judged, limit, by)


def _create(
    collection: Collection,
    judge: str,
    pairs: list[tuple[int, int]] | None,
    include_judged: bool,
    limit: int | None,
    by: Any,
) -> Job:
    return create_job(
        kind=JobKind.JUDGING,
        task=proposals_task,
        label=f"Proposals of judge {judge} for {collection.slug}",
        collection=collection,
        by=by,
        params={
            "judge": judge,
            "pairs": [list(p) for p in pairs] if pairs is not None else None,
            "include_judged": include_judged,
            "limit": limit,
        },
    )


def _earlier_running(job: Job) -> Job | None:
    """Another running job of the same judge that started first. ``start_proposals``
    refuses a second job, but a retry (``jobs.services.retry_job``) or a job queued
    before that check can still meet one: the later one then asks nothing."""
    return (
        Job.objects.filter(
            kind=JobKind.JUDGING,
            collection_id=job.collection_id,
            state=JobState.RUNNING,
            params__judge=job.params.get("judge"),
        )
        .exclude(pk=job.pk)
        .filter(Q(started_at__lt=job.started_at) | Q(started_at=job.started_at, pk__lt=job.pk))
        .order_by("started_at", "pk")
        .first()
    )


def _propose(job: Job, progress: JobProgress) -> None:
    collection = Collection.objects.get(pk=job.collection_id)
    p = job.params
    earlier = _earlier_running(job)
    if earlier is not None:
        raise JobFailed(
            f"judge '{p.get('judge')}' is already asking in job #{earlier.pk}; this job asked "
            "nothing, so that the two do not ask the same pairs. Retry it when that one has "
            "ended: it will ask only the pairs still without a proposal."
        )
    try:
        judge = judge_named(collection, p["judge"])
        pairs = [tuple(x) for x in p["pairs"]] if p.get("pairs") is not None else None
        chosen = choose_pairs(
            collection,
            judge,
            pairs=pairs,  # type: ignore[arg-type]
            include_judged=bool(p.get("include_judged")),
            limit=p.get("limit"),
        )
        keeper = Keeper(collection=collection, job=job)
        try:
            asked = ask_judge(
                collection=collection, judge=judge, pairs=chosen, progress=progress, keep=keeper
            )
        finally:
            keeper.flush()  # even when stopped midway: what was received is kept
    except (JudgeError, LookupError) as exc:
        raise JobFailed(str(exc.args[0] if exc.args else exc)) from None
    stored = len(keeper.stored)
    if asked.all_failed:
        raise JobFailed(
            asked.summary(stored)
            + " The failed proposals are kept with their reasons on the proposals page; fix "
            "the judge or its server, then start it again."
        )
    with transaction.atomic():
        url = reverse("judges:proposals", args=[collection.slug, judge.name])
        complete(
            job,
            progress,
            {
                "summary": asked.summary(stored),
                "url": url,
                "link_text": "Open the proposals",
                "api_url": reverse("judges-api:proposals", args=[collection.slug, judge.name]),
                "proposals": stored,
                "unasked": asked.unasked,
            },
        )


@task()
def proposals_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _propose)
