"""Admin: browse runs, mappings and evaluations. They are made by the services in
``scoring.services`` and never change, so every page is read-only."""

from django.contrib import admin

from judgments.admin import ReadOnlyAdmin

from .models import Evaluation, Run, RunStage, UnitMapping


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = [
        "name",
        "collection",
        "source_filename",
        "order_rule",
        "dedup_policy",
        "created_at",
    ]
    list_filter = ["collection"]


@admin.register(RunStage)
class RunStageAdmin(ReadOnlyAdmin):
    list_display = ["run", "name", "position", "depth", "n_queries", "n_rows"]
    list_select_related = ["run"]


@admin.register(UnitMapping)
class UnitMappingAdmin(ReadOnlyAdmin):
    list_display = ["collection", "number", "from_unit", "to_unit", "n_entries", "created_at"]


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    list_display = ["pk", "collection", "run", "stage", "snapshot", "status", "created_at"]
    list_filter = ["collection", "status"]
    list_select_related = ["collection", "run", "stage", "snapshot"]
