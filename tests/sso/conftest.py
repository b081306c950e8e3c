"""Single sign-on against the real provider of tests/oidc_provider (session-scoped, in
tests/conftest.py): ``sso`` points Verity's settings at it, fresh for each test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from judgments.sso.config import forget_provider_metadata

PASSWORD = "provider password 1"
CALLBACK = "http://testserver/oidc/callback/"


@pytest.fixture
def sso(settings, oidc_provider) -> Iterator[Any]:
    oidc_provider.reset()
    oidc_provider.allow_redirect_uri(CALLBACK)
    for name, value in oidc_provider.verity_settings().items():
        setattr(settings, name, value)
    forget_provider_metadata()
    yield oidc_provider
    forget_provider_metadata()


def start(client: Any, next_url: str = "") -> str:
    """Verity's start of a sign-in: the provider's authorization URL it redirects to."""
    response = client.get("/oidc/login/" + (f"?next={next_url}" if next_url else ""))
    assert response.status_code == 302, response.content
    return response["Location"]


def callback_path(url: str) -> str:
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == CALLBACK, url
    return f"{parts.path}?{parts.query}"
