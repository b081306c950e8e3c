"""Document collections as IR datasets publish them: TSV or JSON Lines, one item a line.

TSV (MS MARCO's ``collection.tsv`` and kin), by the number of tab-separated fields:
``id<TAB>text``, ``id<TAB>title<TAB>text`` or ``id<TAB>url<TAB>title<TAB>text``.
JSON Lines (BEIR's ``corpus.jsonl``, ir_datasets exports, Verity's own item records): an
object with the id under ``id``, ``_id``, ``docid`` or ``doc_id``, the text under
``text``, ``contents``, ``body`` or ``passage``, and optionally ``title`` and ``url``.

A corpus can hold millions of documents: the reader takes the file's lines one at a time
and keeps only the ids in ``wanted`` (when given), so that a collection of judged items
reads its texts out of a whole corpus file.
"""

from __future__ import annotations

from collections.abc import Iterable

from verity_limits import URL_MAX, JsonLineError, parse_json_line

from .checks import _Bad, _Duplicates, check_id
from .records import UTF8_BOM, ItemRecord, Problem, Where

ID_KEYS = ("id", "_id", "docid", "doc_id")
TEXT_KEYS = ("text", "contents", "body", "passage")


def parse_docs(
    lines: Iterable[bytes], name: str, *, wanted: set[str] | None = None
) -> tuple[list[ItemRecord], list[Problem], int]:
    """Items from a TSV or JSON Lines corpus; returns (items, problems, documents skipped
    because ``wanted`` does not name them). The format is decided by the first data line:
    ``{`` starts JSON Lines. CRLF line ends and a UTF-8 byte-order mark are accepted."""
    items: list[ItemRecord] = []
    problems: list[Problem] = []
    dups = _Duplicates(problems)
    skipped = 0
    jsonl: bool | None = None
    for number, raw in enumerate(lines, 1):
        if number == 1 and raw.startswith(UTF8_BOM):
            raw = raw[len(UTF8_BOM) :]
        raw = raw.rstrip(b"\r\n")
        if not raw.strip() or raw.startswith(b"#"):
            continue
        where = Where(name, number)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            problems.append(Problem(where, f"not valid UTF-8 (byte {e.start + 1}); save as UTF-8"))
            continue
        if jsonl is None:
            jsonl = text.lstrip().startswith("{")
        try:
            record = _json_doc(text, where) if jsonl else _tsv_doc(text, where)
        except _Bad as e:
            problems.append(Problem(where, str(e)))
            continue
        if wanted is not None and record.id not in wanted:
            skipped += 1
            continue
        if dups.item(record.id, where):
            items.append(record)
    if jsonl is None:
        problems.append(Problem(Where(name, 1), "the file holds no documents"))
    return items, problems, skipped


def _tsv_doc(text: str, where: Where) -> ItemRecord:
    fields = text.split("\t")
    if len(fields) == 2:
        docid, title, url, body = fields[0], "", "", fields[1]
    elif len(fields) == 3:
        docid, title, url, body = fields[0], fields[1], "", fields[2]
    elif len(fields) == 4:
        docid, url, title, body = fields
    else:
        raise _Bad(
            f"expected 2 to 4 tab-separated fields (id, [url,] [title,] text), found "
            f"{len(fields)}; a text holding tabs needs JSON Lines instead"
        )
    return _record(where, docid.strip(), title, body, url)


def _json_doc(text: str, where: Where) -> ItemRecord:
    try:
        obj = parse_json_line(text)
    except JsonLineError as e:
        raise _Bad(str(e)) from None
    if not isinstance(obj, dict):
        raise _Bad("expected a JSON object per line")
    docid = next((obj[k] for k in ID_KEYS if k in obj), None)
    if isinstance(docid, int) and not isinstance(docid, bool):
        docid = str(docid)  # numeric ids (MS MARCO passage ids) are ids all the same
    if docid is None:
        raise _Bad(f"no document id; give it as one of {', '.join(ID_KEYS)}")
    body = next((obj[k] for k in TEXT_KEYS if k in obj), "")
    title, url = obj.get("title") or "", obj.get("url") or ""
    for key, value in (("text", body), ("title", title), ("url", url)):
        if not isinstance(value, str):
            raise _Bad(f"'{key}' must be a string")
    return _record(where, docid, title, body, url)


def _record(where: Where, docid: object, title: str, body: str, url: str) -> ItemRecord:
    check_id("id", docid)
    if "\x00" in title + body + url:
        raise _Bad("the text contains a NUL character, which cannot be stored; remove it")
    if len(url) > URL_MAX:
        raise _Bad(f"the url is {len(url):,} characters long; at most {URL_MAX:,} fit")
    return ItemRecord(where=where, id=str(docid), title=title, text=body, url=url)
