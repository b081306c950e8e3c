"""``{{ url|http_url }}``: an item's address only when a browser may follow it.

Imported items carry any string as ``url``; ``javascript:``, ``data:`` and the like would
run or render content on click, so only ``http`` and ``https`` addresses become links.
Anything else is shown as text by the template.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django import template

register = template.Library()


@register.filter
def http_url(value: object) -> str:
    """``value`` if it is an absolute http(s) URL with a host, else ``""``."""
    if not isinstance(value, str):
        return ""
    text = value.strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        return ""
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return ""
    return text
