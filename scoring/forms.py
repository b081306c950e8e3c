"""The evaluator's forms: uploading a run, and scoring one stage of it."""

from __future__ import annotations

from typing import Any

from django import forms

from judgments.models import Collection
from judgments.pool_strategies import Strategy
from judgments.services import InvariantError
from judgments.uploads import within_upload_limit
from verity_eval.params import UNJUDGED_POLICIES, parse_ks
from verity_limits import INT16_MAX, NOTE_MAX

from .models import DedupPolicy, OrderRule, Run, UnitMapping
from .services import check_pool_strategy
from .upload_options import RunImportOptions


class RunUploadForm(RunImportOptions):
    field_order = [
        *("file", "name", "description", "order", "dedup", "pool_depth", "pool_strategy")
    ]  # the box last
    file = forms.FileField(
        label="Run file",
        validators=[within_upload_limit],
        help_text="A TREC run (qid Q0 docid rank score tag), or a multi-stage JSON Lines run "
        '(.jsonl: {"query": …, "stages": {"candidates": […], …}} per line).',
    )
    name = forms.SlugField(
        max_length=100,
        help_text="1 to 100 letters, digits, '-' or '_' (no spaces or dots), unique in the "
        "collection, e.g. bm25-2024-06.",
    )
    description = forms.CharField(required=False, max_length=NOTE_MAX)
    order = forms.ChoiceField(
        choices=[(OrderRule.SCORE, "score, ties by docid (trec_eval)"), (OrderRule.RANK, "rank")],
        initial=OrderRule.SCORE,
        help_text="TREC runs only: how to order each query's lines.",
    )
    dedup = forms.ChoiceField(
        label="Duplicate ids",
        choices=[(DedupPolicy.ERROR, "refuse the file"), (DedupPolicy.FIRST, "keep the first")],
        initial=DedupPolicy.ERROR,
    )
    pool_depth = forms.IntegerField(
        min_value=0,
        max_value=10_000,
        help_text="The first this many items of each query's list that have no judgment "
        "join the review queue (0: none).",
    )

    pool_strategy = forms.CharField(
        label="Pooling strategy",
        required=False,
        max_length=40,
        help_text="The order in which this run's pooled items are served: depth, mtf, bandit, "
        "or 'depth 5 + bandit' (every run's first 5 first). Empty: the collection's.",
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.collection = collection
        self.fields["pool_depth"].initial = collection.pool_depth
        self.fields["pool_strategy"].widget.attrs["placeholder"] = str(
            Strategy(collection.pool_strategy, collection.pool_floor)
        )

    def clean_pool_strategy(self) -> str:
        value = self.cleaned_data["pool_strategy"].strip()
        try:
            check_pool_strategy(self.collection, value)
        except InvariantError as exc:
            raise forms.ValidationError(str(exc)) from None
        return value

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Run.objects.filter(collection=self.collection, name=name).exists():
            raise forms.ValidationError(
                f"This collection has a run named '{name}' already; runs never change, so "
                "pick another name."
            )
        return name


class EvaluationForm(forms.Form):
    """Score one stage of a run against a snapshot: every choice the report names."""

    stage = forms.ChoiceField(label="Run and stage")
    snapshot = forms.TypedChoiceField(coerce=int, help_text="The latest is the default.")
    ks = forms.CharField(
        label="Cutoffs k", initial="5,10", help_text="Comma-separated, e.g. 2 or 5,10,100."
    )
    measures = forms.CharField(
        required=False,
        help_text="Comma-separated, e.g. R,nDCG@10,AP; empty: every measure.",
    )
    rel_level = forms.IntegerField(
        label="Relevance threshold",
        required=False,
        min_value=1,
        max_value=INT16_MAX,
        help_text="The lowest relevant grade; empty: the snapshot's.",
    )
    unjudged = forms.ChoiceField(
        label="Unjudged items",
        choices=[
            ("nonrel", "count as not relevant (trec_eval)"),
            ("judged-only", "judged only: drop them (trec_eval -J)"),
            ("bounds", "bounds: as not relevant and as relevant"),
        ],
        initial="nonrel",
    )
    mapping = forms.TypedChoiceField(
        label="Unit mapping", coerce=int, required=False, empty_value=None
    )

    def __init__(self, *args: Any, collection: Collection, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        assert set(UNJUDGED_POLICIES) == {c for c, _ in self.fields["unjudged"].choices}
        runs = Run.objects.filter(collection=collection).prefetch_related("stages")
        groups = []
        for run in runs.order_by("-created_at", "-pk"):
            stages = sorted(run.stages.all(), key=lambda s: s.position)
            groups.append(
                (run.name, [(f"{run.name}/{s.name}", f"{run.name} / {s.name}") for s in stages])
            )
        self.fields["stage"].choices = groups
        numbers = list(collection.snapshots.order_by("-number").values_list("number", flat=True))
        self.fields["snapshot"].choices = [(n, f"v{n}") for n in numbers]
        if numbers:
            self.fields["snapshot"].initial = numbers[0]
        self.fields["mapping"].choices = [("", "none")] + [
            (m, f"v{m}")
            for m in UnitMapping.objects.filter(collection=collection)
            .order_by("-number")
            .values_list("number", flat=True)
        ]
        self.collection = collection

    def clean_ks(self) -> list[int]:
        try:
            return list(parse_ks(self.cleaned_data["ks"]))
        except Exception as exc:  # argparse's ArgumentTypeError, ValueError
            raise forms.ValidationError(str(exc).replace("--k", "cutoffs")) from None

    def clean_measures(self) -> list[str] | None:
        raw = self.cleaned_data.get("measures") or ""
        return [m.strip() for m in raw.split(",") if m.strip()] or None

    def run_and_stage(self) -> tuple[str, str]:
        run, _, stage = self.cleaned_data["stage"].partition("/")
        return run, stage
