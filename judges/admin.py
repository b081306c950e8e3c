"""Django admin for the judges app: judge configuration is editable (the API key never:
only the name of its environment variable); proposals and decisions are read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from .models import JudgeConfig, Proposal, ProposalDecision


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "collection", "provider", "model", "base_url", "show_in_queue"]
    list_filter = ["collection", "provider"]
    search_fields = ["name", "model"]
    readonly_fields = ["created_at"]


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(Proposal)
class ProposalAdmin(ReadOnly):
    list_display = ["judge", "collection", "query", "item", "grade", "state", "created_at"]
    list_filter = ["collection", "judge", "state"]


@admin.register(ProposalDecision)
class ProposalDecisionAdmin(ReadOnly):
    list_display = ["proposal", "outcome", "grade", "user", "created_at"]
    list_filter = ["outcome"]
