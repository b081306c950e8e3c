"""Admin: browse everything; change through services only.

Judgments, statuses and history change through ``judgments.services`` (version checks,
history rows, invariants), so their admin pages are read-only.
"""

from typing import Any

from django import forms
from django.contrib import admin
from django.db import models, transaction
from django.urls import reverse
from django.utils.html import format_html

from .models import (
    AdjudicationTask,
    ApiToken,
    Assessment,
    Collection,
    EvidenceCondition,
    Item,
    Judgment,
    JudgmentChange,
    Membership,
    Query,
    QueryStatusChange,
    ReviewTask,
    Snapshot,
    TaskSource,
)

# The services are imported where the admin uses them, not here: every process (each
# management command, each worker) loads this module at start-up through the admin's
# autodiscovery, and judgments.services is the largest part of the app
# (bench/startup_bench.py; issue 29).

#: URL fields assume https when the scheme is left out: Django 6's default, said now.
HTTPS_URLS = {models.URLField: {"assume_scheme": "https"}}


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


class CollectionAdminForm(forms.ModelForm):
    """On "Add collection" the scale and the relevant grade are set once, checked as
    ``create_collection`` checks them (a form error, never a 500); afterwards they are
    read-only, as the stored judgments depend on them. (No Meta: the admin gives the
    model and its fields.)"""

    def clean(self) -> dict[str, Any]:
        from .services.collections import RESERVED_SLUGS, validate_scale
        from .services.errors import InvariantError

        data = super().clean()
        if "scale" in self.fields and "scale" not in self.errors:
            try:
                data["scale"] = validate_scale(data.get("scale"), data.get("relevant_grade"))
            except InvariantError as e:
                self.add_error("scale", str(e))
        if "slug" in self.fields and data.get("slug") in RESERVED_SLUGS:
            self.add_error("slug", f"'{data['slug']}' names a page of Verity; choose another")
        depth = data.get("pool_depth")
        if depth is not None and depth < 1:
            self.add_error("pool_depth", "the pool depth must be a positive integer")
        return data


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    """ "Add collection" goes through ``create_collection`` (the adding superuser becomes
    its admin) and a change through ``update_collection_settings``, so both are checked
    and recorded in the audit log as on the pages. The review settings (assessors per
    item, policy, distance, model labels) are read-only here: their change does work
    (slots for open tasks, assessments kept) that the settings page previews first, and
    the change page links to it."""

    form = CollectionAdminForm
    list_display = ["slug", "name", "unit", "relevant_grade", "pool_depth", "created_at"]
    search_fields = ["slug", "name"]
    #: Set once, on "Add collection".
    set_on_add = ("scale", "relevant_grade", "unit", "slug")
    # The assessor settings change through update_collection_settings (the API's PATCH),
    # which gives open tasks their slots and keeps judgments as assessments; model_labels
    # too (the API, or the judges page), which checks the name against the judges; the
    # pooling strategy too (back to depth, it gives raised tasks the depth order again).
    readonly_fields = [
        "slug",
        "unit",
        "scale",
        "relevant_grade",
        "created_at",
        "assessors_per_item",
        "resolution_policy",
        "adjudicate_distance",
        "model_labels",
        "pool_strategy",
        "pool_floor",
        "settings_and_members",
    ]

    @admin.display(description="Settings and members")
    def settings_and_members(self, obj: Collection) -> str:
        if obj is None or obj.pk is None:
            return "On the collection's settings page, once it is added."
        return format_html(
            'Change the review settings on <a href="{}">its settings page</a> (with a '
            'preview of what each change does) and the members on <a href="{}">its members '
            "page</a>; both keep a history.",
            reverse("judgments:settings", args=[obj.slug]),
            reverse("judgments:members", args=[obj.slug]),
        )

    def get_readonly_fields(self, request: Any, obj: Any = None) -> Any:
        fields = super().get_readonly_fields(request, obj)
        return [f for f in fields if f not in self.set_on_add] if obj is None else fields

    def get_changeform_initial_data(self, request: Any) -> dict[str, Any]:
        return {
            "scale": [{"grade": 0, "name": "not relevant"}, {"grade": 1, "name": "relevant"}],
            **super().get_changeform_initial_data(request),
        }

    def save_model(self, request: Any, obj: Collection, form: Any, change: bool) -> None:
        from .services.collections import (
            COLLECTION_SETTINGS,
            create_collection,
            update_collection_settings,
        )

        data = form.cleaned_data
        if not change:
            created = create_collection(
                slug=data["slug"],
                name=data["name"],
                scale=data["scale"],
                relevant_grade=data["relevant_grade"],
                unit=data["unit"],
                description=data.get("description", ""),
                guidelines=data.get("guidelines", ""),
                pool_depth=data["pool_depth"],
                creator=request.user,
                request=request,
            )
            obj.pk = created.pk
            obj.created_at = created.created_at
            return
        stored = Collection.objects.get(pk=obj.pk)
        changes = {
            name: data[name]
            for name in COLLECTION_SETTINGS
            if name in data and name in form.changed_data
        }
        update_collection_settings(
            collection=stored, actor=request.user, request=request, **changes
        )

    def save_related(self, request: Any, form: Any, formsets: Any, change: bool) -> None:
        pass  # no inlines; the object was saved by the services above


