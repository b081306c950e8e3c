"""Forms of the reviewer's pages: they parse and type the input, the services judge it.

Grades are only checked to be integers here; whether a grade is on the collection's
scale, and whether a status fits the judgments, is the services' call, so the browser
and the API refuse the same things with the same messages.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms

from verity_limits import ID_MAX, INT16_MAX, INT32_MAX, NOTE_MAX, TAG_MAX

from .models import ChangeSource, QueryStatus

NOTE_MAX_LENGTH = NOTE_MAX
SEARCH_MAX_LENGTH = 200


class QueueJudgeForm(forms.Form):
    """A grade for the review task on screen; ``expected_version`` only when the reviewer
    chose "apply mine anyway" over a judgment someone else recorded first."""

    task = forms.IntegerField(min_value=1, max_value=INT32_MAX)
    grade = forms.IntegerField(min_value=0, max_value=INT16_MAX)
    note = forms.CharField(required=False, max_length=NOTE_MAX_LENGTH, strip=True)
    expected_version = forms.IntegerField(required=False, min_value=1, max_value=INT32_MAX)
    # several assessors per item: the reviewer's own assessment being changed (after ``u``)
    assessment = forms.IntegerField(required=False, min_value=1, max_value=INT32_MAX)


class OwnAssessmentForm(forms.Form):
    """A change of one's own assessment on the query page (several assessors per item)."""

    assessment = forms.IntegerField(min_value=1, max_value=INT32_MAX)
    grade = forms.IntegerField(min_value=0, max_value=INT16_MAX)
    note = forms.CharField(required=False, max_length=NOTE_MAX_LENGTH, strip=True)
    expected_version = forms.IntegerField(min_value=1, max_value=INT32_MAX)


class QueueTaskForm(forms.Form):
    task = forms.IntegerField(min_value=1, max_value=INT32_MAX)


class QueueStatusForm(forms.Form):
    """The review status chosen for the query the queue just finished."""

    query = forms.CharField(max_length=ID_MAX, strip=False)
    status = forms.ChoiceField(choices=QueryStatus.choices)


class BulkStatusForm(forms.Form):
    """The bulk status action: the new status, for the queries that the collection page's
    filters (``status``, ``tag``) show."""

    new_status = forms.ChoiceField(choices=QueryStatus.choices)
    status = forms.CharField(required=False, max_length=16)
    tag = forms.CharField(required=False, max_length=TAG_MAX)


class GradeForm(forms.Form):
    """A grade for one item of the query page. ``expected_version`` is the version the
    page showed (empty for an unjudged item): the edit is refused if it is stale."""

    item = forms.CharField(max_length=ID_MAX, strip=False)
    grade = forms.IntegerField(min_value=0, max_value=INT16_MAX)
    note = forms.CharField(required=False, max_length=NOTE_MAX_LENGTH, strip=True)
    expected_version = forms.IntegerField(required=False, min_value=1, max_value=INT32_MAX)
    # "search" when the item was found by searching the collection: the history says so.
    source = forms.ChoiceField(
        required=False, choices=[("", "page"), (ChangeSource.SEARCH, "search")]
    )
    search = forms.CharField(required=False, max_length=SEARCH_MAX_LENGTH)  # to return to


class StatusForm(forms.Form):
    status = forms.ChoiceField(choices=QueryStatus.choices)


_SEPARATORS = re.compile(r"[\s,]+")


def parse_evidence(text: str) -> list[list[str]] | None:
    """One AND-group per line, item ids separated by spaces or commas; blank lines are
    skipped. No group at all means "no evidence condition" (``None``)."""
    groups = [[i for i in _SEPARATORS.split(line.strip()) if i] for line in text.splitlines()]
    groups = [g for g in groups if g]
    return groups or None


def format_evidence(groups: list[list[str]] | None) -> str:
    """The inverse of ``parse_evidence``: one group per line, ids separated by spaces."""
    return "\n".join(" ".join(g) for g in groups or ())


class EvidenceForm(forms.Form):
    groups = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="One group per line; item ids separated by spaces or commas. "
        "Leave empty to remove the condition.",
    )

    def clean_groups(self) -> Any:
        return parse_evidence(self.cleaned_data.get("groups") or "")
