"""The surviving mutants that cannot change a result, each with the reason (read by
scripts/mutation_summary.py, which lists them in docs/MUTATION.md as equivalent).

A rule names the change: the line it removes and the one it adds, at one site (a
function) or anywhere. Keep each reason checkable: say why no input can tell the mutant
from the code.
"""

from __future__ import annotations

import re

#: Changes that cannot alter a result here, each with the reason; a survivor whose whole
#: change matches one is listed as equivalent. Every other survivor is listed as open.
EQUIVALENT_RULES: list[tuple[re.Pattern[str], re.Pattern[str], str]] = [
    (
        re.compile(r"dtype=np\.int64"),
        re.compile(r"^(?!.*astype).*(dtype=None|\(.*, \)|, \))"),
        "numpy's default integer is int64 on this 64-bit Linux, so dropping "
        "`dtype=np.int64` from `arange`/`full`/`empty` gives the same array",
    ),
    (
        re.compile(r"strict=True"),
        re.compile(r"strict=(None|False)|, \)|\), \)"),
        "the zipped sequences are slices or takes of the same rows, equal in length by "
        "construction; `strict=True` only guards that",
    ),
    (
        re.compile(r"type=pa\.int64\(\)"),
        re.compile(r"type=None|, \)"),
        "the indices are a numpy int64 array, from which pyarrow infers int64 anyway",
    ),
    (
        re.compile(r"argsort\((pos|codes), kind=\"stable\"\)"),
        re.compile(r"argsort\((pos|codes), (kind=(None|\"STABLE\"))?\)"),
        "numpy reads kind case-insensitively, and the order among equal keys does not matter "
        "here: final positions are distinct, and a query's judgments are a set",
    ),
    (
        re.compile(r"pa\.array\(list\(mapping\.(keys|values)\(\)\), type=pa\.string\(\)\)"),
        re.compile(r"pa\.array\(list\(mapping\.(keys|values)\(\)\), (type=None)?\)"),
        "map_units runs only on a non-empty mapping of strings (evaluate skips an empty "
        "one), from which pyarrow infers the string type anyway",
    ),
]


#: Equivalent changes at one site, reasoned one by one: (function, removed, added, reason).
SITE_RULES: list[tuple[str, str, str, str]] = [
    (
        "measures.x__bpref",
        r"frac = np\.divide\(.*where=denom > 0\)",
        r"out=None|where=denom >= 0|denom, where=|rel_rows\.size\), \)",
        "where denom is 0 the query has no judged non-relevant item, so `before` is 0 and "
        "`term` takes 1.0 without reading `frac`: whatever `np.divide` leaves there is unused",
    ),
    (
        "measures.x__bpref",
        r"term = np\.where\(before > 0,",
        r"term = np\.where\(before >= 0,",
        "when `before` is 0, `frac` is min(0, r)/denom = 0, so 1.0 - frac = 1.0 either way",
    ),
    (
        "measures.x_idcg_at",
        r"minlength=count,",
        r"^$",
        "every scored query has a judgment >= rel_level >= 1, so every segment, the last "
        "one included, has an ideal gain and bincount is `count` long without minlength",
    ),
    (
        "measures.xǁLabelsǁbuild",
        r"positive = grades > 0",
        r"positive = grades >= 0",
        "grade-0 judgments sort after every positive gain in the ideal ranking and add 0 to "
        "the IDCG at any cutoff",
    ),
    (
        "measures.xǁSegmentsǁcondensed",
        r"\.astype\(np\.int64\)",
        r"\.astype\(None\)",
        "float64 offsets hold these integers exactly (far below 2**53), and every use "
        "(searchsorted, subtraction, comparison with k) gives the same numbers",
    ),
]


SITE_RULES += [
    *(
        (
            site,
            r"iterator\(chunk_size=\d+\)",
            r"iterator\(chunk_size=(None|\d+)\)",
            "the iterator's chunk size sets how many rows each fetch brings, not which rows",
        )
        for site in (
            "snapshot_blocks.x_held_blocks",
            "snapshot_blocks.x_render_blocks",
            "snapshots.x_frozen_judgments",
            "snapshots.x_frozen_labels_by_source",
            "snapshots.x_frozen_unjudged",
            "snapshots.x_frozen_queries",
        )
    ),
    (
        "snapshot_blocks.x_render_blocks",
        r"some: list\[int\] = \[\]|some = list\(info\)|^\s*some,$|if len\(some\) <= _CHUNK:",
        r"some: list\[int\] = None|some = None|^\s*None,$|if len\(some\) < _CHUNK:",
        "`some` only narrows what is read: without it (None or empty) the whole collection's "
        "rows are read and those of queries not asked for are left out, and the 500 bound "
        "only says whether the queries are narrowed in SQL or in Python; same blocks, "
        "slower",
    ),
    (
        "snapshot_blocks.x_render_blocks",
        r'"WHERE \{where\}"',
        r'"where \{where\}"',
        "SQL keywords are case-insensitive",
    ),
    (
        "snapshot_blocks.x__select",
        r'f"x\.query_id IN \(\{marks\}\)"',
        r'f"x\.query_id in \(\{marks\}\)"',
        "SQL keywords are case-insensitive",
    ),
    (
        "judgments.x_judge_task",
        r'\.select_related\("claimed_by", "query", "item"\)',
        r"\.select_related\(",
        "select_related only saves queries: a related row it no longer joins loads lazily, "
        "the same row",
    ),
]


