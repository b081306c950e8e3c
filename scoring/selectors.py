"""Reads for runs and evaluations, named as questions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache
from django.db.models import Count, QuerySet

import verity_eval as engine
from judgments.models import Collection, Query, Snapshot
from judgments.selectors import frozen_judgments, snapshot_of

from .models import Evaluation, RankedList, Run, RunStage, UnitMapping


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
    stages = stages_in_order(run)
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
            "labels": {
                "total": snapshot.n_judgments,
                "human": snapshot.n_human_labels,
                "model": dict(snapshot.model_labels),
                "summary": snapshot.label_sources,
            },
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
        "aggregates": evaluation.aggregates_counted,
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


# -- reports, diagnosis, comparison ------------------------------------------------------


def evaluations_of(collection: Collection) -> QuerySet[Evaluation]:
    """The collection's evaluations, newest first, with what a list of them shows
    (``n_stages``: how many stages the evaluated run has)."""
    return (
        Evaluation.objects.filter(collection=collection)
        .select_related("run", "stage", "snapshot", "mapping")
        .annotate(n_stages=Count("run__stages", distinct=True))
        .order_by("-created_at", "-pk")  # Meta.ordering does not apply to a GROUP BY query
    )


def evaluation_in(collection: Collection, pk: int) -> Evaluation:
    """The evaluation with its joins, or ``Evaluation.DoesNotExist`` if the collection
    has none with that id (the views turn that into a 404)."""
    return evaluations_of(collection).select_related("run__collection").get(pk=pk)


def query_info_for(collection: Collection, qids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Text and tags of the collection's queries named in ``qids`` (ids it lacks are left
    out). Tags are the live ones: a snapshot freezes labels and statuses, not tags."""
    wanted = set(qids)
    out: dict[str, dict[str, Any]] = {}
    rows = Query.objects.filter(collection=collection).values_list("external_id", "text", "tags")
    for qid, text, tags in rows.iterator(chunk_size=5000):
        if qid in wanted:
            out[qid] = {"text": text, "tags": list(tags or [])}
    return out


def stage_lists_of(
    stage: RunStage, qids: Iterable[str] | None = None
) -> dict[str, tuple[list[str], bool]]:
    """``{query id: (ranked items, abstained)}`` as the stage stored them; only the
    queries in ``qids`` when given."""
    lists = RankedList.objects.filter(stage=stage)
    if qids is None:
        chunks: list[QuerySet[RankedList]] = [lists]
    else:
        wanted = list(qids)  # in slices: a database caps the parameters of one query
        chunks = [
            lists.filter(query_id__in=wanted[i : i + 500]) for i in range(0, len(wanted), 500)
        ]
    return {
        qid: (items, abstained)
        for chunk in chunks
        for qid, items, abstained in chunk.values_list("query_id", "items", "abstained").iterator(
            chunk_size=2000
        )
    }


def stage_marks_abstentions(stage: RunStage) -> bool:
    """Whether the run marked any query of this stage as an abstention."""
    return RankedList.objects.filter(stage=stage, abstained=True).exists()


def stages_in_order(run: Run) -> list[RunStage]:
    """The run's stages in pipeline order (``position``)."""
    return list(run.stages.order_by("position"))


def mapping_pairs_of(mapping: UnitMapping | None) -> dict[str, str] | None:
    if mapping is None:
        return None
    return dict(mapping.entries.values_list("fine_id", "coarse_id"))


def stored_evaluation(
    *,
    stage: RunStage,
    snapshot: Snapshot,
    mapping: UnitMapping | None,
    canonical_params: dict[str, Any],
) -> Evaluation | None:
    """The evaluation already stored for these inputs under the current engine, if any.

    The same inputs always give the same numbers, so a stored one stands for a fresh one;
    this lets a reader who may not score see what an evaluator scored before.
    """
    for evaluation in Evaluation.objects.filter(
        stage=stage, snapshot=snapshot, mapping=mapping, engine_version=engine.__version__
    ).order_by("pk"):
        params = evaluation.params
        if all(params.get(key) == value for key, value in canonical_params.items()):
            return evaluation
    return None


# -- what a scoring request names -----------------------------------------------------------


@dataclass
class ScoringInputs:
    """What one scoring needs, resolved and checked: the run, its stage, the snapshot,
    the unit mapping and the engine's parameters."""

    run: Run
    stage: RunStage
    snapshot: Snapshot
    mapping: UnitMapping | None
    params: engine.EvalParams


#: The largest cutoff any path accepts (form, API, ``score``, ``compare_runs``): far above
#: any stored ranked list, far below what only a typo gives (10^11).
K_MAX = 1_000_000


def parameter_problems(
    snapshot: Snapshot, *, ks: Sequence[int], rel_level: int | None
) -> dict[str, str]:
    """Parameters that cannot mean anything for this snapshot, by field, each with its
    valid range: a relevance threshold outside the snapshot's scale (nothing could be
    relevant), a cutoff below 1 or above ``K_MAX``."""
    problems: dict[str, str] = {}
    grades = sorted(int(g["grade"]) for g in snapshot.scale)
    top = grades[-1] if grades else 1
    if rel_level is not None and not 1 <= rel_level <= top:
        names = ", ".join(f"{g['grade']} {g['name']}" for g in snapshot.scale)
        problems["rel_level"] = (
            f"relevance threshold {rel_level} is outside snapshot v{snapshot.number}'s scale "
            f"({names}): give a grade from 1 to {top}, or none for the snapshot's own "
            f"({snapshot.relevant_grade})"
        )
    wrong = [k for k in ks if not 1 <= k <= K_MAX]
    if wrong:
        problems["ks"] = (
            f"cutoff {wrong[0]:,} is out of range: each k must be a whole number from 1 to "
            f"{K_MAX:,}"
        )
    return problems


