"""A collection's runs in its bundle (``export_collection --runs``, docs/BUNDLES.md):
read as records, checked and stored back by ``import_collection`` through the hook in
``judgments.extensions`` (``judgments`` never imports ``scoring``).

A run comes back as it was stored: its stages in order, each query's ranked list (the
distinct ids, in order, after the dedup policy it was uploaded with), its name,
description, order rule, dedup policy and source file's name and sha256. It is not
pooled again: the bundle's unjudged markers already hold what its pooling queued, and
pooling anew would queue pairs the source had settled otherwise (and change the
snapshot hash). Its author and time are the importer's and now.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from judgments.formats import Problem, RankingRecord, RunRecord, Where
from judgments.models import Collection

from .models import DedupPolicy, OrderRule, RankedList, Run, RunStage
from .services.runs import _RUN_NAME


class BundleRunsSource:
    def records(self, collection: Collection) -> tuple[list[RunRecord], list[RankingRecord]]:
        where = Where(f"collection '{collection.slug}'")
        runs, rankings = [], []
        for run in Run.objects.filter(collection=collection).order_by("name"):
            stages = list(run.stages.order_by("position"))
            runs.append(
                RunRecord(
                    where,
                    name=run.name,
                    stages=[s.name for s in stages],
                    description=run.description,
                    source_filename=run.source_filename,
                    source_sha256=run.source_sha256,
                    source_format=run.source_format,
                    order_rule=run.order_rule,
                    dedup_policy=run.dedup_policy,
                    duplicates_dropped=run.duplicates_dropped,
                )
            )
            for stage in stages:
                rankings += [
                    RankingRecord(
                        where, run=run.name, stage=stage.name, query=q, items=items, abstained=a
                    )
                    for q, items, a in RankedList.objects.filter(stage=stage)
                    .values_list("query_id", "items", "abstained")
                    .iterator(chunk_size=2000)
                ]
        return runs, rankings

    def check(
        self, collection: Collection, runs: list[RunRecord], rankings: list[RankingRecord]
    ) -> list[Problem]:
        problems = []
        taken = set(Run.objects.filter(collection=collection).values_list("name", flat=True))
        stages = {r.name: set(r.stages) for r in runs}
        for r in runs:
            if not _RUN_NAME.fullmatch(r.name):
                problems.append(
                    Problem(r.where, f"run name {r.name!r} may hold only letters, digits, - and _")
                )
            if r.name in taken:
                problems.append(
                    Problem(
                        r.where,
                        f"collection '{collection.slug}' has a run '{r.name}' already; runs "
                        "are immutable: remove this run's lines, or rename it in them",
                    )
                )
            if r.order_rule not in OrderRule.values:
                problems.append(
                    Problem(r.where, f"order_rule must be one of {', '.join(OrderRule.values)}")
                )
            if r.dedup_policy not in DedupPolicy.values:
                problems.append(
                    Problem(r.where, f"dedup_policy must be one of {', '.join(DedupPolicy.values)}")
                )
        for k in rankings:
            if k.run not in stages:
                problems.append(
                    Problem(k.where, f"no run record names run '{k.run}'; add its run line")
                )
            elif k.stage not in stages[k.run]:
                problems.append(
                    Problem(
                        k.where,
                        f"run '{k.run}' has no stage '{k.stage}'; its stages are "
                        f"{', '.join(sorted(stages[k.run]))}",
                    )
                )
        return problems

    def write(
        self, collection: Collection, runs: list[RunRecord], rankings: list[RankingRecord], by: Any
    ) -> int:
        lists: dict[tuple[str, str], list[RankingRecord]] = defaultdict(list)
        for k in rankings:
            lists[(k.run, k.stage)].append(k)
        for r in runs:
            run = Run.objects.create(
                collection=collection,
                name=r.name,
                description=r.description,
                source_filename=r.source_filename,
                source_sha256=r.source_sha256,
                source_format=r.source_format,
                order_rule=r.order_rule,
                dedup_policy=r.dedup_policy,
                duplicates_dropped=r.duplicates_dropped,
                created_by=by,
            )
            for position, name in enumerate(r.stages):
                mine = lists.get((r.name, name), [])
                stage = RunStage.objects.create(
                    run=run,
                    name=name,
                    position=position,
                    depth=max((len(k.items) for k in mine), default=0),
                    n_queries=len(mine),
                    n_rows=sum(len(k.items) for k in mine),
                )
                RankedList.objects.bulk_create(
                    (
                        RankedList(
                            stage=stage, query_id=k.query, items=k.items, abstained=k.abstained
                        )
                        for k in mine
                    ),
                    batch_size=2000,
                )
        return len(runs)