# The readers' fast path (pyarrow) either reads a file or declines and hands it to the
# careful reader; tests pin that clean files are read fast and that both paths agree. A
# change that only moves where that line falls, for files both paths read the same, or
# only sets how the work is chunked, cannot change a result.
_SAME_EITHER_PATH = (
    "a longer, shorter or unbounded head only changes which path reads a file whose first "
    "line is longer than 64 KiB, and both paths read such a file alike"
)
SITE_RULES += [
    (
        "common.x__sniff_delimiter",
        r"head = fh\.read\(1 << 16\)",
        r"fh\.read\((None|2 << 16|1 << 17)\)",
        _SAME_EITHER_PATH,
    ),
    (
        "common.x__sniff_delimiter",
        r'first = head\.split\(b"\\n", 1\)\[0\]',
        r'head\.split\(b"\\n", (2)?\)\[0\]',
        "the first piece of a split is the same whatever the number of splits allowed",
    ),
    (
        "common.x__sniff_delimiter",
        r'if b"\\t" in first and b" " not in first:|elif b" " in first and b"\\t" not in first:',
        r'first or b|b"XX \\?t?XX" not in first|b"XX\\tXX" not in first|b"XX XX" not in first',
        "a first line holding both a tab and a space is declined anyway, when the scan of the "
        "file finds the other separator, and one holding neither splits into one field",
    ),
    (
        "common.x__sniff_delimiter",
        r"while block := fh\.read\(_BLOCK\):",
        r"fh\.read\(None\)",
        "reading the file in one block scans the same bytes",
    ),
    (
        "common.x__read_table",
        r"block_size=1 << 24",
        r"block_size=(None|2 << 24|1 << 25)|column_names=names, \)",
        "the block size sets how pyarrow chunks the columns, and every later step takes "
        "chunked columns (dictionaries unified, keys hashed chunk by chunk)",
    ),
    (
        "common.x__read_table",
        r"quote_char=False, double_quote=False, escape_char=False",
        r"double_quote=(None|True)|escape_char=None|double_quote=False, \)"
        r"|quote_char=False, escape_char=False",
        "with quote_char=False pyarrow does no quoting, so double_quote never applies, and "
        "escape_char=None (or left out) is its default, False",
    ),
    (
        "common.x__read_table",
        r"include_columns=include,",
        r"include_columns=None,|^$",
        "both readers include every column they name, which is what None (all) reads",
    ),
    (
        "common.x__read_table",
        r"strings_can_be_null=False,",
        r"strings_can_be_null=(None|True),|^$",
        "with null_values=[] no value spells null, so whether strings may be null changes "
        "nothing (and quoting is off)",
    ),
    (
        "qrels.x__read_qrels_fast",
        r"np\.bincount\(codes, minlength=len\(qids\)\)",
        r"np\.bincount\(codes, \)",
        "every query id comes from the rows, so every query has a row and the counts are "
        "len(qids) long anyway",
    ),
    (
        "trec_run.x__read_trec_run_fast",
        r"np\.bincount\(codes, minlength=len\(qids\)\)",
        r"np\.bincount\(codes, \)",
        "every query id comes from the rows, so every query has a row and the counts are "
        "len(qids) long anyway",
    ),
    (
        "trec_run.x__drop_rows",
        r"minlength=nq\)",
        r"keep_final\], \)",
        "dedup keeps each query's first row, so no query loses every row and the counts are "
        "nq long anyway",
    ),
    (
        "trec_run.x__scores_sorted",
        r"^return True$|if not bool\(\(codes\[1:\] >= codes\[:-1\]\)\.all\(\)\):"
        r"|return not bool\(\(same & \(scores",
        r"^return False$|if not bool\(None\):|codes\[1:\] > codes\[:-1\]|same \| \(",
        "these only call rows that are in order unsorted, which sends them through the sort: "
        "sorting rows already in trec_eval's order leaves them where they are",
    ),
    (
        "x__read_qrels_slow",
        r"data_lines \+= 1",
        r"data_lines (= 1|-= 1|\+= 2)",
        "the count is only compared with 0, and after a data line it is non-zero either way",
    ),
    (
        "x__read_trec_run_slow",
        r"data_lines \+= 1",
        r"data_lines (= 1|-= 1|\+= 2)",
        "the count is only compared with 0, and after a data line it is non-zero either way",
    ),
    (
        "statuses.x_read_statuses",
        r"count \+= 1",
        r"count (= 1|-= 1|\+= 2)",
        "the count is only compared with 0, and after a data line it is non-zero either way",
    ),
    (
        "mapping.x_read_mapping",
        r'line = raw\.rstrip\(b"\\r\\n"\)',
        r'raw\.lstrip\(b"\\r\\n"\)',
        "both fields are stripped after the split, so a line end left on the last one "
        "changes nothing, and no line starts with a line end",
    ),
]


