"""``{{ field|described }}``: a form field's widget whose ``aria-describedby`` names the
ids the page really has: its help text (``<id>_helptext``) and each of its errors
(``<id>_error1`` …), as ``templates/_field.html`` renders them (a builtin: no ``load``).

Django adds ``aria-describedby="<id>_helptext"`` by itself, also where a template shows
the help under another id or not at all; and it never points at the errors."""

from __future__ import annotations

from django import template
from django.forms.boundfield import BoundField
from django.utils.safestring import SafeString

register = template.Library()


def described_by(field: BoundField) -> list[str]:
    """The ids ``_field.html`` gives the field's help text and errors."""
    ids = [f"{field.auto_id}_helptext"] if field.help_text else []
    ids += [f"{field.auto_id}_error{n}" for n in range(1, len(field.errors) + 1)]
    return ids


@register.filter
def described(field: BoundField) -> SafeString:
    ids = described_by(field)
    attrs = {"aria-describedby": " ".join(ids)} if ids else {}
    if field.errors:
        attrs["aria-invalid"] = "true"
    return field.as_widget(attrs=attrs)
