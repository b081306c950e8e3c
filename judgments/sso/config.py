"""What single sign-on is configured to do: the provider's metadata and the group mapping.

The settings (config/settings.py, docs/DEPLOY.md "Single sign-on") name the issuer; its
endpoints and keys come from the issuer's discovery document, fetched on the first
sign-in and kept for ``METADATA_TTL`` seconds, so that a provider down when Verity starts
does not stop it from starting, and a provider that moves an endpoint is followed.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from judgments.models import Role

from .errors import SignInRefused

METADATA_TTL = 3600.0
_SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")


def sso_enabled() -> bool:
    return bool(settings.VERITY_OIDC_ISSUER)


def local_login_enabled() -> bool:
    return bool(settings.VERITY_LOCAL_LOGIN) or not sso_enabled()


@dataclass(frozen=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str


_metadata: dict[str, tuple[float, ProviderMetadata]] = {}
_metadata_lock = threading.Lock()


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


def provider_metadata() -> ProviderMetadata:
    """The configured issuer's endpoints, from its discovery document (cached)."""
    issuer = settings.VERITY_OIDC_ISSUER
    now = time.monotonic()
    with _metadata_lock:
        cached = _metadata.get(issuer)
        if cached is not None and now - cached[0] < METADATA_TTL:
            return cached[1]
    import requests  # ~70 ms: on the first sign-in, not in every process's start-up

    url = discovery_url(issuer)
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise SignInRefused(
            "provider_unreachable",
            f"Verity could not read the identity provider's configuration at {url} ({exc}). "
            "Try again in a minute; if it persists, tell an administrator of this Verity "
            "(VERITY_OIDC_ISSUER may be wrong).",
            status=502,
        ) from exc
    try:
        metadata = ProviderMetadata(
            issuer=str(document["issuer"]),
            authorization_endpoint=str(document["authorization_endpoint"]),
            token_endpoint=str(document["token_endpoint"]),
            userinfo_endpoint=str(document["userinfo_endpoint"]),
            jwks_uri=str(document["jwks_uri"]),
        )
    except (KeyError, TypeError) as exc:
        raise SignInRefused(
            "provider_misconfigured",
            f"The identity provider's configuration at {url} lacks {exc}; tell an "
            "administrator of this Verity.",
            status=502,
        ) from exc
    # OpenID Connect Discovery 1.0, section 4.3: the document's issuer is the one asked for.
    if metadata.issuer.rstrip("/") != issuer.rstrip("/"):
        raise SignInRefused(
            "provider_misconfigured",
            f"The identity provider at {url} calls itself '{metadata.issuer}', not "
            f"'{issuer}'; tell an administrator of this Verity to set VERITY_OIDC_ISSUER "
            "to the provider's issuer.",
            status=502,
        )
    with _metadata_lock:
        _metadata[issuer] = (now, metadata)
    return metadata


def forget_provider_metadata() -> None:
    """Drop the cached discovery documents (tests; a provider that changed keys)."""
    with _metadata_lock:
        _metadata.clear()


@dataclass(frozen=True)
class GroupRole:
    group: str
    collection_slug: str
    role: str


def group_roles(value: str | None = None) -> list[GroupRole]:
    """``VERITY_OIDC_GROUP_ROLES`` parsed: ``group=collection-slug:role`` pairs.

    Pairs are separated by commas, or by ";" or new lines when the value holds either
    (group names with commas: LDAP DNs). The group is everything before the last "=".
    """
    value = settings.VERITY_OIDC_GROUP_ROLES if value is None else value
    separators = r"[;\n]" if re.search(r"[;\n]", value) else ","
    mapping = []
    for entry in re.split(separators, value):
        entry = entry.strip()
        if not entry:
            continue
        group, equals, target = entry.rpartition("=")
        slug, colon, role = target.partition(":")
        group, slug, role = group.strip(), slug.strip(), role.strip()
        if not equals or not group or not colon or not _SLUG.match(slug):
            raise ImproperlyConfigured(
                f"VERITY_OIDC_GROUP_ROLES: {entry!r} is not 'idp-group=collection-slug:role' "
                "(e.g. 'search-team=web-search:evaluator')."
            )
        if role not in Role.values:
            raise ImproperlyConfigured(
                f"VERITY_OIDC_GROUP_ROLES: {entry!r} names the role {role!r}; use one of "
                f"{', '.join(Role.values)}."
            )
        mapping.append(GroupRole(group=group, collection_slug=slug, role=role))
    return mapping
