"""The scoring side's background jobs: how each one starts (``start_*``, called by the
pages and the API in the request: quick checks, then a ``Job``) and what it runs
(``*_task``, in a worker, through the services).

Task code uses Django's Tasks API only; which queue carries it is the settings' choice.
Every body stores what it makes in one transaction and marks its job done inside it
(``complete``), so a job killed at any point leaves nothing half-made and can be retried.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.urls import reverse
from django_tasks import task

import verity_eval as engine
from jobs.files import input_path
from jobs.models import Job, JobKind
from jobs.progress import JobProgress, Progress
from jobs.runner import complete, run_job
from jobs.services import JobFailed, create_job
from judgments.models import Collection, Snapshot
from judgments.services import VerityError
from judgments.wording import counted

from .models import Evaluation, Run, RunStage, UnitMapping
from .reports import diagnosis_params, stored_stage_evaluations
from .selectors import ScoringInputs
from .services import (
    RunImportError,
    canonical_params,
    import_run,
    import_unit_mapping,
    score_run_stage,
    snapshot_inputs,
)

# -- run import -----------------------------------------------------------------------------


def start_run_import(
    *,
    collection: Collection,
    upload: Any,
    filename: str,
    name: str,
    description: str = "",
    order: str = "score",
    dedup: str = "error",
    pool_depth: int | None = None,
    ignore_unknown_queries: bool = False,
    by: Any = None,
    via: str = "api",
    pool_strategy: str | None = None,
) -> Job:
    """Queue the import of an uploaded run file (kept as the job's input). ``via``:
    ``"form"`` when the upload form started it, whose labels a refusal then names."""
    # Named only when given: the collection's strategy is read when the job runs.
    chosen = {"pool_strategy": pool_strategy} if pool_strategy else {}
    return create_job(
        kind=JobKind.RUN_IMPORT,
        task=import_run_task,
        label=f"Import run '{name}' into {collection.slug}",
        collection=collection,
        by=by,
        params={
            "name": name,
            "description": description,
            "order": order,
            "dedup": dedup,
            "pool_depth": pool_depth,
            "ignore_unknown_queries": ignore_unknown_queries,
            "via": via,
            **chosen,
        },
        input_file=upload,
        input_name=filename,
    )


def run_import_result(report: Any) -> dict[str, Any]:
    run = report.run
    slug = run.collection.slug
    stages = len(report.stages)
    return {
        "summary": f"Imported run '{run.name}': {counted(stages, 'stage')}, "
        f"{counted(sum(s.n_rows for s in report.stages), 'line')}. Pooled: "
        f"{counted(report.newly_queued, 'new review task')}.",
        "details": report.lines(run.collection),
        "url": reverse("scoring:runs", args=[slug]) + f"#run-{run.name}",
        "link_text": "Open the runs",
        "api_url": reverse("scoring-api:run", args=[slug, run.name]),
        "run": run.name,
        "import_report": {
            "unjudged_found": report.unjudged_found,
            "newly_queued": report.newly_queued,
            "placeholders_created": report.placeholders_created,
            "queries_not_in_collection": report.queries_not_in_collection,
            "unknown_query_ids": report.unknown.n_queries,
            "unknown_query_lines_skipped": report.unknown.query_lines,
            "unknown_item_ids": report.unknown.item_ids,
            "unknown_item_ids_beyond_depth": report.unknown.item_ids_beyond,
        },
    }


def _import_run(job: Job, progress: JobProgress) -> None:
    p = job.params
    collection = Collection.objects.get(pk=job.collection_id)
    with input_path(job) as path:
        try:
            with transaction.atomic():
                report = import_run(
                    collection=collection,
                    path=path,
                    name=p["name"],
                    description=p.get("description", ""),
                    order=p.get("order", "score"),
                    dedup=p.get("dedup", "error"),
                    by=job.created_by,
                    progress=progress,
                    pool_depth=p.get("pool_depth"),
                    ignore_unknown_queries=p.get("ignore_unknown_queries", False),
                    pool_strategy=p.get("pool_strategy"),
                )
                complete(job, progress, run_import_result(report))
        except RunImportError as exc:
            detail, errors = exc.as_client_sees_it(path, via=p.get("via", "api"))
            raise JobFailed(detail, errors) from None
        except VerityError as exc:
            raise JobFailed(str(exc)) from None


@task()
def import_run_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _import_run)


# -- unit mapping import --------------------------------------------------------------------


def start_mapping_import(
    *,
    collection: Collection,
    upload: Any,
    filename: str,
    from_unit: str = "chunk",
    to_unit: str = "document",
    note: str = "",
    by: Any = None,
) -> Job:
    """Queue the import of an uploaded unit mapping. Always a job: a mapping's lines cost
    a row each, and a million of them outlast any request."""
    return create_job(
        kind=JobKind.MAPPING_IMPORT,
        task=import_mapping_task,
        label=f"Import a unit mapping ({from_unit} → {to_unit}) into {collection.slug}",
        collection=collection,
        by=by,
        params={"from_unit": from_unit, "to_unit": to_unit, "note": note},
        input_file=upload,
        input_name=filename,
    )


def _import_mapping(job: Job, progress: JobProgress) -> None:
    p = job.params
    collection = Collection.objects.get(pk=job.collection_id)
    with input_path(job) as path:
        progress.phase(f"reading {path.name}", path.stat().st_size)
        try:
            with transaction.atomic():
                mapping, created = import_unit_mapping(
                    collection=collection,
                    path=path,
                    from_unit=p.get("from_unit", "chunk"),
                    to_unit=p.get("to_unit", "document"),
                    note=p.get("note", ""),
                    by=job.created_by,
                )
                progress.advance(path.stat().st_size)
                same = "" if created else " (the same content as the latest version: kept)"
                complete(
                    job,
                    progress,
                    {
                        "summary": f"Unit mapping v{mapping.number}: "
                        f"{counted(mapping.n_entries, 'entry')}{same}.",
                        "api_url": reverse(
                            "scoring-api:mapping", args=[collection.slug, mapping.number]
                        ),
                        "url": reverse("judgments:collection", args=[collection.slug]),
                        "link_text": "Open the collection",
                        "mapping": mapping.number,
                        "created": created,
                    },
                )
        except RunImportError as exc:
            detail, errors = exc.as_client_sees_it(path)
            raise JobFailed(detail, errors) from None


@task()
def import_mapping_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _import_mapping)


# -- scoring --------------------------------------------------------------------------------


def start_scoring(*, inputs: ScoringInputs, by: Any = None) -> Job:
    """Queue the scoring of one run stage against one snapshot."""
    run, stage, snapshot = inputs.run, inputs.stage, inputs.snapshot
    return create_job(
        kind=JobKind.SCORING,
        task=score_task,
        label=f"Score run '{run.name}' / {stage.name} against snapshot v{snapshot.number} "
        f"at k={','.join(str(k) for k in inputs.params.ks)}",
        collection=run.collection,
        by=by,
        params={
            "run": run.pk,
            "stage": stage.pk,
            "snapshot": snapshot.pk,
            "mapping": inputs.mapping.pk if inputs.mapping else None,
            **canonical_params(inputs.params),
        },
    )


def _engine_params(p: dict[str, Any]) -> engine.EvalParams:
    return engine.EvalParams(
        ks=tuple(p["ks"]),
        measures=tuple(p["measures"]) if p.get("measures") else None,
        rel_level=p["rel_level"],
        unjudged=p["unjudged"],
    )


def evaluation_result(evaluation: Evaluation, created: bool) -> dict[str, Any]:
    slug = evaluation.run.collection.slug
    again = "" if created else " (the same inputs were scored before: the stored evaluation)"
    return {
        "summary": f"Scored run '{evaluation.run.name}' / {evaluation.stage.name} against "
        f"snapshot v{evaluation.snapshot.number}: evaluation {evaluation.pk}{again}.",
        "url": reverse("scoring:evaluation", args=[slug, evaluation.pk]),
        "link_text": "Open the report",
        "open": True,
        "api_url": reverse("scoring-api:evaluation", args=[slug, evaluation.pk]),
        "evaluation": evaluation.pk,
        "created": created,
    }


def _score(job: Job, progress: JobProgress) -> None:
    p = job.params
    stage = RunStage.objects.select_related("run__collection").get(pk=p["stage"])
    snapshot = Snapshot.objects.get(pk=p["snapshot"])
    mapping = UnitMapping.objects.get(pk=p["mapping"]) if p.get("mapping") else None
    try:
        with transaction.atomic():
            evaluation, created = score_run_stage(
                run=stage.run,
                stage=stage,
                snapshot=snapshot,
                params=_engine_params(p),
                mapping=mapping,
                by=job.created_by,
                progress=progress,
            )
            complete(job, progress, evaluation_result(evaluation, created))
    except (VerityError, engine.EngineError) as exc:
        raise JobFailed(str(exc)) from None


@task()
def score_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _score)


# -- stage diagnosis ------------------------------------------------------------------------


def missing_diagnosis_stages(params: dict[str, Any]) -> list[RunStage]:
    """The stages of a diagnosis (``diagnosis_params``) with no stored evaluation at its
    parameters: what a diagnosis job would score."""
    stored = stored_stage_evaluations(
        stages=params["stages"],
        snapshot=params["snapshot"],
        params=params["params"],
        mapping=params["mapping"],
    )
    return [stage for stage, e in zip(params["stages"], stored, strict=True) if e is None]


def diagnosis_url(run: Run, snapshot: Snapshot, k: int, e: engine.EvalParams, mapping: Any) -> str:
    query = f"?snapshot={snapshot.number}&k={k}&rel={e.rel_level}&unjudged={e.unjudged}"
    if mapping is not None:
        query += f"&mapping={mapping.number}"
    return reverse("scoring:diagnosis", args=[run.collection.slug, run.name]) + query


def start_diagnosis(*, params: dict[str, Any], by: Any = None) -> Job:
    """Queue the scoring of every stage of a run that the diagnosis at ``params``
    (``diagnosis_params``) lacks; the diagnosis page reads them once stored."""
    run, snapshot, k = params["run"], params["snapshot"], params["k"]
    e, mapping = params["params"], params["mapping"]
    return create_job(
        kind=JobKind.DIAGNOSIS,
        task=diagnosis_task,
        label=f"Score every stage of run '{run.name}' against snapshot v{snapshot.number} "
        f"at k={k} for its diagnosis",
        collection=run.collection,
        by=by,
        params={
            "run": run.pk,
            "snapshot": snapshot.number,
            "k": k,
            "rel_level": e.rel_level,
            "unjudged": e.unjudged,
            "mapping": mapping.number if mapping else None,
        },
    )


def _diagnose(job: Job, progress: JobProgress) -> dict[str, Any]:
    p = job.params
    run = Run.objects.select_related("collection").get(pk=p["run"])
    try:
        params = diagnosis_params(
            run=run,
            snapshot=p["snapshot"],
            k=p["k"],
            rel_level=p["rel_level"],
            unjudged=p["unjudged"],
            mapping=p["mapping"],
        )
    except (VerityError, Snapshot.DoesNotExist) as exc:
        raise JobFailed(str(exc)) from None
    missing = missing_diagnosis_stages(params)
    inputs = snapshot_inputs(params["snapshot"]) if missing else None
    for n, stage in enumerate(missing, start=1):
        # One transaction per stage: each stored evaluation is whole, and scoring the
        # same inputs again returns it, so a retry after a kill scores only the rest.
        with transaction.atomic():
            score_run_stage(
                run=run,
                stage=stage,
                snapshot=params["snapshot"],
                params=params["params"],
                mapping=params["mapping"],
                by=job.created_by,
                inputs=inputs,
                progress=_StagePrefix(progress, f"stage {stage.name} ({n} of {len(missing)})"),
            )
    url = diagnosis_url(run, params["snapshot"], params["k"], params["params"], params["mapping"])
    return {
        "summary": f"Scored {len(missing)} stage(s) of run '{run.name}'; the diagnosis is ready.",
        "url": url,
        "link_text": "Open the diagnosis",
        "open": True,
        "api_url": reverse("run-diagnosis", args=[run.collection.slug, run.name])
        + url[url.index("?") :],
    }


class _StagePrefix(Progress):
    """The job's progress, each phase named after the stage being scored."""

    def __init__(self, inner: Progress, prefix: str) -> None:
        super().__init__()
        self.inner, self.prefix = inner, prefix

    def phase(self, name: str, total: int | None = None) -> None:
        self.inner.phase(f"{self.prefix}: {name}", total)

    def advance(self, n: int = 1) -> None:
        self.inner.advance(n)


@task()
def diagnosis_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _diagnose)


