"""Reading review statuses and evidence conditions (JSON Lines), and checking one
evidence condition."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ErrorCollector
from .common import PathLike, _bad_id, _empty_file, _json_lines, _name

STATUSES: tuple[str, ...] = ("relevant", "no_answer", "unreviewed")


@dataclass(frozen=True)
class Statuses:
    """Review statuses (and optional evidence conditions) by query id."""

    statuses: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, list[list[str]]] = field(default_factory=dict)
    source: str = "statuses"


def check_evidence(
    qid: str, value: object, where: str, errors: ErrorCollector
) -> list[list[str]] | None:
    """Validate one evidence condition: a non-empty list of non-empty AND-groups of ids."""
    if not isinstance(value, list) or not value:
        errors.add(
            f"{where}: evidence for query {qid!r} must be a non-empty list of groups, "
            'e.g. [["a", "b"], ["c"]] for (a AND b) OR c'
        )
        return None
    groups: list[list[str]] = []
    for g in value:
        if not isinstance(g, list) or not g or not all(isinstance(i, str) and i for i in g):
            errors.add(
                f"{where}: evidence group {g!r} of query {qid!r} must be a non-empty list of "
                "item ids"
            )
            return None
        groups.append(list(g))
    return groups


def read_statuses(path: PathLike) -> Statuses:
    """Read ``{"query": ..., "status": "relevant"|"no_answer"|"unreviewed",
    "evidence": [[...], ...]}`` lines (evidence optional)."""
    name = _name(path)
    errors = ErrorCollector()
    statuses: dict[str, str] = {}
    evidence: dict[str, list[list[str]]] = {}
    seen: dict[str, int] = {}
    count = 0
    for lineno, obj in _json_lines(path, name, errors):
        count += 1
        where = f"{name} line {lineno}"
        if not isinstance(obj, dict):
            errors.add(f"{where}: expected a JSON object with 'query' and 'status'")
            continue
        qid, status = obj.get("query"), obj.get("status")
        if not isinstance(qid, str) or not qid:
            errors.add(f"{where}: 'query' must be a non-empty string")
            continue
        if _bad_id(qid, where, "query id", errors):
            continue
        if qid in seen:
            errors.add(f"{where}: query {qid!r} already given at line {seen[qid]}")
            continue
        seen[qid] = lineno
        if status not in STATUSES:
            errors.add(f"{where}: status {status!r} is not one of {', '.join(STATUSES)}")
            continue
        statuses[qid] = str(status)
        if obj.get("evidence") is not None:
            groups = check_evidence(qid, obj["evidence"], where, errors)
            if groups is not None:
                evidence[qid] = groups
    errors.raise_if_any()
    if count == 0:
        raise _empty_file(name, 'lines like {"query": "q1", "status": "relevant"}')
    return Statuses(statuses, evidence, name)
