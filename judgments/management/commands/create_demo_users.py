"""Create the demo logins, or reset them: admin/admin, reviewer/reviewer, evaluator/evaluator.

    manage.py create_demo_users

Each password equals its username, which would be an open door on any real server, so
the command refuses to run unless ``settings.DEBUG`` is on. Running it again resets the
three passwords and flags (``admin`` is superuser and staff, the others neither); other
users are left alone.
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

# (username, superuser and staff); each password is the username.
DEMO_USERS = (("admin", True), ("reviewer", False), ("evaluator", False))


def site_url() -> str:
    """Where ``make run`` serves the demo: its HOST and PORT (the Makefile passes them on;
    ``make run PORT=8101`` must not print 8000)."""
    host = os.environ.get("HOST") or "127.0.0.1"
    port = os.environ.get("PORT") or "8000"
    return f"http://{host}:{port}/"


def demo_logins_text() -> str:
    logins = "\n".join(f"  {name} / {name}" for name, _ in DEMO_USERS)
    return (
        f"Demo logins at {site_url()} (DEMO ONLY: each password is the username; never "
        f"create these users on a server others can reach):\n{logins}"
    )


class Command(BaseCommand):
    help = (
        "Create or reset the demo users admin/admin, reviewer/reviewer and "
        "evaluator/evaluator. Refuses unless DEBUG is on."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG:
            raise CommandError(
                "refusing to create demo users: DEBUG is off, and passwords equal to "
                "usernames must never exist on a real server. Run this only on a "
                "development machine (DEBUG=1), or create real users with createsuperuser."
            )
        User = get_user_model()
        done = []
        with transaction.atomic():
            for username, is_admin in DEMO_USERS:
                user, created = User.objects.get_or_create(**{User.USERNAME_FIELD: username})
                user.set_password(username)
                user.is_active = True
                user.is_staff = is_admin
                user.is_superuser = is_admin
                user.save()
                done.append(f"{username} ({'created' if created else 'password reset'})")
        self.stdout.write("Demo users: " + ", ".join(done) + ".")
        self.stdout.write(self.style.WARNING(demo_logins_text()))
