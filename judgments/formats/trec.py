"""TREC files: topics (``qid<TAB>text``) and qrels (``qid 0 docid grade``), and the
``--scale`` option of the import command."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from verity_limits import grade_problem

from .checks import _Bad, _Duplicates, _empty, _lines, check_id
from .records import (
    QRELS_UNJUDGED_SOURCE,
    UNJUDGED_GRADE,
    Bundle,
    JudgmentRecord,
    Problem,
    QueryRecord,
    UnjudgedRecord,
    Where,
)


def _trec_lines(data: bytes, name: str, problems: list[Problem]) -> Iterator[tuple[Where, str]]:
    """Data lines of a TREC file: '#' at the start of a line makes a comment; blanks skip."""
    for number, text in _lines(data, name, problems):
        if text.startswith("#") or not text.strip():
            continue
        yield Where(name, number), text


def _trec_id(key: str, value: str, where: Where, problems: list[Problem]) -> bool:
    try:
        check_id(key, value)
    except _Bad as e:
        problems.append(Problem(where, str(e)))
        return False
    return True


def parse_topics(data: bytes, name: str) -> tuple[Bundle, list[Problem]]:
    """TREC topics: ``qid<TAB>text`` per line (text may hold further tabs); a line with no
    tab splits at its first run of spaces instead (``qid text``), as some topic files do."""
    problems: list[Problem] = []
    bundle = Bundle()
    if _empty(data, name, problems, "topics, one 'qid<TAB>text' per line"):
        return bundle, problems
    dups = _Duplicates(problems)
    for where, text in _trec_lines(data, name, problems):
        qid, tab, query_text = text.partition("\t")
        if not tab:
            parts = text.strip().split(None, 1)
            if len(parts) == 2:
                qid, tab, query_text = parts[0], " ", parts[1]
        qid, query_text = qid.strip(), query_text.strip()
        if not tab:
            problems.append(
                Problem(
                    where,
                    "expected 'qid<TAB>text', found only one field; separate id and text by a tab",
                )
            )
            continue
        if not query_text:
            problems.append(Problem(where, f"query '{qid}' has no text; add it after the tab"))
            continue
        if "\x00" in query_text:
            problems.append(Problem(where, "the text contains a NUL character; remove it"))
            continue
        if _trec_id("qid", qid, where, problems) and dups.query(qid, where):
            bundle.queries.append(QueryRecord(where=where, id=qid, text=query_text))
    if not bundle.queries and not problems:
        problems.append(Problem(Where(name, 1), "no topics found, only comments or blank lines"))
    return bundle, problems


_INTEGER = re.compile(r"[+-]?[0-9]+")


def parse_qrels(data: bytes, name: str) -> tuple[Bundle, list[Problem]]:
    """TREC qrels ``qid 0 docid grade``: whitespace-separated, the second column ignored.

    Grade -1 means pooled but unjudged: it becomes an unjudged record (a review task) with
    source ``qrels -1``. A line starting with '#' is a comment; '#' elsewhere is data.
    """
    problems: list[Problem] = []
    bundle = Bundle()
    if _empty(data, name, problems, "TREC qrels lines 'qid 0 docid grade'"):
        return bundle, problems
    dups = _Duplicates(problems)
    for where, text in _trec_lines(data, name, problems):
        fields = text.split()
        if len(fields) != 4:
            problems.append(
                Problem(
                    where,
                    f"expected 4 fields 'qid 0 docid grade', found {len(fields)}; separate "
                    "them by spaces or tabs",
                )
            )
            continue
        qid, _, docid, raw_grade = fields
        problem = grade_problem(raw_grade)
        if problem is not None:
            problems.append(
                Problem(
                    where,
                    f"{problem}; use a grade on the collection's scale, or -1 for pooled "
                    "but unjudged",
                )
            )
            continue
        grade = int(raw_grade)
        if grade < UNJUDGED_GRADE:
            problems.append(
                Problem(
                    where,
                    f"grade {grade} is below -1; use a grade on the collection's scale, or -1 "
                    "for pooled but unjudged",
                )
            )
            continue
        if not (
            _trec_id("qid", qid, where, problems) and _trec_id("docid", docid, where, problems)
        ):
            continue
        if not dups.pair(qid, docid, grade, where):
            continue
        if grade == UNJUDGED_GRADE:
            bundle.unjudged.append(
                UnjudgedRecord(where=where, query=qid, item=docid, source=QRELS_UNJUDGED_SOURCE)
            )
        else:
            bundle.judgments.append(JudgmentRecord(where=where, query=qid, item=docid, grade=grade))
    if not bundle.judgments and not bundle.unjudged and not problems:
        problems.append(
            Problem(Where(name, 1), "no qrels lines found, only comments or blank lines")
        )
    return bundle, problems


def parse_scale_option(text: str) -> list[dict[str, Any]]:
    """``"0:not relevant,1:relevant"`` → scale entries; raises ValueError saying how to fix."""
    scale = []
    for part in text.split(","):
        grade, colon, grade_name = part.partition(":")
        if not colon or not _INTEGER.fullmatch(grade.strip()) or not grade_name.strip():
            raise ValueError(
                f"scale entry {part.strip()!r} must be GRADE:NAME, e.g. "
                '"0:not relevant,1:relevant,2:highly relevant"'
            )
        problem = grade_problem(grade)
        if problem is not None:
            raise ValueError(f"scale entry {part.strip()[:60]!r}: {problem}")
        scale.append({"grade": int(grade), "name": grade_name.strip()})
    return scale
