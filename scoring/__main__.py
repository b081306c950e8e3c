"""Standalone scorer: ``python -m scoring QRELS RUN [options]``, the same as the
``verity-eval`` command that ``pip install ./scorer`` provides.

Imports only ``verity_eval`` (no Django settings, no database); ``--help`` lists options.
"""

import os

# The scorer does no linear algebra. Left to itself, numpy's OpenBLAS starts a worker
# thread per extra core that spins for ~0.1 s of CPU at import, on a core pyarrow's CSV
# reader is about to use. Set before numpy is imported; a value already set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from verity_eval.cli import main  # after the environment is set

if __name__ == "__main__":
    main()
