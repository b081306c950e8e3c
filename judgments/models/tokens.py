"""API tokens: named, scoped, expiring keys whose secret is never stored.

A key is ``vt_<prefix>_<secret>``: 8 random characters that identify it on the tokens
page and 43 (256 random bits) that are the secret. Only the prefix and the SHA-256 of
the whole key are stored. A slow password hash (PBKDF2, Argon2) protects guessable
passwords; a 256-bit random secret cannot be guessed, so one SHA-256 is enough and keeps
every API request to one indexed lookup.
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class TokenScope(models.TextChoices):
    """What a token may do, on top of (never beyond) its user's roles."""

    READ = "read", "read: GET anything the roles allow (qrels, snapshots, reports)"
    JUDGE = "judge", "judge: read, plus review tasks, judgments and query statuses"
    ADMIN = "admin", "admin: everything the user's roles allow"


SCOPE_RANK = {TokenScope.READ: 1, TokenScope.JUDGE: 2, TokenScope.ADMIN: 3}


def scope_allows(held: str, needed: str) -> bool:
    return SCOPE_RANK[TokenScope(held)] >= SCOPE_RANK[TokenScope(needed)]


def hash_key(key: str) -> str:
    """The stored form of a key: its SHA-256, in hexadecimal."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def live(self) -> ApiTokenQuerySet:
        """Neither revoked nor expired."""
        return self.filter(revoked_at__isnull=True, expires_at__gt=timezone.now())


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(
        max_length=100, help_text="What the token is for, e.g. 'nightly export'."
    )
    prefix = models.CharField(
        max_length=12, help_text="The key's first characters, to recognise it; not secret."
    )
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key.")
    scope = models.CharField(max_length=8, choices=TokenScope.choices)
    collection = models.ForeignKey(
        "judgments.Collection",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="api_tokens",
        help_text="If set, the token works in this collection only.",
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_used_ip = models.GenericIPAddressField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scope__in=["read", "judge", "admin"]), name="apitoken_scope_known"
            ),
            models.CheckConstraint(
                condition=Q(expires_at__gt=models.F("created_at")),
                name="apitoken_expires_after_creation",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…, {self.scope})"

    @property
    def is_expired(self) -> bool:
        return self.expires_at <= timezone.now()

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.is_expired else "active"
