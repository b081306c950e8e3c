"""Reading JSON Lines runs: one query per line, with one ranking or several named stages
(a multi-stage pipeline), or an abstention."""

from __future__ import annotations

from verity_limits import STAGE_MAX

from ..errors import EngineInputError, ErrorCollector
from ..tables import Run
from .common import PathLike, _bad_id, _empty_file, _json_lines, _with


def _id_list(
    value: object, name: str, lineno: int, what: str, errors: ErrorCollector
) -> list[str] | None:
    if not isinstance(value, list):
        errors.add(f"{name} line {lineno}: {what} must be a list of item ids")
        return None
    for pos, item in enumerate(value, start=1):
        if not isinstance(item, str) or not item:
            errors.add(
                f"{name} line {lineno}: {what}, position {pos}: {item!r:.60} is not an item id; "
                "ids are non-empty strings"
            )
            return None
        if _bad_id(item, f"{name} line {lineno}: {what}, position {pos}", "id", errors):
            return None
    return value


_JsonlLines = list[tuple[int, str, dict[str, list[str]], bool]]


def _parse_jsonl_run(path: PathLike, name: str) -> tuple[_JsonlLines, tuple[str, ...]]:
    """Parse every line; return them with the stage names in first-seen (pipeline) order."""
    errors = ErrorCollector()
    lines: list[tuple[int, str, dict[str, list[str]], bool]] = []
    seen: dict[str, int] = {}
    stage_names: dict[str, None] = {}
    for lineno, obj in _json_lines(path, name, errors):
        if not isinstance(obj, dict):
            errors.add(f"{name} line {lineno}: expected a JSON object with a 'query' key")
            continue
        qid = obj.get("query")
        if not isinstance(qid, str) or not qid:
            errors.add(f"{name} line {lineno}: 'query' must be a non-empty string")
            continue
        if _bad_id(qid, f"{name} line {lineno}", "query id", errors):
            continue
        if qid in seen:
            errors.add(
                f"{name} line {lineno}: query {qid!r} already given at line {seen[qid]}; "
                "put each query on one line"
            )
            continue
        seen[qid] = lineno
        abstain = obj.get("abstain", False)
        if not isinstance(abstain, bool):
            errors.add(f"{name} line {lineno}: 'abstain' must be true or false")
            continue
        stages: dict[str, list[str]] = {}
        if "stages" in obj and "ranking" in obj:
            errors.add(f"{name} line {lineno}: give either 'stages' or 'ranking', not both")
            continue
        if "stages" in obj:
            raw_stages = obj["stages"]
            if not isinstance(raw_stages, dict):
                errors.add(f"{name} line {lineno}: 'stages' must map stage names to id lists")
                continue
            for sname, ids in raw_stages.items():
                if not sname or len(sname) > STAGE_MAX:
                    errors.add(
                        f"{name} line {lineno}: stage name {sname[:40]!r} must have 1 to "
                        f"{STAGE_MAX} characters"
                    )
                    continue
                checked = _id_list(ids, name, lineno, f"stage {sname!r}", errors)
                if checked is not None:
                    stages[sname] = checked
        elif "ranking" in obj:
            checked = _id_list(obj["ranking"], name, lineno, "'ranking'", errors)
            if checked is not None:
                stages["default"] = checked
        elif not abstain:
            errors.add(
                f"{name} line {lineno}: no 'stages' or 'ranking' for query {qid!r}; "
                'give the ranked ids, or "abstain": true'
            )
            continue
        stage_names.update(dict.fromkeys(stages))
        lines.append((lineno, qid, stages, abstain))
    errors.raise_if_any()
    if not lines:
        raise _empty_file(name, 'one JSON object per line, e.g. {"query": "q1", "ranking": [...]}')
    return lines, tuple(stage_names)


def _read_jsonl_run(path: PathLike, name: str, *, dedup: str, stage: str | None) -> Run:
    lines, all_stages = _parse_jsonl_run(path, name)
    if stage is None:
        if len(all_stages) > 1:
            raise EngineInputError(
                [
                    f"{name}: the run has several stages ({', '.join(all_stages)}); choose one "
                    "with --stage NAME (stage=...)"
                ]
            )
        stage = all_stages[0] if all_stages else "default"
    elif stage not in all_stages:
        raise EngineInputError(
            [
                f"{name}: no stage {stage!r} in the run; its stages are "
                f"{', '.join(all_stages) or '(none)'}"
            ]
        )
    return _jsonl_stage(lines, all_stages, name, stage=stage, dedup=dedup)


def _jsonl_stage(
    lines: _JsonlLines, all_stages: tuple[str, ...], name: str, *, stage: str, dedup: str
) -> Run:
    chosen = stage
    errors = ErrorCollector()
    rankings: dict[str, list[str]] = {}
    abstained: set[str] = set()
    removed = 0
    for lineno, qid, stages, abstain in lines:
        if abstain:
            abstained.add(qid)
        if chosen not in stages:
            if not abstain:
                errors.add(
                    f"{name} line {lineno}: query {qid!r} has no stage {chosen!r} (it has "
                    f"{', '.join(sorted(stages)) or 'none'}); give every query every stage, "
                    "an empty list if need be"
                )
            rankings[qid] = []
            continue
        first_at: dict[str, int] = {}
        kept: list[str] = []
        for pos, docid in enumerate(stages[chosen], start=1):
            if docid in first_at:
                if dedup == "first":
                    removed += 1
                    continue
                errors.add(
                    f"{name} line {lineno}: duplicate id {docid!r} at position {pos} of "
                    f"stage {chosen!r} for query {qid!r} (first at position {first_at[docid]}); "
                    "pass --dedup first to keep the first occurrence"
                )
                continue
            first_at[docid] = pos
            kept.append(docid)
        rankings[qid] = kept
    errors.raise_if_any()
    run = Run.from_mapping(rankings, dedup=dedup, source=name, abstained=frozenset(abstained))
    return _with(run, stage=chosen, stages=all_stages, duplicates_removed=removed)
