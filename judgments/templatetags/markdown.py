"""``{{ text|markdown }}``: a collection's guidelines as Markdown, rendered safely.

CommonMark with raw HTML disabled (``<script>`` stays text) and markdown-it's link check
(``javascript:``, ``vbscript:``, ``file:`` and non-image ``data:`` links are not made
links); single line breaks are kept, as guidelines written as plain text expect.
"""

from __future__ import annotations

from functools import lru_cache

from django import template
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

register = template.Library()


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False}).enable(
        "table"
    )


def render_markdown(text: str) -> SafeString:
    return mark_safe(_renderer().render(text or ""))


@register.filter(name="markdown")
def markdown_filter(value: object) -> SafeString:
    return render_markdown(str(value or ""))
