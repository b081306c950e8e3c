"""A run's ids checked against its collection: unknown queries, unknown items.

A run line whose *query* the collection lacks is almost always a run made for another
collection (or another topic set): it is refused by default, naming the lines, and
``ignore_unknown_queries`` stores the run without those lines, counted. Unknown *item*
ids are normal when a collection holds only its judged and pooled items out of a large
corpus: within the pool depth they become placeholder items to judge; a collection
that declares it holds its whole corpus refuses them instead.

The file is read again here only when something is unknown, to name the lines: the
engine's readers keep ids, not line numbers, and the common case pays nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from collections.abc import Collection as Ids
from dataclasses import dataclass, field
from pathlib import Path

from judgments.formats import MAX_LISTED
from judgments.models import Collection
from judgments.wording import counted

from .errors import RunImportError

LINES_SHOWN = 5  # line numbers named per unknown id


@dataclass
class UnknownIds:
    """What the run named that the collection lacks, and what became of it."""

    query_ids: list[str] = field(default_factory=list)
    query_lines: int = 0  # run lines of those queries: skipped (or the refusal's count)
    item_ids: int = 0  # pooled item ids the collection lacked: placeholders made
    item_ids_beyond: int = 0  # ids the collection lacks, ranked only below the pool depth

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    def describe(self, collection: Collection, *, depth: int | None = None) -> str:
        """One sentence for the upload's answer; ``depth`` is the pool depth used, when
        the upload chose one other than the collection's."""
        depth = collection.pool_depth if depth is None else depth
        queries = (
            f"{counted(len(self.query_ids), 'unknown query id')}: their "
            f"{counted(self.query_lines, 'line')} {'was' if self.query_lines == 1 else 'were'} "
            "skipped"
            if self.query_ids
            else "no unknown query id"
        )
        total = self.item_ids + self.item_ids_beyond
        if not total:
            return f"{queries}; no unknown item id, at any rank"
        within = (
            f"{self.item_ids:,} within the pool depth {depth} (created as placeholder items "
            "to judge)"
            if self.item_ids
            else f"none within the pool depth {depth}"
        )
        beyond = (
            f"{self.item_ids_beyond:,} ranked only below it (kept in the run as ranked, "
            "unjudged: scored as the unjudged policy says, and queued if a deeper pool "
            "reaches them)"
            if self.item_ids_beyond
            else "none ranked only below it"
        )
        return f"{queries}; {counted(total, 'unknown item id')}: {within}; {beyond}"


def check_unknown_queries(
    *,
    collection: Collection,
    path: Path,
    qids: Iterable[str],
    known: Ids[str],
    ignore: bool,
) -> UnknownIds:
    """The run's query ids that the collection lacks, and their lines.

    Refused (``RunImportError`` naming each id with its lines, 25 ids at most) unless
    ``ignore``; then the caller leaves those queries out and reports the count.
    """
    unknown = sorted(set(qids) - set(known))
    if not unknown:
        return UnknownIds()
    wanted = set(unknown)
    lines = _lines_naming(path, lambda qid, _docids: qid in wanted)
    found = UnknownIds(query_ids=unknown, query_lines=sum(len(n) for n in lines.values()))
    if ignore:
        return found
    errors = [
        f"{path.name} {_where(lines.get(qid, []))}: query '{qid}' is not in collection "
        f"'{collection.slug}'"
        for qid in unknown[:MAX_LISTED]
    ]
    if len(unknown) > MAX_LISTED:
        errors.append(f"… and {len(unknown) - MAX_LISTED} more unknown query ids")
    raise RunImportError(
        f"{path.name}: {found.query_lines} line(s) name {len(unknown)} query id(s) that "
        f"collection '{collection.slug}' lacks; nothing was imported. Check that the run was "
        "made for this collection, or pass --ignore-unknown-queries to store it without "
        "those lines.",
        errors,
    )


def check_unknown_items(*, collection: Collection, path: Path, missing: list[str]) -> None:
    """Refuse pooled item ids the collection lacks when it holds its whole corpus (they
    would otherwise become placeholder items)."""
    if not missing or not collection.holds_whole_corpus:
        return
    wanted = set(missing)
    lines = _lines_naming(path, lambda _qid, docids: any(d in wanted for d in docids))
    shown = sorted(wanted)[:MAX_LISTED]
    errors = [f"{path.name}: item '{docid}' is not in the collection" for docid in shown]
    if len(wanted) > MAX_LISTED:
        errors.append(f"… and {len(wanted) - MAX_LISTED} more unknown item ids")
    where = _where(sorted(n for ns in lines.values() for n in ns))
    raise RunImportError(
        f"{path.name} {where}: {len(wanted)} item id(s) within the pool depth "
        f"{collection.pool_depth} are not in collection '{collection.slug}', which holds its "
        "whole corpus; nothing was imported. Import those items first, or check that the run "
        "was made against this corpus.",
        errors,
    )


def _where(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:LINES_SHOWN])
    more = f", … ({len(numbers)} lines)" if len(numbers) > LINES_SHOWN else ""
    word = "line" if len(numbers) == 1 else "lines"
    return f"{word} {shown}{more}"


def _lines_naming(path: Path, wanted: Callable[[str, list[str]], bool]) -> dict[str, list[int]]:
    """Line numbers by query id of the data lines for which ``wanted(qid, ids)`` holds:
    a TREC line names one id, a JSON Lines line every id of every stage. The file has
    been read whole by the engine already, so it is well-formed here."""
    found: dict[str, list[int]] = {}
    with path.open("rb") as fh:
        head = fh.read(4096).lstrip()
        fh.seek(0)
        jsonl = path.suffix.lower() in (".jsonl", ".json", ".ndjson") or head.startswith(b"{")
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip() or raw.lstrip().startswith(b"#"):
                continue
            if jsonl:
                obj = json.loads(raw)
                qid = obj["query"]
                stages = obj.get("stages") or {"default": obj.get("ranking") or []}
                ids = [i for ranking in stages.values() for i in ranking]
            else:
                fields = raw.split()
                qid, ids = fields[0].decode(), [fields[2].decode()]
            if wanted(qid, ids):
                found.setdefault(qid, []).append(lineno)
    return found