# -- comparison -----------------------------------------------------------------------------


def start_comparison(*, a: Evaluation, run: Run, stage: RunStage, by: Any = None) -> Job:
    """Queue the scoring of ``run``'s ``stage`` exactly as evaluation ``a`` was scored (its
    snapshot, mapping and parameters), then the comparison of the two."""
    return create_job(
        kind=JobKind.COMPARISON,
        task=comparison_task,
        label=f"Score run '{run.name}' / {stage.name} as evaluation {a.pk} was scored, and "
        "compare the two",
        collection=run.collection,
        by=by,
        params={"a": a.pk, "run": run.pk, "stage": stage.pk},
    )


def _compare(job: Job, progress: JobProgress) -> None:
    p = job.params
    a = Evaluation.objects.select_related("snapshot", "mapping", "run__collection").get(pk=p["a"])
    stage = RunStage.objects.select_related("run").get(pk=p["stage"])
    try:
        with transaction.atomic():
            b, _ = score_run_stage(
                run=stage.run,
                stage=stage,
                snapshot=a.snapshot,
                params=_engine_params(a.params),
                mapping=a.mapping,
                by=job.created_by,
                progress=progress,
            )
            slug = a.run.collection.slug
            query = f"?a={a.pk}&b={b.pk}"
            complete(
                job,
                progress,
                {
                    "summary": f"Scored run '{stage.run.name}' / {stage.name} as evaluation "
                    f"{a.pk} (evaluation {b.pk}); the comparison is ready.",
                    "url": reverse("scoring:compare", args=[slug]) + query,
                    "link_text": "Open the comparison",
                    "open": True,
                    "api_url": reverse("evaluation-compare", args=[slug]) + query,
                    "evaluation": b.pk,
                },
            )
    except (VerityError, engine.EngineError) as exc:
        raise JobFailed(str(exc)) from None


