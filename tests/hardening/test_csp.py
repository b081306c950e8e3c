"""The Content-Security-Policy (issue 10, item 11): script and style from this origin
only, on every page, and no template that needs inline script or style.

The browser tests (tests/browser) fail on any CSP violation Chromium reports, so the
pages are also checked as they run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
INLINE = [
    (
        re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/(?:ld\+)?json)[^>]*>", re.I),
        "inline <script>",
    ),
    (re.compile(r"<style\b", re.I), "<style> element"),
    (re.compile(r"\sstyle\s*=", re.I), "style= attribute"),
    (re.compile(r"\son[a-z]+\s*=", re.I), "on…= handler"),
    (re.compile(r"javascript:", re.I), "javascript: URL"),
]


def _directives(header: str) -> dict[str, list[str]]:
    out = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            out[words[0]] = words[1:]
    return out


@pytest.mark.parametrize(
    "path", sorted(p.relative_to(TEMPLATES) for p in TEMPLATES.rglob("*.html"))
)
def test_no_template_holds_inline_script_or_style(path):
    text = (TEMPLATES / path).read_text(encoding="utf-8")
    text = re.sub(r"\{#.*?#\}", "", text, flags=re.S)  # comments may name what they avoid
    found = [what for pattern, what in INLINE if pattern.search(text)]
    assert not found, f"templates/{path}: {', '.join(found)}"


@pytest.mark.parametrize(
    "url",
    ["/accounts/login/", "/", "/api/docs/", "/api/docs/?script", "/api/schema/", "/healthz"],
)
def test_every_response_carries_a_policy_without_inline_script(db, client, url):
    client.force_login(get_user_model().objects.create_user("csp"))
    response = client.get(url)
    assert response.status_code == 200
    policy = _directives(response["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]


def test_swagger_ui_takes_its_script_and_style_from_files(db, client):
    html = client.get("/api/docs/").content.decode()
    assert "<style" not in html
    assert re.search(r'<script src="/api/docs/\?[^"]*script', html)
    assert "<script>" not in html


def test_only_redoc_allows_inline_styles_and_still_no_inline_script(db, client):
    response = client.get("/api/redoc/")
    policy = _directives(response["Content-Security-Policy"])
    assert policy["script-src"] == ["'self'"]
    assert "'unsafe-inline'" in policy["style-src"]
    assert "<script>" not in response.content.decode()