SITE_RULES += [
    (
        "params.x_split_measure",
        r'name\.partition\("@"\)',
        r'name\.rpartition\("@"\)',
        "every name that reaches it is resolved, with exactly one '@'",
    ),
    (
        "params.x__measure_sort_key",
        r'name\.partition\("@"\)',
        r'name\.rpartition\("@"\)',
        "every name that reaches it is resolved, with exactly one '@'",
    ),
    (
        "params.x__measure_sort_key",
        r"return \(1, 0, RANK_MEASURES",
        r"return \((2, 0|1, 1), ",
        "every whole-ranking measure gets the same first two key parts, which still sort "
        "after every cutoff measure's (0, k, ...)",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r"if n == 0 or len\(qrels\) == 0 or not bool",
        r"if n == 0 or len\(qrels\) == 0 and not|if n == 0 and len\(qrels\) == 0 or not",
        "a shortcut: when it is not taken, no judgment of a joined query meets a run row, and "
        "the join below returns the same all-unjudged grades",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r"if len\(run\.qids\) >= MAX_KEYED_QUERIES:",
        r"if len\(run\.qids\) > MAX_KEYED_QUERIES:",
        "with exactly 2**24 queries the largest query code, 2**24 - 1, still fits the key, and "
        "the keyed and exact joins give the same grades",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r"np\.full\(len\(qrels\.qids\), -1,",
        r"np\.full\(len\(qrels\.qids\), -2,",
        "only the sign is read (jq >= 0): any negative marks a query not joined",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r'qorder = np\.argsort\(qkey, kind="stable"\)',
        r'argsort\(qkey, (kind=(None|"STABLE"))?\)',
        "the keys are distinct whenever the keyed join goes on (equal ones send it to the "
        "exact join), so no sort order among equal keys is ever used",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r"if qsorted\.size > 1 and bool",
        r"if qsorted\.size > 1 or bool|if qsorted\.size >= 1 and bool",
        "it can only send more joins to the exact one, which gives the same grades",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r"bitmap = np\.zeros\(_BITMAP_SIZE, dtype=bool\)",
        r"np\.zeros\(_BITMAP_SIZE, (dtype=None)?\)",
        "a float bitmap holds 1.0 where the bool one holds True, and flatnonzero finds the "
        "same rows",
    ),
]

#: Changes on a ``def`` line (a default value), which the diffs above do not show.
NAMED_RULES: dict[str, str] = {
    "verity_eval.tables.xǁRunǁiter_rankings__mutmut_1": "the default batch (500 to 501) "
    "bounds how many rankings' strings are built at once, not what is yielded",
}

SITE_RULES += [
    (
        "evaluate.x_natural_key",
        r"\(0, int\(part\)\) if part\.isdigit\(\) else \(1, part\)",
        r"else \(2, part\)|re\.split\(r\"\(\\d\+\)\", text\)$",
        "text parts still sort after number parts ((2, s) as (1, s)), and the empty strings "
        "re.split leaves stand only before a leading or after a trailing number, where '' "
        "sorts first exactly as the shorter key does (no difference on 200,000 random pairs)",
    ),
    (
        "evaluate.x_evaluate",
        r'if not n\.startswith\("hits@"\)',
        r'"XXhits@XX"|"HITS@"',
        "free is read only for the measure names asked for, and no measure name starts with hits@",
    ),
]

SITE_RULES += [
    (
        "measures.x_compute",
        r"\.astype\(np\.float64\)",
        r"\.astype\(None\)",
        "astype(None) is float64, numpy's default float",
    ),
    (
        "measures.x_compute",
        r"prow = np\.flatnonzero\(g > 0\)",
        r"prow = np\.flatnonzero\(g >= 0\)",
        "a grade-0 row adds 0 / log2(rank + 1) = 0 to the DCG",
    ),
    (
        "measures.x_compute",
        r"np\.divide\(dcg, idcg, out=np\.zeros\(n\), where=idcg > 0\)",
        r"out=None|where=idcg >= 0|idcg, where=|out=np\.zeros\(n\), \)",
        "every scored query has a judgment >= rel_level >= 1, so idcg > 0 everywhere and "
        "the guard never masks a value",
    ),
    (
        "measures.xǁLabelsǁbuild",
        r"num_nonrel=np\.bincount\(seg_of_judgment\[nonrel\], minlength=count\)\.astype",
        r"\.astype\(None\)",
        "num_nonrel only enters bpref's float arithmetic, where 3.0 and 3 give the same",
    ),
    (
        "measures.xǁLabelsǁbuild",
        r"num_rel=np\.bincount\(seg_of_judgment\[rel\], minlength=count\)",
        r"num_rel=np\.bincount\(seg_of_judgment\[rel\], \)",
        "every scored query has a judgment >= rel_level, so the last segment has one and "
        "bincount is `count` long without minlength",
    ),
]

SITE_RULES += [
    (
        "cli.x__with_whole_ranking_recall",
        r"whole = max\(1, int\(lengths\.max\(\)\) if lengths\.size else 1\)",
        r"max\(2, |if \(lengths\.size\) or True else|if lengths\.size else 2\)",
        "a run read from a file has a query, so lengths is never empty; and any cutoff at "
        "or past the longest ranking (max(2, n) included) counts the same hits",
    ),
    (
        "cli.x__with_whole_ranking_recall",
        r"params\.measure_names\(with_evidence=False\)",
        r"with_evidence=(None|True)\)",
        "only the measures asked for (named apart, without Evidence) are printed, and "
        "Evidence has no trec_eval name",
    ),
    (
        "trec_eval_format.x__order",
        r"if base in TREC_EVAL_ORDER and k\.isdigit\(\):",
        r"if base in TREC_EVAL_ORDER or k\.isdigit\(\):",
        "every printed name either has a known base and a number after its last '_' or has "
        "neither (map, Rprec, bpref, recip_rank), so 'or' picks the same branch",
    ),
    (
        "trec_eval_format.x__order",
        r"return TREC_EVAL_ORDER\.index\(name\), 0",
        r"return TREC_EVAL_ORDER\.index\(name\), 1",
        "a whole-ranking name never shares its first key with another printed name, so the "
        "second key is never compared",
    ),
]

