"""Standalone scorer: ``python -m scoring QRELS RUN [options]``.

Imports only ``scoring.engine`` (no Django settings, no database); ``--help`` lists options.
"""

import sys
from importlib.abc import MetaPathFinder


class _NoPandas(MetaPathFinder):
    """pyarrow probes for pandas on its first compute call; the scorer never uses pandas,
    and importing it (when installed) adds ~0.4 s to every run. Only this entry point
    makes it look absent: code importing scoring.engine as a library is left alone."""

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if "pandas" not in sys.modules:
    sys.meta_path.insert(0, _NoPandas())

from scoring.engine.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
