"""The audit log in Django's admin: read-only, and for superusers only.

Nobody adds, changes or deletes a row here (the log is append-only; retention is
``manage.py audit_log --prune``); staff who are not superusers do not see it at all.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from .models import AuditEvent


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("at", "action", "actor_name", "collection_slug", "target", "address")
    list_filter = ("action",)
    search_fields = ("actor_name", "collection_slug", "target")
    date_hierarchy = "at"
    ordering = ("-at", "-id")
    readonly_fields = [f.name for f in AuditEvent._meta.fields]
    actions = None

    def has_module_permission(self, request: Any) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request: Any, obj: Any = None) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False