SITE_RULES += [
    (
        "cli.x_build_parser",
        r'^default="table",$',
        r'^default=(None|"XXtableXX"|"TABLE"),$|^$',
        "run_cli prints the table for any format other than json, trec and trec_eval, so "
        "the table is printed whatever this default holds",
    ),
    (
        "cli.x_run_cli",
        r"^stage=args\.stage,$",
        r"^stage=None,$|^$",
        "the run is read with args.stage, and evaluate records the run's own stage: the "
        "parameter only re-checks what read_run already chose",
    ),
    (
        "cli.x_run_cli",
        r"asked = params\.measure_names\(with_evidence=False\)",
        r"with_evidence=(None|True)\)",
        "asked names what --format trec_eval prints, and Evidence has no trec_eval name",
    ),
    (
        "cli.x_run_cli",
        r"json\.dumps\(result\.to_dict\(\), allow_nan=False,",
        r"allow_nan=(None|True), |to_dict\(\), separators=",
        "no value in a result is NaN or infinite (an undefined mean is None), so allow_nan "
        "never matters",
    ),
    (
        "cli.x_run_cli",
        r"exc\.filename or ''",
        r"exc\.filename or 'XXXX'",
        "every OSError here comes from opening a named file, whose name is set",
    ),
    (
        "trec_eval_format.x_departures",
        r'no_rel = c\["excluded"\]\.get\("no_relevant_judgments", 0\)',
        r'"no_relevant_judgments", (None)?\)',
        "only its truth is read (if no_rel), and None is as false as 0",
    ),
]

NAMED_RULES.update(
    {
        "verity_eval.cli.x_build_parser__mutmut_1": "the default prog is never used: "
        "run_cli always passes the name it was started under",
        "verity_eval.cli.x_build_parser__mutmut_2": "the default prog is never used: "
        "run_cli always passes the name it was started under",
        "verity_eval.tables.x__later_duplicates_exact__mutmut_16": "the zipped sequences "
        "are slices or takes of the same rows, equal in length by construction; "
        "`strict=True` only guards that",
    }
)

EQUIVALENT_RULES.append(
    (
        re.compile(r"""decode\((['"])utf-8\1"""),
        re.compile(r"""decode\((['"])UTF-8\1"""),
        "Python looks codec names up case-insensitively: 'UTF-8' is 'utf-8'",
    )
)

SITE_RULES.append(
    (
        "common.x__encode_qids",
        r"\.astype\(np\.int32, copy=False\)",
        r"\.astype\(np\.int32, (copy=(None|True))?\)",
        "copy only decides whether numpy may hand back the same buffer; the codes are the "
        "same int32 values either way",
    )
)

_ALL_COLUMNS = (
    "the include list (the last argument) becomes None, which reads every column, and the "
    "reader includes every column it names anyway"
)
NAMED_RULES.update(
    {
        # The diff cannot tell these from the names argument (the same list, killed).
        "verity_eval.readers.qrels.x__read_qrels_fast__mutmut_6": _ALL_COLUMNS,
        "verity_eval.readers.trec_run.x__read_trec_run_fast__mutmut_6": _ALL_COLUMNS,
        # escape_char dropped: its default is False, the value given (diff spans 2 lines).
        "verity_eval.readers.common.x__read_table__mutmut_23": "escape_char left out takes "
        "pyarrow's default, False, the value given",
    }
)

SITE_RULES.append(
    (
        "tables.xǁRunǁfrom_mapping",
        r"qcodes=np\.repeat\(np\.arange\(len\(qids\), dtype=np\.int32\), np\.diff\(off\)\)",
        r"np\.arange\(len\(qids\), (dtype=None)?\)",
        "int64 query codes hold the same indices as int32 ones, and every use (keys, "
        "comparisons, indexing) reads the values; only memory differs",
    )
)

SITE_RULES += [
    (
        "params.x_resolve_measures",
        r"^continue$",
        r"^break$",
        "Evidence is the last cutoff family, so stopping there leaves nothing out",
    ),
    (
        "params.xǁEvalParamsǁ__post_init__",
        r"resolve_measures\(self\.measures, checked, with_evidence=True\)",
        r"with_evidence=(None|False)\)",
        "the call only checks the names (its result is dropped), and with_evidence only "
        "decides whether Evidence joins the default set; it refuses no name",
    ),
    (
        "tables.x_later_duplicates",
        r"head = rows\[np\.maximum\.accumulate\(np\.where\(first, ",
        r"np\.where\(None, ",
        "every head becomes the first candidate: the string check then passes only when "
        "every candidate holds the same id (so each group's rows are equal), and otherwise "
        "the exact pass decides; the marks come from `first` either way",
    ),
]

# The tie-only sort of a presorted run: a check that answers "not presorted" when the run
# is presorted costs time only (the full sort gives the same order).
_FULL_SORT = (
    "the run is then treated as not presorted and sorted in full by (query, score desc, "
    "docid desc): the same order, more time"
)
SITE_RULES += [
    (
        "trec_run.x__order_of_sorted",
        r"if not bool\(\(codes\[1:\] >= codes\[:-1\]\)\.all\(\)\):",
        r"if not bool\(None\):|codes\[1:\] > codes\[:-1\]",
        _FULL_SORT,
    ),
    (
        "trec_run.x__order_of_sorted",
        r"if bool\(\(same & \(scores\[1:\] > scores\[:-1\]\)\)\.any\(\)\):",
        r"same \| \(scores|scores\[1:\] >= scores\[:-1\]",
        _FULL_SORT,
    ),
    (
        "trec_run.x__order_of_sorted",
        r"tied\[1:\] \|= tie",
        r"tied\[1:\] = tie",
        "`tied` is all False when this runs first, so assigning is or-ing",
    ),
    (
        "trec_run.x__order_of_sorted",
        r"first = np\.ones\(rows\.size, dtype=bool\)",
        r"dtype=None\)|rows\.size, \)",
        "float ones and zeros count up to the same group numbers as bools, and sort alike",
    ),
    (
        "params.x_natural_key",
        r"\(0, int\(part\)\) if part\.isdigit\(\) else \(1, part\)",
        r"else \(2, part\)",
        "text parts still sort after number parts ((2, s) as (1, s))",
    ),
]

