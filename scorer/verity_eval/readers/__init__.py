"""Readers for TREC qrels, TREC runs, JSON Lines runs, statuses and unit maps.

Two paths read a TREC file. The fast one hands a regular file (one space, or one tab,
between fields; no comments; exactly 4 or 6 fields) to pyarrow's CSV reader and does the
rest with numpy. Anything it does not accept, or any defect it finds, sends the file to
the careful pure-Python reader, which splits on runs of whitespace as trec_eval does and
reports every problem with its line number. Both paths give the same result on the files
the fast one accepts.
"""

from .common import PathLike, _sniff_delimiter
from .mapping import read_mapping
from .qrels import read_qrels
from .runs import read_run, read_run_stages
from .statuses import STATUSES, Statuses, check_evidence, read_statuses
from .trec_run import _read_trec_run_fast, _read_trec_run_slow

__all__ = [
    "STATUSES",
    "PathLike",
    "Statuses",
    "_read_trec_run_fast",
    "_read_trec_run_slow",
    "_sniff_delimiter",
    "check_evidence",
    "read_mapping",
    "read_qrels",
    "read_run",
    "read_run_stages",
    "read_statuses",
]