@task()
def comparison_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _compare)


# -- a comparison on a newer snapshot --------------------------------------------------------


def start_comparison_on(*, a: Evaluation, b: Evaluation, snapshot: Snapshot, by: Any = None) -> Job:
    """Queue the scoring of a's and b's stages on ``snapshot`` exactly as a and b were
    scored (their mapping and parameters), then the comparison of the two: "compare on
    vN" after the pairs that could change a comparison were judged and frozen."""
    return create_job(
        kind=JobKind.COMPARISON,
        task=comparison_on_task,
        label=f"Score '{a.run.name}' and '{b.run.name}' on snapshot v{snapshot.number} as "
        f"evaluations {a.pk} and {b.pk} were scored, and compare them",
        collection=a.run.collection,
        by=by,
        params={"a": a.pk, "b": b.pk, "snapshot": snapshot.pk},
    )


def _compare_on(job: Job, progress: JobProgress) -> None:
    p = job.params
    a, b = (
        Evaluation.objects.select_related("mapping", "stage__run__collection").get(pk=p[side])
        for side in ("a", "b")
    )
    snapshot = Snapshot.objects.get(pk=p["snapshot"])
    try:
        with transaction.atomic():
            inputs = snapshot_inputs(snapshot)
            new = [
                score_run_stage(
                    run=e.stage.run,
                    stage=e.stage,
                    snapshot=snapshot,
                    params=_engine_params(e.params),
                    mapping=e.mapping,
                    by=job.created_by,
                    inputs=inputs,
                    progress=progress,
                )[0]
                for e in (a, b)
            ]
            slug = a.stage.run.collection.slug
            query = f"?a={new[0].pk}&b={new[1].pk}"
            complete(
                job,
                progress,
                {
                    "summary": f"Scored both runs on snapshot v{snapshot.number} (evaluations "
                    f"{new[0].pk} and {new[1].pk}); the comparison is ready.",
                    "url": reverse("scoring:compare", args=[slug]) + query,
                    "link_text": f"Open the comparison on v{snapshot.number}",
                    "open": True,
                    "api_url": reverse("evaluation-compare", args=[slug]) + query,
                },
            )
    except (VerityError, engine.EngineError) as exc:
        raise JobFailed(str(exc)) from None


@task()
def comparison_on_task(job_id: int) -> dict[str, Any]:
    return run_job(job_id, _compare_on)