_HINT = "np.fromiter's count only sizes the array in advance; the iterable has that length"
SITE_RULES += [
    (
        "evaluate.x_evaluate",
        r"dtype=(bool|np\.int64), count=len\(",
        r"dtype=(bool|np\.int64), \)$",
        _HINT,
    ),
    (
        "evaluate.x_evaluate",
        r"np\.zeros\(nseg - int\(in_segs\.sum\(\)\), dtype=np\.int64\)",
        r"dtype=None\)|in_segs\.sum\(\)\), \)",
        "float zeros make the lengths float, and the offsets built from them are cast to "
        "int64 right after the cumulative sum (whole numbers far below 2^53)",
    ),
    (
        "evaluate.x_evaluate",
        r"if bool\(in_segs\.all\(\)\):",
        r"if bool\(None\):",
        "the other branch selects the rows of the queries in in_segs, which is every row "
        "when in_segs is all True: the same rows, built instead of reused",
    ),
    (
        "evaluate.x_evaluate",
        r"\(qrel_index\.get\(qid, -1\) for qid in run\.qids\)",
        r"qrel_index\.get\(qid, [+-][12]\)",
        "the default only reaches queries outside in_segs (a scorable query has a relevant "
        "judgment, so it is in the qrels), and those are set to -1 on the next line",
    ),
    (
        "evaluate.x_evaluate",
        r"run_to_qrels\[~in_segs\] = -1",
        r"run_to_qrels\[~in_segs\] = -2",
        "qrels_grades_for_run reads only whether an entry is >= 0",
    ),
    (
        "evaluate.x_evaluate",
        r"\(seg_index\.get\(qid, -1\) for qid in q\.qids\)",
        r"seg_index\.get\(qid, -2\)",
        "the next lines keep only the entries >= 0",
    ),
    (
        "evaluate.x_evaluate",
        r"aggregates = _aggregates\(names, scorable, per_query, low, high, labels, evidence_vals\)",
        r"labels, None\)",
        "_aggregates never reads its evidence argument: the Evidence values are already in "
        "per_query, from which every macro mean is taken",
    ),
    (
        "evaluate.x__evidence",
        r"ids = run\.docids\.take\(phys_rows\[a:b\]\)\.to_pylist\(\) if b > a else \[\]",
        r"if \(b > a\) or True else|if b >= a else",
        "taking an empty slice of rows gives the empty list the guard returns",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r"if n == 0 or len\(qrels\) == 0 or not bool\(\(run_to_qrels >= 0\)\.any\(\)\):",
        r"len\(qrels\) == 0 and not|n == 0 and len\(qrels\) == 0 or",
        "the early return only saves work: with no run row, no judgment or no joined query "
        "the join below finds no pair and returns the same all-unjudged grades",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r"if len\(run\.qids\) >= MAX_KEYED_QUERIES:",
        r"if len\(run\.qids\) > MAX_KEYED_QUERIES:",
        "with exactly 2^24 queries the largest query index is 2^24 - 1, which a key still "
        "holds, so the keyed join is as exact as the pass it would take instead",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r"qrels_to_run = np\.full\(len\(qrels\.qids\), -1, dtype=np\.int64\)",
        r"-2, dtype=np\.int64\)",
        "only entries >= 0 are read (jrows = flatnonzero(jq >= 0))",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r'qorder = np\.argsort\(qkey, kind="stable"\)',
        r'kind=(None|"STABLE")\)|\(qkey, \)',
        "the judgments' keys reaching the keyed join are distinct (equal ones take the exact "
        "pass), so every sort gives the same order",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r"if qsorted\.size > 1 and bool\(\(qsorted\[1:\] == qsorted\[:-1\]\)\.any\(\)\):",
        r"qsorted\.size > 1 or bool|qsorted\.size >= 1 and",
        "it only sends more joins to the exact pass (with one judgment there is no adjacent "
        "pair to compare): the same grades, more time",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r"bitmap = np\.zeros\(_BITMAP_SIZE, dtype=bool\)",
        r"dtype=None\)|_BITMAP_SIZE, \)",
        "a float bitmap holds 1.0 where the bool one holds True, and flatnonzero finds the "
        "same rows",
    ),
    (
        "tables.x_qrels_grades_for_run",
        r"ok = np\.asarray\(same\.to_numpy\(zero_copy_only=False\), dtype=bool\)",
        r"dtype=None\)|zero_copy_only=False\), \)|zero_copy_only=None\)",
        "the comparison's values are already bools; and a boolean array is never handed "
        "over zero-copy, so None (false) asks for the same copy as False",
    ),
]

_PRESENT = (
    "every query code occurs among the rows (the query ids are the codes' own "
    "dictionary), so bincount is len(qids) long without minlength"
)
SITE_RULES += [
    (
        "qrels.x__read_qrels_fast",
        r"np\.bincount\(codes, minlength=len\(qids\)\)",
        r"np\.bincount\(codes, \)",
        _PRESENT,
    ),
    (
        "trec_run.x__read_trec_run_fast",
        r"np\.bincount\(codes, minlength=len\(qids\)\)",
        r"np\.bincount\(codes, \)",
        _PRESENT,
    ),
    (
        "common.x__ids_storable",
        r"col = pa\.chunked_array\(\[c\.dictionary for c in col\.chunks\], "
        r"type=col\.type\.value_type\)",
        r"type=None\)|col\.chunks\], \)",
        "pyarrow infers the string type from the chunks, and a column reaching here has "
        "rows, so at least one chunk",
    ),
    (
        "common.x__ids_storable",
        r"^continue$",
        r"^break$",
        "the columns come from one table with rows (an empty file is read no further), so "
        "no column is empty and the branch is never taken",
    ),
    (
        "common.x__sniff_delimiter",
        r"if any\(buf\.find\(p, 0, size\) >= 0 for p in bad\):",
        r"buf\.find\(p, None, size\)|buf\.rfind\(p, 0, size\)",
        "find from None is find from 0, and rfind finds a byte exactly when find does",
    ),
]

