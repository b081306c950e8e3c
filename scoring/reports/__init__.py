"""Reports built from stored evaluations: the evaluation report, stage diagnosis, paired
comparison, and their CSV form.

Everything here reads (through ``selectors``) and computes, and never writes: scoring
the stages a diagnosis lacks is a job (``scoring.tasks.start_diagnosis``). The
dicts returned are the JSON the API and ``manage.py score --json`` print; the HTML pages
render the same dicts, so the browser, the API and the CLI cannot disagree. ``None``
means undefined and is shown as "undefined", never as 0.

One module per concept: ``formatting`` (how values are shown), ``report`` (the evaluation
report), ``diagnosis`` (stage diagnosis), ``comparison`` (paired comparison; the
statistics are the sibling ``scoring.comparison``) and ``csv`` (the CSV form of all
three). ``may_score`` is a role rule and lives with the others in ``judgments.selectors``.
"""

from judgments.selectors import may_score
from scoring.reports.comparison import (
    COMPARED_PARAMS,
    ComparisonRefused,
    compare_evaluations,
    comparison_refusals,
)
from scoring.reports.csv import (
    comparison_csv,
    diagnosis_csv,
    report_csv,
    report_csv_rows,
    to_csv,
)
from scoring.reports.diagnosis import (
    LOSS_GLOSS,
    DiagnosisError,
    build_diagnosis,
    diagnose,
    diagnosis_for,
    diagnosis_params,
    outcome_kinds,
    stored_stage_evaluations,
)
from scoring.reports.formatting import (
    MEASURE_NAMES,
    RATE_FAMILIES,
    UNJUDGED_POLICIES,
    UNTESTED_FAMILIES,
    fmt_diff,
    fmt_number,
    fmt_p,
    fmt_value,
    is_rate,
    measure_label,
    sort_value,
    undefined_cell_reason,
    undefined_reason,
)
from scoring.reports.report import (
    EXCLUSION_REASONS,
    REPORT_VERSION,
    abstention_of,
    accounting_of,
    build_report,
    header_of,
)
from scoring.reports.settled import (
    PAGE_PAIRS,
    focus_name,
    focus_state,
    newer_comparison,
    settlement,
)

__all__ = [
    "COMPARED_PARAMS",
    "EXCLUSION_REASONS",
    "LOSS_GLOSS",
    "MEASURE_NAMES",
    "PAGE_PAIRS",
    "RATE_FAMILIES",
    "REPORT_VERSION",
    "UNJUDGED_POLICIES",
    "UNTESTED_FAMILIES",
    "ComparisonRefused",
    "DiagnosisError",
    "abstention_of",
    "accounting_of",
    "build_diagnosis",
    "build_report",
    "compare_evaluations",
    "comparison_csv",
    "comparison_refusals",
    "diagnose",
    "diagnosis_csv",
    "diagnosis_for",
    "diagnosis_params",
    "fmt_diff",
    "fmt_number",
    "fmt_p",
    "fmt_value",
    "focus_name",
    "focus_state",
    "header_of",
    "is_rate",
    "may_score",
    "measure_label",
    "newer_comparison",
    "outcome_kinds",
    "report_csv",
    "report_csv_rows",
    "settlement",
    "sort_value",
    "stored_stage_evaluations",
    "to_csv",
    "undefined_cell_reason",
    "undefined_reason",
]
