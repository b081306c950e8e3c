"""How counts read: one place for plurals, so that no page, message or command says
"1 queries" or "2 query".

``counted(1, "query")`` → ``"1 query"``; ``counted(3, "query")`` → ``"3 queries"``;
``counted(1200, "item")`` → ``"1,200 items"``. Templates use the same rule through the
``counted`` filter (``{{ n|counted:"query" }}``, or ``"person,people"`` for an irregular
plural) and ``plural`` (the noun alone).
"""

from __future__ import annotations

_VOWELS = frozenset("aeiou")


def plural_of(noun: str) -> str:
    """The regular English plural: query → queries, day → days, match → matches."""
    if noun.endswith("y") and len(noun) > 1 and noun[-2] not in _VOWELS:
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def noun_for(n: int | float, noun: str) -> str:
    """``noun`` for one, its plural otherwise; ``"person,people"`` names both forms."""
    singular, _, many = noun.partition(",")
    return singular if n == 1 else (many or plural_of(singular))


def counted(n: int | float, noun: str) -> str:
    """``"1 query"``, ``"0 queries"``, ``"1,200 items"``: the number and its noun."""
    number = f"{n:,}" if isinstance(n, int) else str(n)
    return f"{number} {noun_for(n, noun)}"
