"""Versioned prompt templates for model judges. Pure: no Django.

A template is filled twice: once per collection (its scale names and guidelines), which
gives the prompt whose sha256 every proposal records, and once per pair (the query and
the item's text). A changed template is a new version, never an edit of an old one, so
that a stored hash always names one text.

The default, ``umbrela-v1``, follows UMBRELA (Upadhyay et al., 2024, after Thomas et
al., 2023): a graded relevance prompt that asks the model to weigh intent match and
trustworthiness, then give only a final integer score. Here the grades are the
collection's own, with their names, and the collection's guidelines come first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_VERSION = "umbrela-v1"

_UMBRELA_V1 = """\
You are a relevance assessor. Given a query and a passage, you must provide a score on \
an integer scale of {lowest} to {highest} with the following meanings:
{grade_lines}
Grades {relevant} and up count as relevant.

{guidelines_block}Split this problem into steps:
Consider the underlying intent of the search.
Measure how well the content matches a likely intent of the query (M).
Measure how trustworthy the passage is (T).
Consider the aspects above and the relative importance of each, and decide on a final \
score (O). Final score must be an integer value only, one of {grade_list}.
Do not provide any code in result. Answer with exactly two lines:
##final score: <score>
##rationale: <one sentence saying why>"""

_PAIR_V1 = "Query: {query}\nPassage: {passage}"

TEMPLATES: dict[str, tuple[str, str]] = {DEFAULT_VERSION: (_UMBRELA_V1, _PAIR_V1)}


@dataclass(frozen=True)
class FilledPrompt:
    """A template filled for one collection: the system text and its hash."""

    version: str
    system: str
    pair_template: str

    @property
    def hash(self) -> str:
        body = f"{self.version}\n{self.system}\n{self.pair_template}"
        return hashlib.sha256(body.encode("utf-8")).hexdigest()

    def messages(self, *, query: str, passage: str) -> list[dict[str, str]]:
        """The chat-completions ``messages`` for one pair."""
        user = self.pair_template.format(query=query, passage=passage)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def fill_prompt(
    version: str,
    *,
    scale: Sequence[Mapping[str, object]],
    relevant_grade: int,
    guidelines: str = "",
) -> FilledPrompt:
    """The template ``version`` with the collection's scale and guidelines filled in;
    ``KeyError`` naming the known versions when there is no such template."""
    if version not in TEMPLATES:
        known = ", ".join(sorted(TEMPLATES))
        raise KeyError(f"no prompt template '{version}'; known versions: {known}")
    system, pair = TEMPLATES[version]
    grades = [int(str(g["grade"])) for g in scale]
    lines = "\n".join(f"{int(str(g['grade']))} = {g['name']}" for g in scale)
    block = (
        f"Guidelines of this collection:\n{guidelines.strip()}\n\n" if guidelines.strip() else ""
    )
    text = system.format(
        lowest=min(grades),
        highest=max(grades),
        grade_lines=lines,
        relevant=relevant_grade,
        guidelines_block=block,
        grade_list=", ".join(str(g) for g in grades),
    )
    return FilledPrompt(version=version, system=text, pair_template=pair)
