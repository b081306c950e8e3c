"""Standalone scorer: ``python -m scoring QRELS RUN [options]``, the same as the
``verity-eval`` command that ``pip install .`` provides.

Imports only ``scoring.engine`` (no Django settings, no database); ``--help`` lists options.
"""

from scoring.engine.cli import main

if __name__ == "__main__":
    main()
