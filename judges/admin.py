"""Django admin for the judges app: judge configuration is editable (the API key never:
only the name of its environment variable); proposals and decisions are read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from judgments.admin import HTTPS_URLS, ReadOnlyAdmin

from .models import JudgeConfig, Proposal, ProposalDecision


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "collection", "provider", "model", "base_url", "show_in_queue"]
    list_filter = ["collection", "provider"]
    search_fields = ["name", "model"]
    readonly_fields = ["created_at"]
    formfield_overrides = HTTPS_URLS

    def get_deleted_objects(self, objs: Any, request: Any) -> Any:
        """A judge whose labels its collection accepts at freeze (``model_labels``) is
        shown as protected: deleting it would make every freeze fail."""
        deleted, counts, perms, protected = super().get_deleted_objects(objs, request)
        for judge in objs:
            if judge.collection.model_labels == judge.name:
                protected = [
                    *protected,
                    f"judge '{judge.name}' labels the pairs no person assessed at every "
                    f"freeze of '{judge.collection.slug}' (its model_labels setting): choose "
                    "another judge or none on the collection's judges page first",
                ]
        return deleted, counts, perms, protected


@admin.register(Proposal)
class ProposalAdmin(ReadOnlyAdmin):
    list_display = ["judge", "collection", "query", "item", "grade", "state", "created_at"]
    list_filter = ["collection", "judge", "state"]


@admin.register(ProposalDecision)
class ProposalDecisionAdmin(ReadOnlyAdmin):
    list_display = ["proposal", "outcome", "grade", "user", "created_at"]
    list_filter = ["outcome"]