def refuse_cli_parameters(snapshot: Snapshot, *, ks: Sequence[int], rel_level: int | None) -> None:
    """``parameter_problems`` for a command: ``ScoringInputError`` naming its options."""
    problems = parameter_problems(snapshot, ks=ks, rel_level=rel_level)
    if problems:
        raise ScoringInputError(
            {
                field: f"{'--rel-level' if field == 'rel_level' else '--k'}: {message}"
                for field, message in problems.items()
            }
        )


class ScoringInputError(Exception):
    """The request names something the collection lacks, or parameters the engine
    refuses; ``problems`` maps each field to what is wrong (``None``: the request)."""

    def __init__(self, problems: dict[str | None, str]) -> None:
        super().__init__("; ".join(problems.values()))
        self.problems = problems


def scoring_inputs(
    collection: Collection,
    *,
    run: str,
    stage: str | None,
    snapshot: int | None,
    ks: Sequence[int],
    measures: Sequence[str] | None = None,
    rel_level: int | None = None,
    unjudged: str = "nonrel",
    mapping: int | None = None,
) -> ScoringInputs:
    """Resolve a scoring request (the form's, the API's) or raise ``ScoringInputError``
    listing every problem at once. ``snapshot`` None is the latest."""
    problems: dict[str | None, str] = {}
    found_run = found_stage = found_snapshot = found_mapping = None
    try:
        found_run = run_by_name(collection, run)
        found_stage = stage_of(found_run, stage or None)
    except Run.DoesNotExist as exc:
        problems["run"] = str(exc)
    except RunStage.DoesNotExist as exc:
        problems["stage"] = str(exc)
    try:
        found_snapshot = snapshot_of(collection, snapshot)
    except Snapshot.DoesNotExist as exc:
        problems["snapshot"] = str(exc)
    if mapping is not None:
        found_mapping = UnitMapping.objects.filter(collection=collection, number=mapping).first()
        if found_mapping is None:
            problems["mapping"] = f"collection '{collection.slug}' has no unit mapping v{mapping}"
    params = None
    if found_snapshot is not None:
        bounds = parameter_problems(found_snapshot, ks=ks, rel_level=rel_level)
        problems.update(bounds)
        try:
            params = engine.EvalParams(
                ks=tuple(ks),
                measures=tuple(measures) if measures else None,
                rel_level=found_snapshot.relevant_grade if rel_level is None else rel_level,
                unjudged=unjudged,
            )
        except engine.EngineError as exc:
            if not bounds:
                problems[None] = str(exc)
    if problems:
        raise ScoringInputError(problems)
    assert found_run and found_stage and found_snapshot and params
    return ScoringInputs(found_run, found_stage, found_snapshot, found_mapping, params)


#: Cutoffs of the holes shown when none are asked for: 10 and the collection's pool depth.
HOLE_KS = (10,)


def hole_ks(collection: Collection, ks: Sequence[int] | None = None) -> tuple[int, ...]:
    return tuple(sorted(set(ks))) if ks else tuple(sorted({*HOLE_KS, collection.pool_depth}))


def stage_holes(
    stage: RunStage,
    snapshot: Snapshot,
    ks: Sequence[int],
    *,
    mapping: UnitMapping | None = None,
) -> engine.Holes:
    """Judged and unjudged items in the first k of each of ``stage``'s queries against
    ``snapshot``'s judgments (``verity_eval.find_holes``: columnar, one join). A stage
    and a snapshot never change, so the answer is cached by what they hold."""
    # The content hashes beside the ids: a key must not outlive a database that reuses ids
    # (a test database, a restored dump).
    key = (
        f"verity:holes:{stage.pk}:{stage.run.source_sha256}:{stage.name}:{snapshot.pk}:"
        f"{snapshot.content_hash}:{mapping.content_hash if mapping else 0}:"
        + ",".join(map(str, ks))
    )
    found = cache.get(key)
    if found is not None:
        return found
    qrels: dict[str, dict[str, int]] = {}
    for qid, item, grade in frozen_judgments(snapshot):
        qrels.setdefault(qid, {})[item] = grade
    rankings = {qid: items for qid, (items, _) in stage_lists_of(stage).items()}
    run = engine.Run.from_mapping(rankings, source=stage.run.name)
    pairs = mapping_pairs_of(mapping)
    if pairs:
        run, _ = run.map_units(pairs)
    holes = engine.find_holes(qrels, run, ks)
    cache.set(key, holes, timeout=3600)
    return holes


def run_holes(
    run: Run, snapshot: Snapshot, ks: Sequence[int], *, per_query: bool = True
) -> dict[str, Any]:
    """Holes of every stage of ``run`` against ``snapshot``: the JSON of the run's API and
    the runs pages (``{"snapshot": n, "ks": [...], "stages": {name: Holes.to_dict()}}``)."""
    return {
        "snapshot": snapshot.number,
        "ks": list(ks),
        "stages": {
            stage.name: stage_holes(stage, snapshot, ks).to_dict(per_query=per_query)
            for stage in stages_in_order(run)
        },
    }
