"""The judging job: ask a model judge about pairs, then store its proposals.

``start_proposals`` runs in the request (it resolves the judge and checks the pairs);
``proposals_task`` runs in a worker. The asking holds no transaction; the proposals and
the job's end commit together, so a killed job leaves no proposal behind.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.urls import reverse
from django_tasks import task

from jobs.models import Job, JobKind
from jobs.progress import JobProgress
from jobs.runner import complete, run_job
from jobs.services import JobFailed, create_job
from judgments.models import Collection

from .selectors import judge_named
from .services import JudgeError, ask_judge, choose_pairs, store_proposals


def start_proposals(
    *,
    collection: Collection,
    judge: str,
    pairs: list[tuple[int, int]] | None = None,
    include_judged: bool = False,
    limit: int | None = None,
    by: Any = None,
) -> Job:
    """Queue a judging job; ``pairs`` (query and item primary keys) or the pooled ones."""
    judge_named(collection, judge)  # refuse an unknown judge now, not in the worker
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


def _propose(job: Job, progress: JobProgress) -> None:
    collection = Collection.objects.get(pk=job.collection_id)
    p = job.params
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
        asked = ask_judge(collection=collection, judge=judge, pairs=chosen, progress=progress)
    except (JudgeError, LookupError) as exc:
        raise JobFailed(str(exc.args[0] if exc.args else exc)) from None
    with transaction.atomic():
        stored = store_proposals(collection=collection, asked=asked, job=job)
        url = reverse("judges:proposals", args=[collection.slug, judge.name])
        complete(
            job,
            progress,
            {
                "summary": asked.summary(len(stored)),
                "url": url,
                "link_text": "Open the proposals",
                "api_url": reverse("judges-api:proposals", args=[collection.slug, judge.name]),
                "proposals": len(stored),
                "unasked": asked.unasked,
            },
        )


@task()
def proposals_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _propose)
