"""The CSV form of the report, the diagnosis and the comparison: what ``?format=csv`` and
the pages' downloads hold, written from the same dicts as the JSON.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any


def report_csv_rows(report: Mapping[str, Any]) -> Iterator[list[Any]]:
    """The report as long-format rows ``section, query, measure, statistic, value``:
    one schema for every number, so a spreadsheet pivot or ``pandas`` rebuilds any table."""
    yield ["section", "query", "measure", "statistic", "value"]
    for row in report["header"]:
        yield ["header", "", row["key"], "", row["value"]]
    yield ["header", "", "status", "", report["status"]]
    for measure, agg in report["aggregates"].items():
        for statistic, value in agg.items():
            if isinstance(value, Mapping):
                yield ["aggregate", "", measure, f"{statistic}_low", _csv_number(value["low"])]
                yield ["aggregate", "", measure, f"{statistic}_high", _csv_number(value["high"])]
            else:
                yield ["aggregate", "", measure, statistic, _csv_number(value)]
    acc = report["accounting"]
    for key in ("total", "scorable", "excluded_total", "empty_ranking", "abstained_scorable"):
        yield ["accounting", "", "", key, acc[key]]
    for reason, count in acc["excluded"].items():
        yield ["accounting", "", "", f"excluded:{reason}", count]
    ab = report["abstention"]
    for key in ("no_answer", "answered", "abstained", "returned_nothing", "not_in_run"):
        yield ["abstention", "", "", key, _csv_number(ab[key])]
    for row in ab["queries"]:
        yield ["abstention", row["query"], "", "outcome", row["outcome"]]
    per_query = report["per_query"]
    for w in report["weights"]:
        q = w["query"]
        yield ["query", q, "tags", "", ";".join(report["queries"].get(q, {}).get("tags", []))]
        yield ["query", q, "relevant", "", w["relevant"]]
        yield ["query", q, "weight", "pooled", _csv_number(w["pooled"])]
        yield ["query", q, "weight", "macro", _csv_number(w["macro"])]
        for measure, value in per_query[q].items():
            if measure in ("relevant", "weight"):
                continue
            if isinstance(value, Mapping):
                yield ["query", q, measure, "low", _csv_number(value["low"])]
                yield ["query", q, measure, "high", _csv_number(value["high"])]
            else:
                yield ["query", q, measure, "", _csv_number(value)]
    for q, reason in report["excluded"].items():
        yield ["excluded", q, "", "reason", reason]


def _csv_number(value: Any) -> Any:
    if value is None:
        return "undefined"
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return repr(value)
    return value


#: OWASP's list: a spreadsheet reads a cell that starts with one of these as a formula.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula, with a leading ``'``.

    Ids come from uploaded files (``=SUM(1+1)``, ``@cmd``, ``-2+3``); numbers written
    by the report itself (``-0.25``) stay numbers.
    """
    if not isinstance(value, str) or not value.startswith(_FORMULA_STARTS):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value


def to_csv(rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows([neutralise_cell(cell) for cell in row] for row in rows)
    return out.getvalue()


def report_csv(report: Mapping[str, Any]) -> str:
    return to_csv(report_csv_rows(report))


def diagnosis_csv(diagnosis: Mapping[str, Any]) -> str:
    stages = diagnosis["stages"]
    rows: list[list[Any]] = [["query", "item", "grade", "outcome", *[f"rank:{s}" for s in stages]]]
    for it in diagnosis["items"]:
        ranks = ["" if r is None else r for r in it["ranks"]]
        rows.append([it["query"], it["item"], it["grade"], it["outcome"], *ranks])
    return to_csv(rows)


def comparison_csv(result: Mapping[str, Any]) -> str:
    head = [
        "measure",
        "n",
        "mean_a",
        "mean_b",
        "mean_diff",
        "ci_low",
        "ci_high",
        "ci_method",
        "p",
        "p_holm",
        "p_exact",
        "t",
        "df",
        "p_t",
        "d_z",
        "wins",
        "ties",
        "losses",
    ]
    rows: list[list[Any]] = [head]
    for e in result["measures"]:
        rows.append([e["key"], *[_csv_number(e[h]) for h in head[1:]]])
    return to_csv(rows)
