#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from config.startup import pause_gc

    pause_gc()  # until the URL configuration has loaded (config/startup.py)
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except BrokenPipeError:
        # The reader went away (`manage.py export_qrels … | head`): end quietly, as Unix
        # tools do, with the status of a process ended by SIGPIPE. stdout goes to
        # /dev/null first, or the interpreter's last flush would raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)


if __name__ == "__main__":
    main()
