"""Create, rotate, revoke or list API tokens.

    manage.py api_token create USERNAME [--rotate]
    manage.py api_token revoke USERNAME
    manage.py api_token list [USERNAME]

``create`` prints the key alone on stdout (``KEY=$(manage.py api_token create ana)``) and
what it did on stderr; ``list`` shows only each key's first characters.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework.authtoken.models import Token

from judgments.services import InvariantError, create_api_token, revoke_api_token


class Command(BaseCommand):
    help = "Create (or rotate), revoke, or list users' API tokens."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="make a token; print the key")
        create.add_argument("username")
        create.add_argument(
            "--rotate", action="store_true", help="replace the user's token if there is one"
        )
        revoke = sub.add_parser("revoke", help="delete the user's token")
        revoke.add_argument("username")
        listing = sub.add_parser("list", help="users with a token (first 6 characters)")
        listing.add_argument("username", nargs="?")

    def _user(self, username: str) -> Any:
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
        if user is None:
            raise CommandError(f"no user '{username}'; create it first (createsuperuser, admin)")
        return user

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            user = self._user(options["username"])
            if not user.is_active:
                raise CommandError(f"user '{user.get_username()}' is deactivated")
            try:
                token = create_api_token(user=user, rotate=options["rotate"])
            except InvariantError as exc:
                raise CommandError(f"{exc} (--rotate)") from None
            self.stderr.write(
                f"API token for '{user.get_username()}' "
                + ("rotated" if options["rotate"] else "created")
                + "; it is shown once, here:"
            )
            self.stdout.write(token.key)
        elif action == "revoke":
            user = self._user(options["username"])
            if revoke_api_token(user=user):
                self.stdout.write(f"Revoked the API token of '{user.get_username()}'.")
            else:
                self.stdout.write(f"'{user.get_username()}' had no API token.")
        else:
            tokens = Token.objects.select_related("user").order_by("user__username")
            if options["username"]:
                tokens = tokens.filter(user=self._user(options["username"]))
            rows = [
                f"{t.user.get_username()}\t{t.key[:6]}…\tcreated {t.created:%Y-%m-%d %H:%M} UTC"
                for t in tokens
            ]
            self.stdout.write("\n".join(rows) if rows else "No API tokens.")
