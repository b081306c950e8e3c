from __future__ import annotations

from typing import Any

from django.apps import AppConfig


def _runs_under_qrels(collection: Any, qrels_sets: Any) -> dict[str, Any]:
    # Imported when called: start-up imports no engine (bench/startup_bench.py).
    from .reports.orderings import runs_under_qrels

    return runs_under_qrels(collection, qrels_sets)


class _BundleRuns:
    """``scoring.bundles.BundleRunsSource``, imported when a bundle is first read or
    written: it brings the run services, which no start-up needs (issue 29)."""

    def _source(self) -> Any:
        from .bundles import BundleRunsSource

        return BundleRunsSource()

    def records(self, collection: Any) -> tuple[list[Any], list[Any]]:
        return self._source().records(collection)  # type: ignore[no-any-return]

    def check(self, collection: Any, runs: list[Any], rankings: list[Any]) -> list[Any]:
        return self._source().check(collection, runs, rankings)  # type: ignore[no-any-return]

    def write(self, collection: Any, runs: list[Any], rankings: list[Any], by: Any) -> int:
        return self._source().write(collection, runs, rankings, by)  # type: ignore[no-any-return]


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from judgments.extensions import (
            register_bundle_runs,
            register_qrels_scorer,
            register_run_names,
        )

        register_qrels_scorer(_runs_under_qrels)
        register_run_names(_run_names)
        register_bundle_runs(_BundleRuns())


def _run_names(collection_id: int) -> set[str]:
    from .models import Run

    return set(Run.objects.filter(collection_id=collection_id).values_list("name", flat=True))
