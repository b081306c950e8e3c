"""``{{ text|markdown }}``: a collection's guidelines as Markdown, rendered safely.

CommonMark with raw HTML disabled (``<script>`` stays text) and markdown-it's link check
(``javascript:``, ``vbscript:``, ``file:`` and non-image ``data:`` links are not made
links); single line breaks are kept, as guidelines written as plain text expect.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from django import template
from django.utils.safestring import SafeString, mark_safe

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

register = template.Library()


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    # Imported on the first page that renders Markdown: Django's template checks import
    # every tag library at start-up, and markdown-it is ~60 modules (~15 ms).
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False}).enable(
        "table"
    )


def render_markdown(text: str) -> SafeString:
    return mark_safe(_renderer().render(text or ""))


@register.filter(name="markdown")
def markdown_filter(value: object) -> SafeString:
    return render_markdown(str(value or ""))