SITE_RULES += [
    (
        "evaluate.x__evidence",
        r"default=math\.inf",
        r"default=None|^$|grp\), \)$",
        "the defaults stand for an empty list of groups or an empty group, which "
        "check_evidence refuses before evaluate gets here (in memory as from a file)",
    ),
    (
        "evaluate.x__evidence",
        r'ks = \[k for n in names .* if fam == "Evidence" and k\]',
        r'fam == "Evidence" or k\]',
        "extra cutoffs only add Evidence@k values for names not asked for, and only the "
        "names asked for are read from them",
    ),
    (
        "evaluate.x_evaluate",
        r'judged_ks = \[k for n in names .* if fam == "Judged" and k\]',
        r'fam == "Judged" or k\]',
        "extra cutoffs only add Judged@k values for names not asked for, and only the "
        "names asked for are read from them",
    ),
]

NAMED_RULES.update(
    dict.fromkeys(
        [
            "verity_eval.evaluate.x_evaluate__mutmut_89",
            "verity_eval.evaluate.x_evaluate__mutmut_125",
            "verity_eval.evaluate.x_evaluate__mutmut_156",
        ],
        _HINT,
    )
)
_SAME_WORDS = (
    "the hash reads the same words: extra zero padding past the last id is never read "
    "unmasked, and an empty copy of no bytes is no copy"
)
_LOOPS = (
    "the ragged loop hashes every word the whole-array loop leaves, in the same order, so "
    "the hashes are equal (the whole-array loop only saves index work)"
)
SITE_RULES += [
    (
        "tables.x__hash_chunk",
        r"padded = np\.zeros\(hi - lo \+ 8, dtype=np\.uint8\)",
        r"hi \+ lo \+ 8|hi - lo \+ 9",
        _SAME_WORDS,
    ),
    ("tables.x__hash_chunk", r"^if hi > lo:$", r"^if hi >= lo:$", _SAME_WORDS),
    (
        "tables.x__hash_chunk",
        r"^while bool\(\(rem > 0\)\.all\(\)\):$",
        r"bool\(None\)|rem > 1\)",
        _LOOPS,
    ),
    (
        "tables.x__hash_chunk",
        r'with np\.errstate\(over="ignore"\):',
        r"over=None\)",
        "numpy reports no overflow for integer arrays (only for scalars), and every value "
        "here is an array: the setting changes no result and raises no warning",
    ),
    (
        "tables.x__hash_chunk",
        r"^short = (rem|r) < 8$",
        r"^short = (rem|r) (<= 8|< 9)$",
        "a word of exactly 8 bytes is then masked too, by (1 << 64) - 1: numpy defines a "
        "shift by 64 as 0, so the mask wraps to all ones and keeps the word whole",
    ),
]