@admin.register(Query)
class QueryAdmin(ReadOnlyAdmin):
    list_display = ["external_id", "collection", "status", "text"]
    list_filter = ["collection", "status"]
    search_fields = ["external_id", "text"]


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["external_id", "collection", "title", "placeholder"]
    list_filter = ["collection", "placeholder"]
    search_fields = ["external_id", "title"]
    readonly_fields = ["collection", "external_id", "created_at"]
    formfield_overrides = HTTPS_URLS

    def save_model(self, request: Any, obj: Item, form: Any, change: bool) -> None:
        from .services.search_index import index_items

        with transaction.atomic():
            super().save_model(request, obj, form, change)
            index_items([obj])  # the search index follows the text (SQLite; no-op on PG)


@admin.register(Judgment)
class JudgmentAdmin(ReadOnlyAdmin):
    list_display = ["query", "item", "grade", "reviewer", "version", "updated_at"]
    list_filter = ["query__collection", "grade"]
    list_select_related = ["query", "item", "reviewer"]


@admin.register(JudgmentChange)
class JudgmentChangeAdmin(ReadOnlyAdmin):
    list_display = ["query", "item", "old_grade", "new_grade", "changed_by", "changed_at", "source"]
    list_filter = ["source"]
    list_select_related = ["query", "item", "changed_by"]


@admin.register(QueryStatusChange)
class QueryStatusChangeAdmin(ReadOnlyAdmin):
    list_display = ["query", "old_status", "new_status", "changed_by", "changed_at", "source"]


@admin.register(EvidenceCondition)
class EvidenceConditionAdmin(ReadOnlyAdmin):
    list_display = ["query", "__str__", "updated_by", "updated_at"]


@admin.register(ReviewTask)
class ReviewTaskAdmin(ReadOnlyAdmin):
    list_display = ["query", "item", "status", "source", "best_rank", "priority", "claimed_by"]
    list_filter = ["collection", "status"]
    list_select_related = ["query", "item", "claimed_by"]


@admin.register(Assessment)
class AssessmentAdmin(ReadOnlyAdmin):
    list_display = ["query", "item", "assessor", "assessor_name", "grade", "version"]
    list_filter = ["collection", "grade"]
    list_select_related = ["query", "item", "assessor"]


@admin.register(AdjudicationTask)
class AdjudicationTaskAdmin(ReadOnlyAdmin):
    list_display = ["query", "item", "status", "grade", "decider", "decided_at", "reason"]
    list_filter = ["collection", "status"]
    list_select_related = ["query", "item", "decided_by"]


@admin.register(Membership)
class MembershipAdmin(ReadOnlyAdmin):
    """Read-only: members change on each collection's members page (``set_member_access``
    and ``set_member_role``: the last admin is kept, each change recorded in the audit
    log), or over the API."""

    list_display = [
        "collection",
        "user",
        "role",
        "can_adjudicate",
        "granted_by_group",
        "created_at",
        "manage",
    ]
    list_filter = ["collection", "role"]
    list_select_related = ["collection", "user"]
    # The view page too says where a membership changes (it has no form of its own).
    readonly_fields = ["manage"]

    def has_view_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return bool(request.user.is_active and request.user.is_staff)

    @admin.display(description="Change")
    def manage(self, obj: Membership) -> str:
        return format_html(
            '<a href="{}">members page</a>',
            reverse("judgments:members", args=[obj.collection.slug]),
        )


@admin.register(TaskSource)
class TaskSourceAdmin(ReadOnlyAdmin):
    list_display = ["task", "label", "rank", "created_at"]
    list_select_related = ["task"]


@admin.register(Snapshot)
class SnapshotAdmin(ReadOnlyAdmin):
    """Snapshots are made by ``freeze_snapshot`` and never change."""

    list_display = [
        "collection",
        "number",
        "content_hash",
        "n_judgments",
        "n_queries",
        "created_at",
    ]
    list_filter = ["collection"]


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """Everyone's API tokens (never a key: only its prefix and hash exist), and revoking
    them. Tokens are made on /accounts/tokens/ or with ``manage.py api_token``."""

    list_display = (
        "name",
        "prefix",
        "user",
        "scope",
        "collection",
        "expires_at",
        "last_used_at",
        "last_used_ip",
        "revoked_at",
    )
    list_filter = ("scope", "collection")
    search_fields = ("name", "prefix", "user__username")
    exclude = ("key_hash",)
    actions = ["revoke"]

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: Any, queryset: Any) -> None:
        from .services.tokens import revoke_api_token

        revoked = sum(
            revoke_api_token(token=token, by=request.user, request=request)
            for token in queryset.select_related("user", "collection")
        )
        self.message_user(request, f"Revoked {revoked} token(s); requests with them get 401.")
