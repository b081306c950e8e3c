"""Forms of the pages that set a collection up: a new collection, its settings, its
members. They parse and type the input; the services (``create_collection``,
``update_collection_settings``, ``set_member_access``) judge it, so the pages and the API
refuse the same things with the same messages."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q

from verity_limits import GRADE_MAX

from .models import Collection, LabelingUnit, Role
from .pool_strategies import DEPTH, STRATEGIES
from .resolution import POLICIES
from .services import RESERVED_SLUGS, InvariantError, validate_scale
from .uploads import within_upload_limit

NAME_MAX = 200
TEXT_MAX = 100_000
ASSESSORS_MAX = 20
DISTANCE_MAX = 100
_SCALE_LINE = re.compile(r"\s*(\d{1,6})\s*[:=.]?\s*(\S.*?)\s*")

POLICY_HELP = {
    "single": "the first assessment's grade",
    "majority": "the most common grade; a tie goes to adjudication",
    "median": "the lower median of the grades",
    "min-of-agreeing": "the lowest grade when the grades are at most the adjudicate "
    "distance apart, else adjudication",
    "adjudicate": "the lower median when the grades are at most the adjudicate distance "
    "apart, else adjudication",
}

STRATEGY_HELP = {
    "depth": "every run to the pool depth, the pairs most runs surfaced first",
    "mtf": "move-to-front: the runs finding relevant items are served first",
    "bandit": "MaxMean: the runs with the best share of relevant items so far first",
}


def parse_scale(text: str) -> list[dict[str, Any]]:
    """``"0 not relevant\\n1 relevant"`` (one grade per line: the grade, then its name;
    ``:`` or ``=`` between them also do) → scale entries; raises ValidationError naming the
    line."""
    scale = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _SCALE_LINE.fullmatch(line)
        if match is None:
            raise forms.ValidationError(
                f"line {number}: {line.strip()[:60]!r} must be a grade from 0 to {GRADE_MAX} "
                "and its name, e.g. '2 highly relevant'"
            )
        scale.append({"grade": int(match.group(1)), "name": match.group(2)})
    if not scale:
        raise forms.ValidationError("give at least two grades, one per line, e.g. '0 not relevant'")
    return scale


def scale_text(scale: list[dict[str, Any]]) -> str:
    return "\n".join(f"{e['grade']} {e['name']}" for e in scale)


class ReviewSettingsMixin(forms.Form):
    assessors_per_item = forms.IntegerField(
        min_value=1,
        max_value=ASSESSORS_MAX,
        initial=1,
        label="Assessors per item",
        help_text="How many different reviewers label each pooled pair, blind, before its "
        "label is resolved. 1: one judgment per pair.",
    )
    resolution_policy = forms.ChoiceField(
        choices=[(p, f"{p}: {POLICY_HELP.get(p, p)}") for p in POLICIES],
        initial=POLICIES[0],
        label="Resolution policy",
        help_text="How several assessments of a pair become its label.",
    )
    adjudicate_distance = forms.IntegerField(
        min_value=0,
        max_value=DISTANCE_MAX,
        initial=1,
        label="Adjudicate distance",
        help_text="The largest grade spread min-of-agreeing and adjudicate resolve without an "
        "adjudicator (0: unanimous only).",
    )


class NewCollectionForm(ReviewSettingsMixin):
    """A new collection: what it is, its scale (fixed from now on), its review settings,
    and optionally the files it starts from."""

    name = forms.CharField(max_length=NAME_MAX, help_text="Shown on every page and report.")
    slug = forms.SlugField(
        max_length=100,
        help_text="Its name in URLs and the API: letters, digits, '-' and '_'; fixed once made.",
    )
    unit = forms.ChoiceField(
        choices=LabelingUnit.choices,
        initial=LabelingUnit.DOCUMENT,
        label="Labeling unit",
        help_text="What reviewers label: whole documents, chunks or evidence points.",
    )
    scale = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5, "cols": 40, "spellcheck": "false"}),
        initial="0 not relevant\n1 relevant",
        label="Scale",
        help_text="One grade per line, lowest first: the grade (0, 1, 2 …), a space, its name. "
        "Fixed once the collection is made: every label means a grade on it.",
    )
    relevant_grade = forms.IntegerField(
        min_value=0,
        max_value=GRADE_MAX,
        initial=1,
        label="Relevant from grade",
        help_text="The lowest grade that counts as relevant (TREC DL uses 2).",
    )
    pool_depth = forms.IntegerField(
        min_value=1,
        max_value=100_000,
        initial=10,
        label="Pool depth",
        help_text="Runs queue their unjudged items down to this rank.",
    )
    description = forms.CharField(
        required=False,
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Corpus boundary",
        help_text="What is in the corpus and what is out, as of when.",
    )
    guidelines = forms.CharField(
        required=False,
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="Markdown, shown to reviewers beside each task (raw HTML is shown as text).",
    )
    start = forms.ChoiceField(
        choices=[
            ("", "nothing: an empty collection"),
            ("trec", "TREC files: qrels and topics (and documents)"),
            ("bundle", "a JSONL bundle"),
        ],
        required=False,
        widget=forms.RadioSelect,
        label="Start from",
        initial="",
    )
    qrels = forms.FileField(
        required=False,
        validators=[within_upload_limit],
        label="TREC qrels",
        help_text="qid 0 docid grade per line (grade -1: pooled but unjudged, queued for review).",
    )
    topics = forms.FileField(
        required=False,
        validators=[within_upload_limit],
        label="TREC topics",
        help_text="qid, a tab or a space, the query's text, per line.",
    )
    docs = forms.FileField(
        required=False,
        validators=[within_upload_limit],
        label="Documents (optional)",
        help_text="TSV (id, tab, text; or id, title, text) or JSON Lines "
        '({"id": …, "text": …}); only the documents the qrels name are kept.',
    )
    bundle = forms.FileField(
        required=False,
        validators=[within_upload_limit],
        label="JSONL bundle",
        help_text="Items, queries, judgments, statuses and unjudged pairs, one JSON object a "
        "line (export_collection writes one); its collection line must have the unit, scale "
        "and relevant grade above, and, with several assessors per item, the review settings "
        "above too. Its other settings (whole corpus, pooling) come with it.",
    )
    create_missing_items = forms.BooleanField(
        required=False,
        label="Items it names without an item line become placeholders",
        help_text="Otherwise such a judgment is refused, with its line.",
    )
    set_status = forms.BooleanField(
        required=False,
        label="Mark queries with a relevant judgment relevant",
        help_text="Otherwise they stay unreviewed, unless the bundle gives their status.",
    )

    field_order = [
        "name",
        "slug",
        "unit",
        "scale",
        "relevant_grade",
        "description",
        "guidelines",
        "pool_depth",
        "assessors_per_item",
        "resolution_policy",
        "adjudicate_distance",
        "start",
        "qrels",
        "topics",
        "docs",
        "bundle",
        "create_missing_items",
        "set_status",
    ]

    def clean_slug(self) -> str:
        slug = self.cleaned_data["slug"]
        if slug in RESERVED_SLUGS:
            raise forms.ValidationError(f"'{slug}' names a page of Verity; choose another")
        if Collection.objects.filter(slug=slug).exists():
            raise forms.ValidationError(f"a collection '{slug}' exists already; choose another")
        return slug

    def clean_scale(self) -> list[dict[str, Any]]:
        return parse_scale(self.cleaned_data["scale"])

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if "scale" in data and "relevant_grade" in data:
            try:
                data["scale"] = validate_scale(data["scale"], data["relevant_grade"])
            except InvariantError as e:
                self.add_error("scale", str(e))
        start = data.get("start", "")
        needed = {"trec": ("qrels", "topics"), "bundle": ("bundle",)}.get(start, ())
        for name in needed:
            if not data.get(name):
                self.add_error(name, f"choose the {self.fields[name].label} file, or start "
                               "from something else")  # fmt: skip
        return data

    def uploads(self) -> dict[str, Any]:
        return {k: self.cleaned_data[k] for k in ("qrels", "topics", "docs", "bundle")
                if self.cleaned_data.get(k)}  # fmt: skip


class SettingsForm(ReviewSettingsMixin):
    """Every setting of ``update_collection_settings``; ``based_on`` is the history row
    the preview was computed against, so a change made meanwhile is shown before applying."""

    name = forms.CharField(max_length=NAME_MAX)
    description = forms.CharField(
        required=False,
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Corpus boundary",
    )
    guidelines = forms.CharField(
        required=False,
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text="Markdown (raw HTML is shown as text).",
    )
    pool_depth = forms.IntegerField(
        min_value=1,
        max_value=100_000,
        label="Pool depth",
        help_text="Runs imported from now on queue their unjudged items down to this rank.",
    )
    holds_whole_corpus = forms.BooleanField(
        required=False,
        label="Holds the whole corpus",
        help_text="Every item is imported: a run naming an item the collection lacks is "
        "refused instead of making a placeholder to judge.",
    )
    pool_strategy = forms.ChoiceField(
        choices=[(s, f"{s}: {STRATEGY_HELP[s]}") for s in STRATEGIES],
        label="Pooling strategy",
        help_text="The order in which a query's pooled pairs are served, for runs imported "
        "from now on (docs/POOLING.md).",
    )
    pool_floor = forms.IntegerField(
        min_value=0,
        max_value=10_000,
        label="Depth floor",
        help_text="With mtf or bandit: every run's first K pooled items are served before "
        "any adaptive choice (0: none). Back to depth, it goes back to 0.",
    )
    model_labels = forms.ChoiceField(
        required=False,
        label="Model labels",
        help_text="A judge whose proposals label, at freeze, the pairs no person judged or "
        "assessed; none by default.",
    )
    based_on = forms.IntegerField(required=False, widget=forms.HiddenInput, min_value=0)

    field_order = [
        "name",
        "description",
        "guidelines",
        "pool_depth",
        "holds_whole_corpus",
        "pool_strategy",
        "pool_floor",
        "assessors_per_item",
        "resolution_policy",
        "adjudicate_distance",
        "model_labels",
    ]

    def __init__(self, *args: Any, judges: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("", "none: no model-made label enters a snapshot")]
        choices += [(name, f"judge {name}") for name in judges]
        self.fields["model_labels"].choices = choices

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("pool_strategy") == DEPTH:
            # As the service does: the floor goes with an adaptive strategy, so the
            # preview shows it going back to 0 instead of a refusal.
            data["pool_floor"] = 0
        return data

    def changes(self) -> dict[str, Any]:
        return {k: v for k, v in self.cleaned_data.items() if k != "based_on"}


def find_user(identifier: str) -> Any:
    """The active user whose username is ``identifier``, or whose e-mail address it is
    (case-insensitive; refused when several accounts share it)."""
    User = get_user_model()
    found = list(
        User.objects.filter(
            Q(**{User.USERNAME_FIELD: identifier}) | Q(email__iexact=identifier) & ~Q(email="")
        )[:3]
    )
    exact = [u for u in found if u.get_username() == identifier]
    if exact:
        found = exact
    if not found:
        raise forms.ValidationError(
            f"no account has the username or e-mail address '{identifier}'; the account "
            "must exist before it can join"
        )
    if len(found) > 1:
        raise forms.ValidationError(
            f"several accounts have the e-mail address '{identifier}'; give the username"
        )
    if not found[0].is_active:
        raise forms.ValidationError(f"the account '{found[0].get_username()}' is deactivated")
    return found[0]


class MemberAddForm(forms.Form):
    user = forms.CharField(
        max_length=254,
        label="Username or e-mail address",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.REVIEWER)
    can_adjudicate = forms.BooleanField(
        required=False,
        label="May adjudicate",
        help_text="Decides the pairs whose assessors disagree (admins always may).",
    )

    def clean_user(self) -> Any:
        return find_user(self.cleaned_data["user"].strip())


class MemberChangeForm(forms.Form):
    """One member's row: ``action`` save (role and adjudication) or remove."""

    username = forms.CharField(max_length=150)
    action = forms.ChoiceField(choices=[("save", "save"), ("remove", "remove")])
    role = forms.ChoiceField(choices=Role.choices, required=False)
    can_adjudicate = forms.BooleanField(required=False)
