"""Create, rotate, revoke or list API tokens.

    manage.py api_token create USERNAME --name NAME [--scope read|judge|admin]
                                        [--collection SLUG] [--days N]
    manage.py api_token rotate PREFIX [--days N]
    manage.py api_token revoke PREFIX
    manage.py api_token revoke-all USERNAME
    manage.py api_token list [USERNAME]

``create`` and ``rotate`` print the key alone on stdout (``KEY=$(manage.py api_token
create ana --name ci)``) and what they did on stderr; the key is not stored, so it is
shown this once. A token is named by its prefix (``vt_xxxxxxxx``), as ``list`` shows it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from judgments.models import ApiToken, Collection, TokenScope
from judgments.services import (
    InvariantError,
    create_api_token,
    revoke_api_token,
    revoke_api_tokens_of,
    rotate_api_token,
)


class Command(BaseCommand):
    help = "Create, rotate, revoke or list API tokens (hashed, scoped, expiring)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="make a token; print its key")
        create.add_argument("username")
        create.add_argument("--name", required=True, help="what the token is for")
        create.add_argument(
            "--scope",
            choices=TokenScope.values,
            default=TokenScope.READ,
            help="read (default), judge or admin; never more than the user's roles",
        )
        create.add_argument("--collection", metavar="SLUG", help="limit it to one collection")
        create.add_argument("--days", type=int, help="lifetime (default VERITY_TOKEN_DAYS)")
        rotate = sub.add_parser("rotate", help="revoke a token and print its replacement's key")
        rotate.add_argument("prefix")
        rotate.add_argument("--days", type=int, help="lifetime (default VERITY_TOKEN_DAYS)")
        revoke = sub.add_parser("revoke", help="revoke one token")
        revoke.add_argument("prefix")
        revoke_all = sub.add_parser("revoke-all", help="revoke every token of a user")
        revoke_all.add_argument("username")
        listing = sub.add_parser("list", help="tokens (prefix, name, scope, expiry, last use)")
        listing.add_argument("username", nargs="?")

    def _user(self, username: str) -> Any:
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
        if user is None:
            raise CommandError(f"no user '{username}'; create it first (createsuperuser, admin)")
        return user

    def _token(self, prefix: str) -> ApiToken:
        found = list(ApiToken.objects.select_related("user", "collection").filter(prefix=prefix))
        if len(found) != 1:
            raise CommandError(
                f"no token with prefix '{prefix}'; 'api_token list' shows them"
                if not found
                else f"{len(found)} tokens have prefix '{prefix}'; revoke them in the admin"
            )
        return found[0]

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            getattr(self, "do_" + action.replace("-", "_"))(options)
        except InvariantError as exc:
            raise CommandError(str(exc)) from None

    def do_create(self, options: dict[str, Any]) -> None:
        user = self._user(options["username"])
        collection = None
        if options["collection"]:
            collection = Collection.objects.filter(slug=options["collection"]).first()
            if collection is None:
                raise CommandError(f"no collection '{options['collection']}'")
        issued = create_api_token(
            user=user,
            name=options["name"],
            scope=options["scope"],
            collection=collection,
            days=options["days"],
        )
        self._issued("created", issued.token)
        self.stdout.write(issued.key)

    def do_rotate(self, options: dict[str, Any]) -> None:
        issued = rotate_api_token(token=self._token(options["prefix"]), days=options["days"])
        self._issued(f"rotated ({options['prefix']}… is revoked)", issued.token)
        self.stdout.write(issued.key)

    def _issued(self, what: str, token: ApiToken) -> None:
        where = f" in '{token.collection.slug}' only" if token.collection else ""
        self.stderr.write(
            f"API token '{token.name}' for '{token.user.get_username()}' {what}: scope "
            f"{token.scope}{where}, expires {token.expires_at:%Y-%m-%d %H:%M} UTC. It is "
            "shown once, here:"
        )

    def do_revoke(self, options: dict[str, Any]) -> None:
        token = self._token(options["prefix"])
        if revoke_api_token(token=token):
            self.stdout.write(f"Revoked {token.prefix}… ('{token.name}' of {token.user}).")
        else:
            self.stdout.write(f"{token.prefix}… was revoked already.")

    def do_revoke_all(self, options: dict[str, Any]) -> None:
        user = self._user(options["username"])
        count = revoke_api_tokens_of(user=user)
        self.stdout.write(f"Revoked {count} token(s) of '{user.get_username()}'.")

    def do_list(self, options: dict[str, Any]) -> None:
        tokens = ApiToken.objects.select_related("user", "collection").order_by(
            "user__username", "-created_at"
        )
        if options["username"]:
            tokens = tokens.filter(user=self._user(options["username"]))
        rows = [
            "\t".join(
                [
                    t.user.get_username(),
                    f"{t.prefix}…",
                    t.name,
                    t.scope,
                    t.collection.slug if t.collection else "all collections",
                    t.state,
                    f"expires {t.expires_at:%Y-%m-%d %H:%M} UTC",
                    f"last used {t.last_used_at:%Y-%m-%d %H:%M} UTC from {t.last_used_ip}"
                    if t.last_used_at
                    else "never used",
                ]
            )
            for t in tokens
        ]
        self.stdout.write("\n".join(rows) if rows else "No API tokens.")
