"""Summarise mutmut's results per module (called by scripts/mutate.sh).

    python scripts/mutation_summary.py var/mutate docs/MUTATION.md   # the table
    python scripts/mutation_summary.py --survivors var/mutate/engine # to try (again), one a line
    python scripts/mutation_summary.py --diffs var/mutate/engine     # each survivor's change
    python scripts/mutation_summary.py --markdown var/mutate         # docs/MUTATION.md lists

Reads every ``mutants/**/*.py.meta`` under the group folders, counts each mutant's outcome
per source module, and takes the survivors that ``docs/MUTATION.md`` lists as equivalent
(a line starting ``- `MUTANT_NAME` `` followed by the reason) out of the survivors. Prints
a Markdown table (killed includes timeouts) and the survivors that are not listed, so that
they get a test or a reason.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

# mutmut's exit codes (mutmut/stats.py): 1 and 3 killed, 0 survived, timeouts, no tests.
KILLED = {1, 3, 36, 24, -24, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}
COLUMNS = ("killed", "survived", "equivalent", "no tests", "not run")


def listed_equivalents(doc: Path) -> set[str]:
    if not doc.exists():
        return set()
    text = doc.read_text(encoding="utf-8")
    return set(re.findall(r"^- `([\w.ǁ]+__mutmut_\d+)`", text, re.M))


def outcomes(group_dir: Path) -> Iterator[tuple[str, str, int | None]]:
    """(module path, mutant name, exit code) for every mutant of one group."""
    root = group_dir / "mutants"
    for meta in sorted(root.glob("**/*.py.meta")):
        module = str(meta.relative_to(root))[: -len(".meta")]
        data = json.loads(meta.read_text(encoding="utf-8"))
        for name, code in sorted(data.get("exit_code_by_key", {}).items()):
            yield module, name, code


def survivors(group_dir: Path, *, with_untried: bool = False) -> list[str]:
    wanted = SURVIVED | NO_TESTS | ({None} if with_untried else set())
    return [n for _, n, code in outcomes(group_dir) if code in wanted]


def diffs(group_dir: Path) -> dict[str, list[str]]:
    """The changed lines of each surviving mutant: mutmut writes every mutant as a copy of
    its function (``x_NAME__mutmut_N`` beside ``x_NAME__mutmut_orig``) in mutants/."""
    wanted = set(survivors(group_dir))
    out: dict[str, list[str]] = {}
    for source in sorted((group_dir / "mutants").glob("**/*.py")):
        text = source.read_text(encoding="utf-8")
        if "__mutmut_orig" not in text:
            continue
        module = ".".join(source.relative_to(group_dir / "mutants").with_suffix("").parts)
        lines = text.splitlines()
        functions = {
            node.name: "\n".join(lines[node.lineno - 1 : node.end_lineno])
            for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in node.name
        }
        for fname, body in functions.items():
            name = f"{module}.{fname}"
            if name not in wanted:
                continue
            orig = functions[fname.rsplit("__mutmut_", 1)[0] + "__mutmut_orig"]
            strip = lambda b: [line.strip() for line in b.splitlines()[1:]]  # noqa: E731
            out[name] = [
                line
                for line in difflib.unified_diff(strip(orig), strip(body), lineterm="", n=0)
                if line[:1] in "+-" and line[:3] not in ("+++", "---")
            ]
    return out


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
    (
        "snapshots.x__live_canonical_lines",
        r"iterator\(chunk_size=\d+\)",
        r"iterator\(chunk_size=(None|\d+)\)",
        "the iterator's chunk size sets how many rows each fetch brings, not which rows",
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
        "common.x__decode",
        r'decode\("utf-8"\)',
        r'decode\("UTF-8"\)',
        "Python looks codec names up case-insensitively",
    ),
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


def classify(name: str, lines: list[str]) -> str | None:
    """The reason a change is equivalent, or None."""
    removed = [line[1:] for line in lines if line.startswith("-")]
    added = [line[1:] for line in lines if line.startswith("+")]
    if len(removed) != 1 or len(added) > 1:
        return None
    after_text = added[0] if added else ""
    for site, before, after, reason in SITE_RULES:
        site_matches = f".{site}__mutmut_" in name and re.search(before, removed[0])
        if site_matches and re.search(after, after_text):
            return reason
    if not added:
        return None
    for before_re, after_re, reason in EQUIVALENT_RULES:
        if before_re.search(removed[0]) and after_re.search(after_text):
            return reason
    return None


def markdown(root: Path) -> str:
    """The equivalent survivors grouped by reason, then the open ones with their change."""
    by_reason: dict[str, list[str]] = {}
    open_ones: list[tuple[str, list[str]]] = []
    for group_dir in sorted(p for p in root.iterdir() if (p / "mutants").is_dir()):
        for name, lines in diffs(group_dir).items():
            reason = classify(name, lines)
            if reason is None:
                open_ones.append((name, lines))
            else:
                by_reason.setdefault(reason, []).append(name)
    out = ["## Equivalent mutants", ""]
    for reason, names in by_reason.items():
        out += [f"Reason: {reason}.", ""] + [f"- `{n}`: equivalent (above)" for n in names] + [""]
    out += ["## Survivors not killed yet", ""]
    for name, lines in open_ones:
        change = " → ".join(line[1:].strip() for line in lines)[:160]
        out.append(f"* `{name}`: `{change}`")
    return "\n".join(out) + "\n"


def table(root: Path, doc: Path) -> str:
    equivalent = listed_equivalents(doc)
    rows: dict[str, Counter[str]] = {}
    unexplained: list[str] = []
    for group_dir in sorted(p for p in root.iterdir() if (p / "mutants").is_dir()):
        for module, name, code in outcomes(group_dir):
            counts = rows.setdefault(module, Counter())
            if code in KILLED:
                counts["killed"] += 1
            elif code in SURVIVED and name in equivalent:
                counts["equivalent"] += 1
            elif code in SURVIVED:
                counts["survived"] += 1
                unexplained.append(name)
            elif code in NO_TESTS:
                counts["no tests"] += 1
                unexplained.append(f"{name} (no test reaches it)")
            else:
                counts["not run"] += 1
    lines = [
        "| module | " + " | ".join(COLUMNS) + " | killed / (all - equivalent - not run) |",
        "|---|" + "---:|" * (len(COLUMNS) + 1),
    ]
    totals: dict[str, Counter[str]] = {}
    for module, counts in sorted(rows.items()):
        if not sum(counts.values()):
            continue
        area = "scoring/engine/" if module.startswith("scoring/engine/") else "services"
        totals.setdefault(area, Counter()).update(counts)
        lines.append(_row(f"`{module}`", counts))
    for area, counts in totals.items():
        lines.append(_row(f"**{area} total**", counts))
    out = "\n".join(lines) + "\n"
    if unexplained:
        out += f"\n{len(unexplained)} survivors not listed as equivalent in {doc}:\n"
        out += "".join(f"  {name}\n" for name in unexplained)
    return out


def _row(label: str, counts: Counter[str]) -> str:
    tried = sum(counts[c] for c in COLUMNS if c not in ("equivalent", "not run"))
    score = f"{counts['killed'] / tried:.1%}" if tried else "—"
    return f"| {label} | " + " | ".join(str(counts[c]) for c in COLUMNS) + f" | {score} |"


if __name__ == "__main__":
    if sys.argv[1] == "--survivors":
        print("\n".join(survivors(Path(sys.argv[2]), with_untried=True)))
    elif sys.argv[1] == "--markdown":
        print(markdown(Path(sys.argv[2])), end="")
    elif sys.argv[1] == "--diffs":
        for name, lines in diffs(Path(sys.argv[2])).items():
            print(name)
            print("".join(f"    {line}\n" for line in lines), end="")
    else:
        print(table(Path(sys.argv[1]), Path(sys.argv[2])), end="")
