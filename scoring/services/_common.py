"""Small pieces shared by the scoring service modules."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

User = AbstractBaseUser
BATCH = 1000
