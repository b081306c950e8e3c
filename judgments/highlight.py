"""Mark a query's terms in an item's text, for the review screen.

Pure: strings in, safe HTML out. Every piece of the text is HTML-escaped and the only
markup added is ``<mark>``, so the result can be rendered as is. Terms are compared by a
crude stem (lowercase, common English suffixes dropped), which is enough to catch
"disconnects" for "disconnect"; stopwords and terms shorter than three characters are
ignored, because marking every "the" or "is" hides the words that matter.
"""

from __future__ import annotations

import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

MIN_TERM_LENGTH = 3

_STOPWORDS_TEXT = """
    a about above after again against all also am an and any are aren as at be because
    been before being below between both but by can cannot could couldn did didn do does
    doesn doing don down during each else ever few for from further get gets got had
    hadn has hasn have haven having he her here hers herself him himself his how however
    i if in into is isn it its itself just let like may me might more most must mustn my
    myself need no nor not now of off on once one only or other ought our ours ourselves
    out over own same shall she should shouldn so some such than that the their theirs
    them themselves then there these they this those through to too under until up upon
    us use used using very via was wasn we were weren what when where whether which while
    who whom whose why will with within without won would wouldn yes yet you your yours
    yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())

_WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = ("ing", "ies", "ed", "es", "s")


def stem(word: str) -> str:
    """A crude stem: lowercase, one common suffix and a final "e" dropped while at least
    three letters are left ("changes", "changed" and "change" all give "chang")."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_TERM_LENGTH:
            if suffix == "s" and word.endswith("ss"):
                break
            word = word[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    if word.endswith("e") and len(word) > MIN_TERM_LENGTH:
        word = word[:-1]
    return word


def query_terms(query_text: str) -> frozenset[str]:
    """The stems worth marking: no stopwords, nothing shorter than three characters."""
    return frozenset(
        stem(w)
        for w in _WORD.findall(query_text)
        if len(w) >= MIN_TERM_LENGTH and w.lower() not in STOPWORDS
    )


def highlight(text: str, terms: frozenset[str]) -> SafeString:
    """``text`` escaped, with every word whose stem is in ``terms`` wrapped in ``<mark>``."""
    if not terms:
        return escape(text)
    parts: list[str] = []
    position = 0
    for match in _WORD.finditer(text):
        word = match.group()
        if len(word) < MIN_TERM_LENGTH or stem(word) not in terms:
            continue
        parts.append(escape(text[position : match.start()]))
        parts.append(f"<mark>{escape(word)}</mark>")
        position = match.end()
    parts.append(escape(text[position:]))
    return mark_safe("".join(parts))  # every piece above is escaped
