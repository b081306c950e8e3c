"""The judges' pages: the collection's judges with a button to start a judging job,
a judge's proposals, and its calibration report against people."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from judgments.models import Collection, Role
from judgments.selectors import may
from judgments.services import InvariantError, update_collection_settings
from judgments.views.common import RoleRequired, member_view

from .models import BASELINE_NAME, JudgeConfig, Provider
from .selectors import calibration_of, judge_named, judge_names, proposals_of
from .services import JudgeError, configure_judge, judge_settings
from .tasks import start_proposals


def _judge(collection: Collection, name: str) -> JudgeConfig:
    try:
        return judge_named(collection, name)
    except JudgeConfig.DoesNotExist as exc:
        raise Http404(str(exc)) from None


@require_GET
@member_view()
def judge_list(request: HttpRequest, collection: Collection) -> HttpResponse:
    judges = [_judge(collection, name) for name in judge_names(collection)]
    return render(
        request,
        "judges/judges.html",
        {
            "collection": collection,
            "judges": judges,
            "may_start": may(request.user, collection, Role.EVALUATOR),
            "may_configure": may(request.user, collection, Role.ADMIN),
        },
    )


@require_POST
@member_view()
def judge_policy(request: HttpRequest, collection: Collection) -> HttpResponse:
    """Set the collection's ``model_labels`` policy (admin): '' or a judge's name."""
    if not may(request.user, collection, Role.ADMIN):
        raise RoleRequired(
            "Changing the collection's settings needs the admin role.", role=Role.ADMIN
        )
    name = request.POST.get("model_labels", "").strip()
    try:
        update_collection_settings(
            collection=collection, model_labels=name, actor=request.user, request=request
        )
    except InvariantError as exc:
        messages.error(request, f"Not changed: {exc}.")
    else:
        messages.success(
            request,
            f"From the next freeze, judge '{name}' labels the pairs no person assessed."
            if name
            else "From the next freeze, no model-made label enters a snapshot.",
        )
    return redirect("judges:judges", slug=collection.slug)


class JudgeConfigForm(forms.ModelForm):
    base_url = forms.URLField(
        required=False,
        assume_scheme="https",
        help_text="e.g. http://127.0.0.1:8080/v1 (…/chat/completions is added)",
    )

    class Meta:
        model = JudgeConfig
        fields = [
            "name",
            "base_url",
            "model",
            "api_key_env",
            "timeout",
            "retries",
            "concurrency",
            "request_budget",
            "backoff",
            "temperature",
            "max_tokens",
            "prompt_version",
            "show_in_queue",
        ]

    def __init__(self, *args: object, collection: Collection, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.instance.collection = collection
        self.instance.provider = self.instance.provider or Provider.OPENAI

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if name == BASELINE_NAME:
            raise forms.ValidationError(f"'{BASELINE_NAME}' is the built-in offline judge")
        former = self.instance.name if self.instance.pk else ""
        if former and name != former and self.instance.collection.model_labels == former:
            raise forms.ValidationError(
                f"the collection accepts the labels of '{former}' at freeze (model labels): "
                "choose another judge or none there before renaming it"
            )
        return name

    def _get_validation_exclusions(self) -> set[str]:
        # The collection is set by the view, not a field: without this Django skips the
        # (collection, name) constraint and a second judge of a name is a 500.
        return super()._get_validation_exclusions() - {"collection"}


@member_view()
def judge_edit(request: HttpRequest, collection: Collection, judge: str = "") -> HttpResponse:
    """Add an OpenAI-compatible judge, or change one (collection admin). The API key is
    never entered here: only the name of the environment variable that holds it."""
    if not may(request.user, collection, Role.ADMIN):
        raise RoleRequired("Configuring judges needs the admin role.", role=Role.ADMIN)
    instance = None
    if judge:
        instance = JudgeConfig.objects.filter(collection=collection, name=judge).first()
        if instance is None:
            raise Http404(f"no configured judge '{judge}' in '{collection.slug}'")
    form = JudgeConfigForm(
        request.POST if request.method == "POST" else None,
        instance=instance,
        collection=collection,
    )
    former_model = instance.model if instance is not None else ""
    # Read before the form is validated: validating writes the posted values into it.
    before = judge_settings(instance) if instance is not None else None
    if request.method == "POST" and form.is_valid():
        saved = configure_judge(
            judge=form.save(commit=False), before=before, by=request.user, request=request
        )
        note = ""
        if former_model and saved.model != former_model:
            note = (
                f" Its model changed from '{former_model}': the proposals '{former_model}' "
                "made are kept, and the next run asks their pairs again."
            )
        messages.success(request, f"Saved judge '{saved.name}'.{note}")
        return redirect("judges:judges", slug=collection.slug)
    return render(
        request,
        "judges/judge_form.html",
        {"collection": collection, "form": form, "judge": instance},
    )


@require_POST
@member_view()
def judge_start(request: HttpRequest, collection: Collection, judge: str) -> HttpResponse:
    """Start a judging job over the pooled unjudged pairs (evaluator)."""
    if not may(request.user, collection, Role.EVALUATOR):
        raise RoleRequired("Starting a judge needs the evaluator role.", role=Role.EVALUATOR)
    config = _judge(collection, judge)
    limit = request.POST.get("limit", "").strip()
    try:
        job = start_proposals(
            collection=collection,
            judge=config.name,
            include_judged=request.POST.get("include_judged") == "on",
            limit=int(limit) if limit.isdigit() and 0 < int(limit) < 10**9 else None,
            by=request.user,
        )
    except JudgeError as exc:
        messages.error(request, f"Not started: {exc}.")
        return redirect("judges:judges", slug=collection.slug)
    return redirect("jobs:job", pk=job.pk)


# Not for a blind collection's plain reviewers (``may_see_labels``): its decisions name
# each reviewer's grade, a judge's grades are labels where the collection takes them (model
# labels), and the review queue hides proposals from blind assessors too.
@require_GET
@member_view(labels=True)
def proposal_list(request: HttpRequest, collection: Collection, judge: str) -> HttpResponse:
    config = _judge(collection, judge)
    rows = (
        proposals_of(collection, config.name)
        .prefetch_related("decisions__user")
        .order_by("-created_at", "-pk")
    )
    page = Paginator(rows, 100).get_page(request.GET.get("page"))
    return render(
        request,
        "judges/proposals.html",
        {
            "collection": collection,
            "judge": config,
            "page": page,
            # Raw answers and the failure reasons quoting them: evaluators and admins.
            "sees_raw": may(request.user, collection, Role.EVALUATOR),
        },
    )


@require_GET
@member_view(labels=True)
def calibration_page(request: HttpRequest, collection: Collection, judge: str) -> HttpResponse:
    config = _judge(collection, judge)
    report = calibration_of(collection, config.name)
    grades = [{"grade": g, "name": collection.grade_name(g)} for g in collection.grades]
    rows = [
        {"grade": g, "counts": counts}
        for g, counts in zip(grades, report["confusion"], strict=True)  # type: ignore[call-overload]
    ]
    return render(
        request,
        "judges/calibration.html",
        {
            "collection": collection,
            "judge": config,
            "report": report,
            "orderings": report["run_orderings"],
            "decisions": report["decisions"],
            "interval": report["interval"] or {},
            "grades": grades,
            "confusion_rows": rows,
        },
    )
