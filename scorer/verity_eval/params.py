"""Scoring parameters and measure names.

Measure names are the ones the reports print: ``R@10``, ``Ceiling@10``, ``AnyHit@10``,
``AllHit@10``, ``P@10``, ``nDCG@10``, ``Judged@10``, ``Evidence@10`` (one per cutoff) and
``RR``, ``AP``, ``Rprec``, ``bpref`` (whole ranking). A family name without ``@k``
(``"R"``, ``"nDCG"``) expands over every cutoff in ``ks``; trec_eval names (``recall_100``,
``P_10``, ``ndcg_cut_10``, ``success_5``, ``recip_rank``, ``map``) are accepted as aliases.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import Any, Literal

from .errors import InvalidParameterError

Unjudged = Literal["nonrel", "judged-only", "bounds"]
Dedup = Literal["error", "first"]
Order = Literal["score", "rank", "list"]

UNJUDGED_POLICIES: tuple[str, ...] = ("nonrel", "judged-only", "bounds")
DEDUP_POLICIES: tuple[str, ...] = ("error", "first")
ORDERS: tuple[str, ...] = ("score", "rank", "list")

#: Measures taken at a cutoff k, in report order.
CUTOFF_FAMILIES: tuple[str, ...] = (
    "R",
    "Ceiling",
    "AnyHit",
    "AllHit",
    "P",
    "nDCG",
    "Judged",
    "Evidence",
)
#: Measures over the whole ranking, in report order.
RANK_MEASURES: tuple[str, ...] = ("RR", "AP", "Rprec", "bpref")

ORDER_DESCRIPTIONS: dict[str, str] = {
    "score": "score descending (64-bit floats), ties by docid descending (byte order), "
    "as trec_eval",
    "rank": "rank column ascending; equal ranks within a query are an error",
    "list": "list order as given",
}

_TREC_ALIASES: dict[str, str] = {
    "recall": "R",
    "P": "P",
    "ndcg_cut": "nDCG",
    "success": "AnyHit",
}
_RANK_ALIASES: dict[str, str] = {
    "recip_rank": "RR",
    "map": "AP",
    "Rprec": "Rprec",
    "bpref": "bpref",
}
#: trec_eval measures verity-eval does not compute: refused by their trec_eval names (with
#: or without a ``_k`` suffix), never read as one of Verity's measures ("ndcg" is not
#: nDCG@k). ``verity-trec-eval`` computes every one of them.
TREC_EVAL_ONLY: dict[str, str] = {
    "ndcg": "nDCG over the whole ranking, with no cutoff",
    "ndcg_rel": "nDCG averaged over the relevant documents",
    "Rndcg": "nDCG averaged at the R levels",
    "dcg": "DCG over the whole ranking",
    "ideal_dcg": "the ideal DCG",
    "G": "normalized gain",
    "binG": "binary gain",
    "gm_map": "the geometric mean of AP",
    "gm_bpref": "the geometric mean of bpref",
    "map_cut": "AP cut at k (divided by all relevant documents)",
    "infAP": "inferred AP",
    "iprec_at_recall": "interpolated precision at recall levels",
    "11pt_avg": "11-point interpolated precision",
    "Rprec_mult": "precision at multiples of R",
    "relative_P": "precision relative to the best possible at k",
    "utility": "set utility",
    "relstring": "the relevance string of the top documents",
    "set_P": "precision of the whole retrieved set",
    "set_recall": "recall of the whole retrieved set",
    "set_relative_P": "relative precision of the whole retrieved set",
    "set_map": "set precision times set recall",
    "set_F": "the F measure of the whole retrieved set",
    "num_nonrel_judged_ret": "the count of judged non-relevant documents retrieved",
    "rbp": "rank-biased precision",
    "rbp_resid": "rank-biased precision's residual",
    "unj": "the fraction unjudged at k",
    "runid": "the run's name",
    "num_q": "the query count",
    "num_ret": "the retrieved count",
    "num_rel": "the relevant count",
    "num_rel_ret": "the relevant retrieved count",
}

_FAMILY_BY_LOWER = {f.lower(): f for f in CUTOFF_FAMILIES}
_RANK_BY_LOWER = {m.lower(): m for m in RANK_MEASURES}


def check_k(k: object, *, what: str = "k") -> int:
    """Return ``k`` if it is a positive ``int``; bools and floats (even 2.0) are refused."""
    if type(k) is not int or k <= 0:
        raise InvalidParameterError(f"{what} must be a positive integer, got {k!r}")
    return k


def _parse_cutoff(text: str, name: str) -> int:
    if not re.fullmatch(r"[1-9][0-9]*", text):
        raise InvalidParameterError(
            f"measure {name!r}: cutoff {text!r} is not a positive integer; write e.g. 'R@10'"
        )
    return int(text)


def _unknown(name: str) -> InvalidParameterError:
    known = ", ".join([*CUTOFF_FAMILIES, *RANK_MEASURES])
    return InvalidParameterError(
        f"unknown measure {name!r}; known measures: {known} "
        "(cutoff measures take '@k', e.g. 'nDCG@10', or expand over --k when given bare)"
    )


def resolve_measures(
    measures: tuple[str, ...] | None, ks: tuple[int, ...], *, with_evidence: bool
) -> tuple[str, ...]:
    """Expand family names and aliases into canonical measure names, in report order.

    ``None`` means every measure; ``Evidence@k`` is then included only ``with_evidence``.
    """
    wanted: set[str] = set()
    if measures is None:
        for fam in CUTOFF_FAMILIES:
            if fam == "Evidence" and not with_evidence:
                continue
            wanted.update(f"{fam}@{k}" for k in ks)
        wanted.update(RANK_MEASURES)
    else:
        if isinstance(measures, str):
            raise InvalidParameterError(
                "measures must be a tuple of names, not one string; e.g. ('R', 'nDCG@10')"
            )
        if len(measures) == 0:
            raise InvalidParameterError("measures is empty; pass None for every measure")
        for raw in measures:
            if not isinstance(raw, str) or not raw.strip():
                raise InvalidParameterError(f"measure names must be non-empty strings: {raw!r}")
            name = raw.strip()
            wanted.update(_resolve_one(name, ks))
    return tuple(sorted(wanted, key=_measure_sort_key))


def _trec_eval_only(name: str) -> InvalidParameterError | None:
    base = name if name in TREC_EVAL_ONLY else re.sub(r"_[0-9.]+$", "", name)
    if base not in TREC_EVAL_ONLY:
        return None
    hint = (
        "for nDCG at a cutoff write nDCG@k (or nDCG over --k; trec_eval's ndcg_cut_k)"
        if base == "ndcg"
        else "the counts are printed by --format trec_eval"
        if base.startswith("num_")
        else "verity-eval does not compute it"
    )
    return InvalidParameterError(
        f"measure {name!r} is trec_eval's {TREC_EVAL_ONLY[base]}, not one of Verity's "
        f"measures: {hint}; verity-trec-eval -m {base} computes trec_eval's"
    )


def _resolve_one(name: str, ks: tuple[int, ...]) -> list[str]:
    # trec_eval's own spellings first: "ndcg" must not read as Verity's nDCG@k.
    refusal = _trec_eval_only(name)
    if refusal is not None:
        raise refusal
    if name in _TREC_ALIASES:
        # trec_eval's cutoff families, bare: over --k, as Verity's own family names.
        return [f"{_TREC_ALIASES[name]}@{k}" for k in ks]
    low = name.lower()
    if "@" in name:
        fam_text, _, cut = name.partition("@")
        fam = _FAMILY_BY_LOWER.get(fam_text.lower())
        if fam is None:
            raise _unknown(name)
        return [f"{fam}@{_parse_cutoff(cut, name)}"]
    if low in _FAMILY_BY_LOWER:
        return [f"{_FAMILY_BY_LOWER[low]}@{k}" for k in ks]
    if low in _RANK_BY_LOWER:
        return [_RANK_BY_LOWER[low]]
    if name in _RANK_ALIASES:
        return [_RANK_ALIASES[name]]
    m = re.fullmatch(r"(recall|P|ndcg_cut|success)_([0-9]+)", name)
    if m:
        return [f"{_TREC_ALIASES[m.group(1)]}@{_parse_cutoff(m.group(2), name)}"]
    raise _unknown(name)


def _measure_sort_key(name: str) -> tuple[int, int, int]:
    if "@" in name:
        fam, _, k = name.partition("@")
        return (0, int(k), CUTOFF_FAMILIES.index(fam))
    return (1, 0, RANK_MEASURES.index(name))


def split_measure(name: str) -> tuple[str, int | None]:
    """``"R@10"`` -> ``("R", 10)``; ``"AP"`` -> ``("AP", None)``."""
    if "@" in name:
        fam, _, k = name.partition("@")
        return fam, int(k)
    return name, None


@dataclass(frozen=True)
class EvalParams:
    """Everything that decides a number besides the data; recorded in every result.

    Invariants (checked on construction): every k is a positive ``int``; ``rel_level`` is
    an ``int`` >= 1; policies are among the documented names; ``measures`` names are known.

    ``order`` is the rule that put each ranking in order: it is applied by ``read_run``
    (``"score"``, ``"rank"``) and must agree with a ``Run`` passed to ``evaluate``;
    in-memory lists are taken in list order and recorded as ``"list"``.
    """

    ks: tuple[int, ...] = (5, 10)
    measures: tuple[str, ...] | None = None
    rel_level: int = 1
    unjudged: Unjudged = "nonrel"
    dedup: Dedup = "error"
    order: Order = "score"
    stage: str | None = None

    def __post_init__(self) -> None:
        ks = self.ks
        if isinstance(ks, int) and not isinstance(ks, bool):
            ks = (ks,)
        if not isinstance(ks, tuple | list) or len(ks) == 0:
            raise InvalidParameterError(f"ks must be a non-empty tuple of cutoffs, got {ks!r}")
        checked = tuple(sorted({check_k(k, what="every cutoff k") for k in ks}))
        object.__setattr__(self, "ks", checked)
        # One string is refused below (tuple("nDCG") would read as 'n', 'D', 'C', 'G').
        if self.measures is not None and not isinstance(self.measures, str):
            object.__setattr__(self, "measures", tuple(self.measures))
        if type(self.rel_level) is not int or self.rel_level < 1:
            raise InvalidParameterError(
                f"rel_level must be an integer >= 1 (the lowest grade counted as relevant), "
                f"got {self.rel_level!r}"
            )
        for value, allowed, what in (
            (self.unjudged, UNJUDGED_POLICIES, "unjudged"),
            (self.dedup, DEDUP_POLICIES, "dedup"),
            (self.order, ORDERS, "order"),
        ):
            if value not in allowed:
                raise InvalidParameterError(
                    f"{what} must be one of {', '.join(allowed)}; got {value!r}"
                )
        if self.stage is not None and (not isinstance(self.stage, str) or not self.stage):
            raise InvalidParameterError(f"stage must be a non-empty string, got {self.stage!r}")
        # Checked here so that a bad name fails before any file is read.
        resolve_measures(self.measures, checked, with_evidence=True)

    def measure_names(self, *, with_evidence: bool) -> tuple[str, ...]:
        return resolve_measures(self.measures, self.ks, with_evidence=with_evidence)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ks": list(self.ks),
            "rel_level": self.rel_level,
            "unjudged": self.unjudged,
            "dedup": self.dedup,
            "order": self.order,
            "stage": self.stage,
        }


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key putting "q2" before "q10" (digit runs compare as numbers)."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part
    )


def parse_ks(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--k must be comma-separated positive integers, e.g. 5,10,100; got {text!r}"
        ) from None
    if not ks or any(k <= 0 for k in ks):
        raise argparse.ArgumentTypeError(f"--k values must be positive integers; got {text!r}")
    return ks
