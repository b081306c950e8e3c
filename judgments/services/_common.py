"""Small pieces shared by the service modules."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

User = AbstractBaseUser
