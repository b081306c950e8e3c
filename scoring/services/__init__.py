"""State changes for runs, unit mappings and evaluations; each owns its transaction.

Scoring reads only frozen data: a snapshot's rows and a stored run. There is no way to
score against live judgments, so a stored evaluation never changes meaning.

One module per concept; this package re-exports the public names, so callers import
them from ``scoring.services``.
"""

from ._common import file_sha256
from .errors import RunImportError
from .evaluations import (
    SnapshotInputs,
    StageLists,
    canonical_params,
    score_run_stage,
    snapshot_inputs,
)
from .exports import record_report_export
from .mappings import import_unit_mapping
from .runs import RunImportReport, check_pool_strategy, import_run

__all__ = [
    "RunImportError",
    "RunImportReport",
    "SnapshotInputs",
    "StageLists",
    "canonical_params",
    "check_pool_strategy",
    "file_sha256",
    "import_run",
    "import_unit_mapping",
    "record_report_export",
    "score_run_stage",
    "snapshot_inputs",
]
