"""``{{ n|counted:"query" }}`` → "1 query" / "3 queries", and ``{{ n|plural:"query" }}``
→ the noun alone: ``judgments.wording``'s rule in templates (a builtin: no ``load``)."""

from __future__ import annotations

from django import template

from ..wording import counted as _counted
from ..wording import noun_for

register = template.Library()


def _number(value: object) -> int | float:
    if isinstance(value, int | float):
        return value
    try:
        return len(value)  # type: ignore[arg-type]
    except TypeError:
        return int(str(value).replace(",", ""))


@register.filter
def counted(value: object, noun: str) -> str:
    """The count and its noun; a list counts its length."""
    return _counted(_number(value), noun)


@register.filter
def plural(value: object, noun: str) -> str:
    """The noun alone, singular for one (``{{ n }} <b>{{ n|plural:"item" }}</b>``)."""
    return noun_for(_number(value), noun)
