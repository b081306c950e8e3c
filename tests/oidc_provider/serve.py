"""``python -m tests.oidc_provider.serve PORT``: migrate a fresh database, register the
client, and serve on 127.0.0.1:PORT (the environment comes from ``harness``)."""

import os
import sys


def main() -> None:
    port = sys.argv[1]
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"
    import django

    django.setup()
    from django.core.management import call_command

    from .provider import ensure_client

    call_command("migrate", verbosity=0, interactive=False)
    ensure_client()
    call_command("runserver", f"127.0.0.1:{port}", use_reloader=False, skip_checks=True)


if __name__ == "__main__":
    main()