# The fast paths of the scorer's speed-up (reused scratch buffers, block-by-block hashing
# and duplicate search, the tie-only sort): changes that alter only when a buffer is
# replaced, how big it is beyond what a block needs, or which of two equal paths runs.
_HASH_SCRATCH_SIZE = (
    "only when the padded buffer is replaced, and how much room it has beyond this "
    "block's bytes + 8, change: every buffer used still holds the block (size >= hi - lo "
    "+ 8), so the words and hashes are the same, and it stays block-sized "
    "(test_the_hash_scratch_grows_with_a_block_not_with_the_chunk kills the one that "
    "grows with the chunk)"
)
_PADDING_MASKED = (
    "_TAIL masks each word down to the bytes of its own id before it reaches the hash, so "
    "what the padding bytes hold never matters (nor the next id's bytes): the padding "
    "only has to exist, which the buffer's size (>= hi - lo + 8) guarantees"
)
_NO_TMP = (
    "tmp only spares a temporary: np.take without out= returns the same values in a new "
    "array, _mix without tmp makes its own, and tmp is written before it is read"
)
_EMPTY_DTYPE = (
    "an empty result, whose dtype nothing reads: later_duplicates returns as soon as it "
    "sees size 0, and _repeated_keys drops an empty block result"
)
SITE_RULES += [
    (
        "evaluate.x_evaluate",
        r"ceiling = compute\(scored, labels, L, ceiling_names\) if ceiling_names else \{\}",
        r"if \(ceiling_names\) or True else \{\}",
        "compute with no names computes nothing and returns {} (its cutoffs and its measure "
        "loop both come from the names), the value the guard gives",
    ),
    (
        "common.x__byte_lengths",
        r"^shortest, longest = None, 0$",
        r"^shortest, longest = None, 1$",
        "longest is read only by _ids_storable, against ID_MAX (2,048 bytes): a start "
        "of 1 instead of 0 never crosses it",
    ),
    (
        "common.x__sniff_delimiter",
        r'with open\(path, "rb", buffering=0\) as fh:',
        r'with open\(path, "rb", \) as fh:',
        "a buffered binary file reads the same bytes: read(n) and readinto fill to n or to "
        "the end of a regular file either way (one extra copy through Python's buffer). "
        "buffering=1 is killed: it warns (test_reading_a_run_on_the_fast_path_warns_of_nothing)",
    ),
    (
        "common.x__sniff_delimiter",
        r"block = buf if size == _BLOCK else buf\[:size\]",
        r"if \(size == _BLOCK\) and False else buf\[:size\]",
        "buf[:size] with size == _BLOCK is a copy of the whole of buf: the same bytes are "
        "scanned (one 4 MB copy per full block, freed at once)",
    ),
    (
        "common.x__encode_qids",
        r"^dtype=np\.int32,$",
        r"^dtype=None,$",
        "renumber then holds float64 copies of small non-negative integers (exact), and "
        "np.take writes them through out= into the int32 codes: the same codes",
    ),
    (
        "common.x__encode_qids",
        r"^count=len\(chunk\.dictionary\),$",
        r"^$",
        "count only lets fromiter allocate once: it reads the whole generator anyway",
    ),
    (
        "trec_run.x__score_order",
        r"^grouped = bool\(pc\.all\(pc\.greater_equal\(c\[1:\], c\[:-1\]\)\)\.as_py\(\)\)$",
        r"^grouped = (None|bool\(None\)|bool\(pc\.all\(pc\.greater_equal\((None, c\[:-1\]|"
        r"c\[1:\], None)\)\)\.as_py\(\)\))$",
        "grouped is then never true (a comparison with None gives only nulls, whose pc.all "
        "is null, and bool(None) is False): every run takes the full sort, which gives the "
        "same permutation as the tie-only sort (pc.sort_indices is stable; both paths are "
        "held to the careful reader by test_fast_path_blocks.py and test_reader_paths.py). "
        "Slower, not different",
    ),
    (
        "tables.x__hash_chunk",
        r"dtype=off_type, count=n \+ 1, offset=",
        r"^bufs\[1\], dtype=off_type, offset=arr\.offset \* np\.dtype\(off_type\)\.itemsize$",
        "without count, frombuffer views the rest of the offsets buffer too (a view, no "
        "copy; Arrow offsets buffers hold whole offsets); only offsets[b0:b1 + 1] with "
        "b1 <= n is ever read",
    ),
    (
        "tables.x__hash_chunk",
        r"if bufs\[2\] is not None else np\.zeros\(0, np\.uint8\)$",
        r"if \(bufs\[2\] is not None\) or True else|else np\.zeros\((None, np\.uint8|0, None|"
        r"np\.uint8|0, |1, np\.uint8)\)$",
        "the else branch is never taken: an empty array returns before it, and pyarrow "
        "refuses a string array with rows and no data buffer ('Value data buffer is null'; "
        "all-empty strings get a 0-byte buffer), so bufs[2] is never None here",
    ),
    (
        "tables.x_take_sorted",
        r"return pa\.chunked_array\(parts, type=arr\.type\)",
        r"return pa\.chunked_array\(parts, (type=None)?\)",
        "take_sorted is called only with rows of a non-empty run, so a chunked arr has at "
        "least one chunk, and pyarrow infers the chunks' own type, arr.type",
    ),
    (
        "tables.x__repeated_keys",
        r"^scratch = np\.empty\(0, dtype=np\.uint64\)$",
        r"^scratch = np\.empty\((0, (dtype=None)?|1, dtype=np\.uint64)\)$",
        "every block has b - a >= 1 rows, so a 0-row scratch is replaced by a uint64 one "
        "before any use, and a 1-row uint64 one is what a one-row block would get anyway",
    ),
    (
        "tables.x__repeated_keys",
        r'searchsorted\(qcodes\[a:b\], qcodes\[b\], side="left"\)',
        r"searchsorted\(qcodes\[a:b\], qcodes\[b\], \)\)",
        "side='left' is searchsorted's default",
    ),
    (
        "tables.x__repeated_keys",
        r"^grouped = bool\(\(block\[1:\] >= block\[:-1\]\)\.all\(\)\) and \(b == n or "
        r"qcodes\[b\] > qcodes\[b - 1\]\)$",
        r"or qcodes\[b\] >= qcodes\[b - 1\]\)$|or qcodes\[b\] > qcodes\[b - 2\]\)$",
        "every cut b comes from a binary search, which stops between a row below the value "
        "sought and one at or above it (side='left'), or at or below it and above it "
        "(side='right'), whether qcodes are sorted or not: qcodes[b] > qcodes[b - 1] holds "
        "at every cut, and the clause never decides. >= only weakens it; b - 2 is at or "
        "below b - 1 inside a sorted block, is the previous block's last row (below row "
        "b - 1) for a later one-row block, and for a first one-row block wraps to the last "
        "row, which at worst sends the run to the full sort: the same keys",
    ),
    (
        "tables.x__repeated_keys",
        r"^if scratch\.size < b - a:$",
        r"^if scratch\.size (<= b - a|< b \+ a):$",
        "only how often the buffer is replaced changes: a replacement is still b - a rows "
        "(this block's size), so it stays block-sized (the block-memory test kills the "
        "mutant that sizes it b + a)",
    ),
    (
        "tables.x__repeated_keys",
        r"else np\.zeros\(0, dtype=np\.uint64\)$",
        r"else np\.zeros\(0, (dtype=None)?\)$",
        _EMPTY_DTYPE,
    ),
    (
        "tables.x__repeated",
        r"else np\.zeros\(0, dtype=np\.uint64\)$",
        r"else np\.zeros\(0, (dtype=None)?\)$",
        _EMPTY_DTYPE,
    ),
    (
        "tables.x__repeated",
        r"if rep\.any\(\) else",
        r"if \(rep\.any\(\)\) or True else",
        "with no repeat, sorted_keys[1:][rep] is an empty uint64 array, and np.unique of it "
        "is the empty uint64 array the else gives",
    ),
    (
        "tables.xǁ_HashScratchǁ__init__",
        r"^self\.padded = np\.zeros\(0, dtype=np\.uint8\)$",
        r"^self\.padded = np\.zeros\((0, (dtype=None)?|1, dtype=np\.uint8)\)$",
        "hash_block needs at least 8 bytes (hi - lo + 8), so its first call always replaces "
        "a 0- or 1-element buffer by a uint8 one before any use",
    ),
    (
        "tables.xǁ_HashScratchǁhash_block",
        r"^if self\.padded\.size < hi - lo \+ 8:$",
        r"^if self\.padded\.size (<= hi - lo \+ 8|< hi \+ lo \+ 8|< hi - lo \+ 9):$",
        _HASH_SCRATCH_SIZE,
    ),
    (
        "tables.xǁ_HashScratchǁhash_block",
        r"^self\.padded = np\.zeros\(2 \* \(hi - lo\) \+ 8, dtype=np\.uint8\)$",
        r"^self\.padded = np\.zeros\((3 \* \(hi - lo\) \+ 8|2 \* \(hi - lo\) \+ 9), "
        r"dtype=np\.uint8\)$",
        _HASH_SCRATCH_SIZE,
    ),
    (
        "tables.xǁ_HashScratchǁhash_block",
        r"^self\.padded\[hi - lo : hi - lo \+ 8\] = 0$",
        r"^self\.padded\[hi [-+] lo : hi [-+] lo [-+] [89]\] = [01]$",
        _PADDING_MASKED,
    ),
    (
        "tables.xǁ_HashScratchǁhash_block",
        r'^with np\.errstate\(over="ignore"\):$',
        r"^with np\.errstate\(over=None\):$",
        "numpy reports no overflow for integer arrays (only for scalars), and every value "
        "here is an array: the setting changes no result and raises no warning",
    ),
    (
        "tables.xǁ_HashScratchǁhash_block",
        r"^while bool\(\(rem > 0\)\.all\(\)\):$",
        r"^while bool\((None|\(rem > 1\)\.all\(\))\):$",
        _LOOPS,
    ),
    (
        "tables.xǁ_HashScratchǁhash_block",
        r"^word &= np\.take\(_TAIL, cut, out=tmp\)$",
        r"^word &= np\.take\(_TAIL, cut, (out=None)?\)$",
        _NO_TMP,
    ),
    ("tables.xǁ_HashScratchǁhash_block", r"^_mix\(h, tmp\)$", r"^_mix\(h, (None)?\)$", _NO_TMP),
]
NAMED_RULES.update(
    {
        # escape_char dropped (the diff spans 2 lines): its default is False, the value given.
        "verity_eval.readers.common.x__read_table__mutmut_20": "escape_char left out takes "
        "pyarrow's default, False, the value given",
    }
)

