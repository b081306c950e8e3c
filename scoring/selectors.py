"""Reads for runs and evaluations, named as questions."""

from __future__ import annotations

from typing import Any

from judgments.models import Collection

from .models import Evaluation, Run, RunStage


def run_by_name(collection: Collection, name: str) -> Run:
    """The run, or ``Run.DoesNotExist`` naming the runs the collection has."""
    found = Run.objects.filter(collection=collection, name=name).first()
    if found is None:
        known = ", ".join(Run.objects.filter(collection=collection).values_list("name", flat=True))
        raise Run.DoesNotExist(
            f"collection '{collection.slug}' has no run '{name}'; "
            + (f"its runs are: {known}" if known else "import one with manage.py import_run")
        )
    return found


def stage_of(run: Run, name: str | None) -> RunStage:
    """The named stage, or the run's only stage; a multi-stage run needs a name."""
    stages = list(run.stages.order_by("position"))
    names = ", ".join(s.name for s in stages)
    if name is None:
        if len(stages) == 1:
            return stages[0]
        raise RunStage.DoesNotExist(
            f"run '{run.name}' has several stages ({names}); choose one with --stage"
        )
    for stage in stages:
        if stage.name == name:
            return stage
    raise RunStage.DoesNotExist(f"run '{run.name}' has no stage '{name}'; its stages: {names}")


def evaluation_report(evaluation: Evaluation, *, per_query: bool = True) -> dict[str, Any]:
    """Everything that fixes the meaning of an evaluation's numbers, and the numbers."""
    run, stage, snapshot = evaluation.run, evaluation.stage, evaluation.snapshot
    collection = run.collection
    report: dict[str, Any] = {
        "id": evaluation.pk,
        "status": evaluation.status,
        "collection": {
            "slug": collection.slug,
            "name": collection.name,
            "corpus_boundary": collection.description,
            "unit": snapshot.unit,
        },
        "snapshot": {
            "number": snapshot.number,
            "content_hash": snapshot.content_hash,
            "relevant_grade": snapshot.relevant_grade,
        },
        "run": {
            "name": run.name,
            "source_sha256": run.source_sha256,
            "order": run.order_rule,
            "dedup": run.dedup_policy,
            "duplicates_dropped": run.duplicates_dropped,
        },
        "stage": stage.name,
        "mapping": (
            {"number": evaluation.mapping.number, "content_hash": evaluation.mapping.content_hash}
            if evaluation.mapping
            else None
        ),
        "params": evaluation.params,
        "engine_version": evaluation.engine_version,
        "fingerprint": evaluation.fingerprint,
        "counts": evaluation.counts,
        "aggregates": evaluation.aggregates,
        "created_at": evaluation.created_at.isoformat(),
    }
    if per_query:
        report["per_query"] = {
            qid: values
            for qid, values in evaluation.rows.order_by("query_id").values_list(
                "query_id", "values"
            )
        }
    return report
