"""The job tests use the founding example as the scoring tests do."""

from tests.scoring.conftest import (  # noqa: F401  (fixtures, requested by name)
    recall_example,
    recall_v1,
    row_counts,
    run_command,
)
