from django.contrib import admin

from .models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    """Read-only: jobs change through ``jobs.services`` (compare-and-set on the state)."""

    list_display = ["pk", "kind", "state", "collection", "created_by", "created_at", "phase"]
    list_filter = ["kind", "state"]
    search_fields = ["label"]

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False