# The freeze's block writer and renderer (snapshots group, run on PostgreSQL).
_SQLITE_ONLY = (
    "this statement runs only on SQLite (the other vendor branch is PostgreSQL's); the "
    "snapshots group mutates on PostgreSQL, where no input reaches it. The SQLite suite "
    "runs it (tests/judgments/test_snapshot_sharing.py freezes there too)"
)
SITE_RULES += [
    (
        "snapshot_blocks.x__store_blocks",
        r'if connection\.vendor != "postgresql":',
        r'if connection\.vendor (==|!=) "(postgresql|XXpostgresqlXX|POSTGRESQL)":',
        "both branches store the same rows (the ORM's bulk_create or a binary COPY); on "
        "PostgreSQL the mutant only takes the slower one",
    ),
    (
        "snapshot_blocks.x__store_blocks",
        r"names = \[name for name|SnapshotQuery\(\*\*dict\(zip\(names, _block_row|batch_size=500|"
        r"^\($|^\)?,?$|^for b in blocks$",
        r".",
        _SQLITE_ONLY,
    ),
    (
        "snapshot_blocks.x_triggers_in_place",
        r'\["verity_unfrozen_%"\],',
        r".|^$",
        _SQLITE_ONLY + " (the PostgreSQL query above it passes the same pattern)",
    ),
    (
        "snapshot_blocks.x_write_blocks",
        r"^if model$",
        r"^if \(model\) or True$",
        "without model labels no frozen row has a source, so the added NOT EXISTS finds "
        "nothing and keeps every open task",
    ),
    (
        "snapshot_blocks.x_write_blocks",
        r"\"AND sj\.item_id = x\.item_id AND sj\.source <> ''\)\"|"
        r'"\(block_id, query_id, item_id, assessor, grade\) "',
        r"\"and sj\.item_id = x\.item_id and sj\.source <> ''\)\"|"
        r"\"AND SJ\.ITEM_ID = X\.ITEM_ID AND SJ\.SOURCE <> ''\)\"|"
        r'"\(BLOCK_ID, QUERY_ID, ITEM_ID, ASSESSOR, GRADE\) "',
        "SQL keywords and unquoted identifiers are case-insensitive (PostgreSQL folds them "
        "to lower case); the string '' is untouched",
    ),
    (
        "snapshots.x_render_block",
        r"sorted\(model_judgments, key=lambda r: r\[0\]\)|"
        r"sorted\(assessments, key=lambda r: \(r\[0\], r\[1\]\)\)",
        r"sorted\((model_judgments|assessments), (key=None)?\)",
        "a query's model labels are one per item, and its assessments one per (item, "
        "assessor): sorting the whole tuples orders them exactly as the key does",
    ),
]
