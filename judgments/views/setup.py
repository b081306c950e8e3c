"""Setting a collection up in the browser: a new collection (``/c/new/``), its settings
with what each change will do shown before it is applied, and its members. Every change
goes through the services, which record it in the audit log; the settings page shows
that history."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from ..extensions import label_source
from ..models import Collection, Membership, Role
from ..selectors import may_create_collections
from ..selectors.settings import LABELS, settings_change_plan, settings_history
from ..services import (
    COLLECTION_SETTINGS,
    InvariantError,
    set_member_access,
    set_member_role,
    set_up_collection,
    update_collection_settings,
)
from ..setup_forms import (
    MemberAddForm,
    MemberChangeForm,
    NewCollectionForm,
    SettingsForm,
    scale_text,
)
from ..setup_jobs import start_collection_setup
from .common import RoleRequired, member_view

HISTORY_SHOWN = 100


def _require_admin(request: HttpRequest, what: str) -> None:
    if request.collection_role != Role.ADMIN:  # type: ignore[attr-defined]
        raise RoleRequired(f"{what} needs the admin role in this collection.", role=Role.ADMIN)


# -- a new collection -------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@login_required
def new_collection(request: HttpRequest) -> HttpResponse:
    """The new-collection form. Without start files the collection is made now and the
    page goes to it; with them, a job makes it (the page goes to the job's progress)."""
    if not may_create_collections(request.user):
        who = {"staff": "staff users"}.get(settings.VERITY_COLLECTION_CREATORS, "superusers")
        raise PermissionDenied(
            f"Creating collections is open to {who} on this server "
            "(VERITY_COLLECTION_CREATORS); ask one to create it, or to make you an admin of "
            "an existing one."
        )
    form = NewCollectionForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        v = form.cleaned_data
        fields = {
            k: v[k]
            for k in (
                "slug",
                "name",
                "scale",
                "relevant_grade",
                "unit",
                "description",
                "guidelines",
                "pool_depth",
            )
        }
        review = {
            k: v[k] for k in ("assessors_per_item", "resolution_policy", "adjudicate_distance")
        }
        if v["start"]:
            job = start_collection_setup(
                fields=fields,
                review=review,
                start=v["start"],
                uploads=form.uploads(),
                by=request.user,
                create_missing_items=v["create_missing_items"],
                set_status=v["set_status"],
            )
            return redirect("jobs:job", pk=job.pk)
        try:
            collection, _ = set_up_collection(
                creator=request.user, **fields, review=review, request=request
            )
        except InvariantError as e:
            form.add_error(None, str(e))
        else:
            messages.success(request, f"Created '{collection.name}'; you are its admin.")
            return redirect("judgments:collection", slug=collection.slug)
    status = 400 if form.errors else 200
    return render(request, "judgments/new_collection.html", {"form": form}, status=status)


# -- settings ---------------------------------------------------------------------------------


def _judges(collection: Collection) -> list[str]:
    """The judges the policy may name, and the one it names now (even if it was removed
    since: the form must be able to keep or clear it)."""
    source = label_source()
    names = list(source.names(collection)) if source is not None else []
    if collection.model_labels and collection.model_labels not in names:
        names.append(collection.model_labels)
    return names


def _last_change(collection: Collection) -> int:
    latest = settings_history(collection).filter(action="collection.settings").first()
    return latest.pk if latest is not None else 0


def _history_rows(collection: Collection) -> list[dict[str, Any]]:
    rows = []
    for event in settings_history(collection)[:HISTORY_SHOWN]:
        rows.append(
            {
                "event": event,
                "changes": [
                    {
                        "name": LABELS.get(k, k),
                        "before": _shown((event.before or {}).get(k)),
                        "after": _shown((event.after or {}).get(k)),
                    }
                    for k in _keys(event)
                ],
            }
        )
    return rows


#: The order a history row lists its settings in, whatever order the database kept the
#: row's JSON keys in (PostgreSQL's jsonb sorts them by length, then bytes).
_KEY_ORDER = {name: n for n, name in enumerate((*COLLECTION_SETTINGS, "role", "can_adjudicate"))}


def _keys(event: Any) -> list[str]:
    keys = {*(event.after or {}), *(event.before or {})}
    return sorted(keys, key=lambda k: (_KEY_ORDER.get(k, len(_KEY_ORDER)), k))


def _shown(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):  # a scale
        return ", ".join(f"{e.get('grade')} {e.get('name')}" for e in value if isinstance(e, dict))
    text = str(value)
    return text if len(text) <= 120 else text[:117] + "…"


@require_http_methods(["GET", "POST"])
@member_view()
def collection_settings(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Two steps: "Preview" shows what each changed setting will do, with counts read
    now; "Apply" makes the change (``update_collection_settings``). A change made by
    someone else between the two is shown instead of being applied over."""
    _require_admin(request, "Changing the collection's settings")
    judges = _judges(collection)
    plan = None
    preview_guidelines = None
    if request.method == "POST":
        form = SettingsForm(request.POST, judges=judges)
        if form.is_valid():
            changes = form.changes()
            plan = settings_change_plan(collection, changes)
            stale = (form.cleaned_data.get("based_on") or 0) != _last_change(collection)
            if request.POST.get("step") == "apply" and plan and not stale:
                try:
                    update_collection_settings(
                        collection=collection,
                        actor=request.user,
                        request=request,
                        **{c.name: c.after for c in plan},
                    )
                except InvariantError as e:
                    form.add_error(None, str(e))
                else:
                    messages.success(
                        request,
                        "Changed: " + ", ".join(c.label.lower() for c in plan) + ".",
                    )
                    return redirect("judgments:settings", slug=collection.slug)
            elif request.POST.get("step") == "apply" and stale:
                messages.warning(
                    request,
                    "Someone changed the settings since your preview (see the history "
                    "below): nothing was applied. Check the preview again, then apply.",
                )
            elif not plan:
                messages.info(request, "Nothing to change: every setting has this value.")
            if "guidelines" in {c.name for c in plan}:
                preview_guidelines = changes["guidelines"]
    else:
        initial = {name: getattr(collection, name) for name in COLLECTION_SETTINGS}
        form = SettingsForm(initial=initial, judges=judges)
    based_on = _last_change(collection)
    if form.is_bound:
        form.data = form.data.copy()
        form.data["based_on"] = str(based_on)
    else:
        form.initial["based_on"] = based_on
    return render(
        request,
        "judgments/settings.html",
        {
            "collection": collection,
            "form": form,
            "plan": plan,
            "preview_guidelines": preview_guidelines,
            "history": _history_rows(collection),
            "history_total": settings_history(collection).count(),
            "scale_text": scale_text(collection.scale).replace("\n", ", "),
        },
        status=400 if form.errors else 200,
    )


# -- members ----------------------------------------------------------------------------------


def _member_rows(collection: Collection) -> Any:
    return (
        Membership.objects.filter(collection=collection)
        .select_related("user")
        .order_by("user__username")
    )


def _apply_member_change(
    request: HttpRequest, collection: Collection, form: MemberChangeForm
) -> HttpResponse | None:
    v = form.cleaned_data
    membership = _member_rows(collection).filter(user__username=v["username"]).first()
    if membership is None:
        messages.error(request, f"{v['username']} is not a member (any more); nothing changed.")
        return None
    user: AbstractBaseUser = membership.user
    try:
        if v["action"] == "remove":
            set_member_role(
                collection=collection, user=user, role=None, actor=request.user, request=request
            )
            messages.success(request, f"Removed {user.get_username()}; they lost access now.")
            if user.pk == request.user.pk and not request.user.is_superuser:
                return redirect("judgments:home")
        else:
            set_member_access(
                collection=collection,
                user=user,
                role=v["role"] or membership.role,
                can_adjudicate=v["can_adjudicate"],
                actor=request.user,
                request=request,
            )
            messages.success(request, f"Saved {user.get_username()}'s access.")
            if user.pk == request.user.pk and v["role"] != Role.ADMIN:
                # No longer an admin here: the members page would refuse them now.
                return redirect("judgments:collection", slug=collection.slug)
    except InvariantError as e:
        messages.error(request, f"Not changed: {e}.")
    return None


@require_http_methods(["GET", "POST"])
@member_view()
def collection_members(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Members with their roles: add one (by username or e-mail), change a role or the
    adjudicator capability, remove one; the last admin stays (``set_member_role``)."""
    _require_admin(request, "Managing the members")
    add = MemberAddForm(prefix="add")
    if request.method == "POST":
        if request.POST.get("action") == "add":
            add = MemberAddForm(request.POST, prefix="add")
            if add.is_valid():
                user = add.cleaned_data["user"]
                if Membership.objects.filter(collection=collection, user=user).exists():
                    add.add_error("user", f"{user.get_username()} is a member already")
                else:
                    set_member_access(
                        collection=collection,
                        user=user,
                        role=add.cleaned_data["role"],
                        can_adjudicate=add.cleaned_data["can_adjudicate"],
                        actor=request.user,
                        request=request,
                    )
                    messages.success(
                        request, f"Added {user.get_username()} as {add.cleaned_data['role']}."
                    )
                    return redirect("judgments:members", slug=collection.slug)
        else:
            change = MemberChangeForm(request.POST)
            if not change.is_valid():
                messages.error(request, "Nothing changed: the request was malformed. Reload.")
            else:
                answer = _apply_member_change(request, collection, change)
                if answer is not None:
                    return answer
            return redirect(reverse("judgments:members", args=[collection.slug]))
    return render(
        request,
        "judgments/members.html",
        {
            "collection": collection,
            "members": _member_rows(collection),
            "roles": Role.choices,
            "add": add,
        },
        status=400 if add.errors else 200,
    )
