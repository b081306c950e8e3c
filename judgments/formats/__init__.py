"""Verity's file formats: JSONL bundles, TREC qrels and TREC topics, read and written.

Pure functions, no database and no Django: bytes in, records plus line-numbered problems
out; records in, deterministic text out. A parser never stops at the first problem: it
reads the whole file and returns every problem it found, each naming the file, the line,
what is wrong and how to fix it.

The checks here are the ones a file fails on its own: encoding, syntax, field types,
duplicates within the file. Checks that need the collection (a grade on its scale, an id
it does not know, a stored judgment that disagrees) are made by
``services.import_collection_data``, which reports them with the same locations.

One module per format (``jsonl``, ``trec``), with the records and problems they share
(``records``), the checks both readers make (``checks``) and the writers (``writers``);
this package re-exports the public names.
"""

from .checks import check_id
from .docs import parse_docs
from .jsonl import parse_bundle, parse_items, parse_judgments, parse_queries
from .records import (
    BUNDLE_FORMAT,
    MAX_ID_LENGTH,
    MAX_INT,
    MAX_LISTED,
    MAX_SMALL_INT,
    QRELS_UNJUDGED_SOURCE,
    UNJUDGED_GRADE,
    UTF8_BOM,
    AdjudicationRecord,
    Bundle,
    CollectionRecord,
    ItemRecord,
    JudgmentRecord,
    Problem,
    QueryRecord,
    RankingRecord,
    RunRecord,
    StatusRecord,
    UnjudgedRecord,
    Where,
    describe_problems,
)
from .trec import parse_qrels, parse_scale_option, parse_topics
from .trec_set import read_trec_set, scale_from_grades
from .writers import (
    OPTIONAL_SETTING_DEFAULTS,
    SETTING_DEFAULTS,
    bundle_lines,
    collection_object,
    dumps_bundle,
    dumps_trec_qrels,
)

__all__ = [
    "BUNDLE_FORMAT",
    "MAX_ID_LENGTH",
    "MAX_INT",
    "MAX_LISTED",
    "MAX_SMALL_INT",
    "OPTIONAL_SETTING_DEFAULTS",
    "QRELS_UNJUDGED_SOURCE",
    "SETTING_DEFAULTS",
    "UNJUDGED_GRADE",
    "UTF8_BOM",
    "AdjudicationRecord",
    "Bundle",
    "CollectionRecord",
    "ItemRecord",
    "JudgmentRecord",
    "Problem",
    "QueryRecord",
    "RankingRecord",
    "RunRecord",
    "StatusRecord",
    "UnjudgedRecord",
    "Where",
    "bundle_lines",
    "check_id",
    "collection_object",
    "describe_problems",
    "dumps_bundle",
    "dumps_trec_qrels",
    "parse_bundle",
    "parse_docs",
    "parse_items",
    "parse_judgments",
    "parse_qrels",
    "parse_queries",
    "parse_scale_option",
    "parse_topics",
    "read_trec_set",
    "scale_from_grades",
]
