"""Options of the run upload form that the import service defines (its page builds on it).

``RunImportOptions`` holds the "skip lines of unknown queries" checkbox: by default a run
line whose query the collection lacks refuses the file, so the box must be ticked on
purpose. An upload form inherits it and passes ``ignore_unknown_queries`` on to
``import_run``.
"""

from __future__ import annotations

from django import forms


class RunImportOptions(forms.Form):
    ignore_unknown_queries = forms.BooleanField(
        required=False,
        label="Skip the lines of queries this collection lacks",
        help_text="By default such lines refuse the whole file, with their line numbers: a "
        "run made for another collection is caught. Ticked, the run is stored without "
        "them, and the answer counts them.",
    )
