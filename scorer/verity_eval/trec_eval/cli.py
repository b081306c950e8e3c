"""``verity-trec-eval``: trec_eval 10's command line and output, byte for byte.

``verity-trec-eval [-q] [-c] [-n] [-J] [-l N] [-M N] [-N N] [-D N[.qid]] [-m measure[.params]]...
QRELS RUN`` (``-`` or any name starting with ``-`` for the run: standard input), the long
options of trec_eval too, options anywhere (GNU getopt), ``-Z FILE`` (z-scores). Refused
with a message and status 2: ``-R`` other than ``qrels`` (prefs, qrels_prefs, qrels_jg),
``-T`` other than ``trec_results``, a debug level above 0, and the preference and
judgment-group measures. ``-h`` prints this program's own help, not trec_eval's.
"""

from __future__ import annotations

import getopt
import itertools
import math
import sys

import numpy as np
import pyarrow as pa

from .inputs import InputError, forget_file_checks, read_qrels, read_run
from .measures import NICKNAMES, REFUSED_NAMES, TABLE, Context, MeasureError, level_tables
from .rankings import rank, rank_read, read_partitioned, read_ranked

VERSION = "10.0-rc3"
USAGE = """Usage: trec_eval [-h] [-q] {-m measure}* trec_rel_file trec_top_file
   -h: Give full help information, including other options
   -q: In addition to summary evaluation, give evaluation for each query
   -m: calculate and print measures indicated by 'measure'
       ('-m all_qrels' prints all qrels measures, '-m official' is default)
"""
HELP = (
    __doc__
    + """
Measures (trec_eval's names and parameters): """
    + " ".join(m.name for m in TABLE)
    + """
Nicknames: official (the default), set, all_trec.
"""
)
LONG = [
    "help", "version", "query_eval_wanted", "measure=", "complete_rel_info_wanted",
    "level_for_rel=", "nosummary", "Debug_level=", "Judged_docs_only",
    "Number_docs_in_coll=", "Max_retrieved_per_topic=", "Rel_info_format=",
    "Results_format=", "Output_old_results_format", "Zscore=",
]  # fmt: skip
LONG_TO_SHORT = {
    "--help": "-h", "--version": "-v", "--query_eval_wanted": "-q", "--measure": "-m",
    "--complete_rel_info_wanted": "-c", "--level_for_rel": "-l", "--nosummary": "-n",
    "--Debug_level": "-D", "--Judged_docs_only": "-J", "--Number_docs_in_coll": "-N",
    "--Max_retrieved_per_topic": "-M", "--Rel_info_format": "-R",
    "--Results_format": "-T", "--Output_old_results_format": "-o", "--Zscore": "-Z",
}  # fmt: skip
BY_NAME = {m.name: m for m in TABLE}
#: Queries are scored in batches of similar depth whose padded query x rank matrix holds at
#: most this many cells (one very deep ranking does not widen every query's row).
BATCH_CELLS = 1 << 19


class Exit(Exception):
    def __init__(self, status: int, message: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message


def _atol(text: str) -> int:
    from .inputs import atol

    return atol(text.encode("latin-1"))


def _atof(text: str) -> float:
    from .inputs import atof

    return atof(text.encode("latin-1"))


class Options:
    def __init__(self):
        self.query = False
        self.complete = False
        self.judged_only = False
        self.summary = True
        self.level = 1
        self.max_docs = 2**63 - 1
        self.num_docs = 0
        self.debug_level = 0
        self.debug_qid: str | None = None
        self.rel_format = "qrels"
        self.results_format = "trec_results"
        self.zscore = False
        self.zscore_file = ""
        self.help = False
        self.marked: set[str] = set()
        self.meas_args: list[tuple[str, str]] = []


def _mark(opts: Options, optarg: str) -> None:
    name, dot, param = optarg.partition(".")
    if dot:
        if param == "":
            raise Exit(
                1,
                f"trec_eval: improper measure in parameter '{name}'\n"
                f"trec_eval: illegal measure '{name}'\n",
            )
        opts.meas_args.append((name, param))
    names = NICKNAMES.get(name, (name,))
    for single in names:
        if single not in BY_NAME and single not in REFUSED_NAMES:
            raise Exit(1, f"trec_eval: illegal measure '{name}'\n")
        opts.marked.add(single)


def parse_args(argv: list[str]) -> tuple[Options, list[str]]:
    opts = Options()
    try:
        pairs, rest = getopt.gnu_getopt(argv, "hvqm:cl:nD:JN:M:R:T:oZ:", LONG)
    except getopt.GetoptError as error:
        raise Exit(1, f"trec_eval: {error}\n{USAGE}") from None
    for flag, value in pairs:
        flag = LONG_TO_SHORT.get(flag, flag)
        if flag == "-h":
            opts.help = True
        elif flag == "-v":
            raise Exit(0, f"trec_eval version {VERSION}\n")
        elif flag == "-q":
            opts.query = True
        elif flag == "-m":
            _mark(opts, value)
        elif flag == "-c":
            opts.complete = True
        elif flag == "-l":
            opts.level = _atol(value)
        elif flag == "-n":
            opts.summary = False
        elif flag == "-D":
            level, dot, qid = value.partition(".")
            opts.debug_level = _atol(level)
            opts.debug_qid = qid if dot else None
        elif flag == "-J":
            opts.judged_only = True
        elif flag == "-N":
            opts.num_docs = _atol(value)
        elif flag == "-M":
            opts.max_docs = _atol(value)
        elif flag == "-R":
            opts.rel_format = value
        elif flag == "-T":
            opts.results_format = value
        elif flag == "-Z":
            opts.zscore = True
            opts.zscore_file = value
    return opts, rest


def _params_for(opts: Options, measure) -> tuple[tuple, str | None]:
    """The measure's parameters and their printable form (None: the defaults)."""
    for name, text in opts.meas_args:
        if name != measure.name:
            continue
        parts = text.split(",")
        kind = measure.params
        if kind == "long_cut":
            values = sorted(_atol(p) for p in parts)
            if values[0] <= 0:
                raise Exit(
                    2,
                    "trec_eval: Negative cutoff detected\n"
                    f"trec_eval: Cannot initialize measure '{measure.name}'\n",
                )
        elif kind == "double_cut":
            values = sorted(_atof(p) for p in parts)
        elif kind == "double_p":
            return tuple(_atof(p) for p in parts), text
        elif kind == "pair":
            return _pairs(text, measure.name), text
        else:
            return measure.default, None
        if any(a == b for a, b in itertools.pairwise(values)):
            raise Exit(
                2,
                "trec_eval: duplicate cutoffs detected\n"
                f"trec_eval: Cannot initialize measure '{measure.name}'\n",
            )
        return tuple(values), text
    return measure.default, None


def _pairs(text: str, name: str) -> tuple:
    last = ","
    for ch in text:
        if ch == ",":
            if last == ",":
                break
            last = ","
        elif ch == "=":
            if last == "=":
                last = ","
                break
            last = "="
    if last != "=":
        raise Exit(
            2,
            f"trec_eval: malformed pair parameters in '{text}'\n"
            f"trec_eval: Cannot initialize measure '{name}'\n",
        )
    out = []
    for part in text.split(","):
        key, _, value = part.partition("=")
        out.append((key, _atof(value)))
    return tuple(out)


def _value_names(measure, params, printable) -> list[str]:
    if measure.params == "long_cut":
        return [f"{measure.name}_{k}" for k in params]
    if measure.params == "double_cut":
        # append_double: "%s_%3.2f" into strlen(name) + 10 bytes.
        return [f"{measure.name}_{k:3.2f}"[: len(measure.name) + 9] for k in params]
    if printable is not None:
        return [f"{measure.name}_{printable}"]
    return [measure.name]


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "  -nan" if math.copysign(1.0, value) < 0 else "   nan"
    if math.isinf(value):
        return "  -inf" if value < 0 else "   inf"
    return f"{value:6.4f}"


def _long(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return str(-(2**63))
    return str(int(value))


def run(argv: list[str], out) -> int:
    forget_file_checks()
    opts, rest = parse_args(argv)
    if opts.help:
        out.write(HELP)
        return 0
    if len(rest) != 2:
        raise Exit(1, USAGE)
    qrels_path, run_path = rest
    if opts.rel_format != "qrels":
        if opts.rel_format in ("prefs", "qrels_prefs", "qrels_jg"):
            raise Exit(
                2,
                f"verity-trec-eval: -R {opts.rel_format} is not supported; only the qrels "
                "format is (use trec_eval itself for preference and judgment-group files)\n",
            )
        raise Exit(2, f"trec_eval: Illegal rel_format '{opts.rel_format}'\n")
    qrels = read_qrels(qrels_path)
    if opts.results_format != "trec_results":
        raise Exit(2, f"trec_eval: Illegal retrieval results format '{opts.results_format}'\n")
    # Ranked block by block as it is read when it can be; else read whole.
    where = {"debug_qid": opts.debug_qid, "max_docs": opts.max_docs}
    where["judged_only"] = opts.judged_only
    run_file = read_ranked(run_path, qrels, **where)
    if run_file is None:  # queries interleaved: split into buckets of whole queries
        run_file = read_partitioned(run_path, qrels, **where)
    if run_file is None:
        run_file = read_run(run_path)
        # Put query by query and ranked a block at a time, as a file read in blocks is.
        run_file = rank_read(run_file, qrels, **where) or run_file
    zscores = read_zscores(opts.zscore_file) if opts.zscore else None
    if opts.debug_level > 0:
        raise Exit(2, "verity-trec-eval: debug output (-D above 0) is not supported\n")
    if not opts.marked:
        _mark(opts, "official")
    refused = sorted(opts.marked & set(REFUSED_NAMES))
    if refused:
        raise Exit(
            2,
            f"verity-trec-eval: measure '{refused[0]}' needs -R prefs or qrels_jg, "
            "which are not supported\n",
        )
    measures = [m for m in TABLE if m.name in opts.marked]
    plan = []
    for m in measures:
        params, printable = _params_for(opts, m)
        plan.append((m, params, _value_names(m, params, printable)))

    needs_rankings = any(m.name not in ("runid", "num_q") for m in measures)
    rankings = rank(
        qrels,
        run_file,
        max_docs=opts.max_docs,
        judged_only=opts.judged_only,
        complete=opts.complete,
        debug_qid=opts.debug_qid,
        needs_rankings=needs_rankings,
    )
    del qrels, run_file  # the ids and the qrels' copies: not needed to score
    n = rankings.n
    stop = rankings.stop
    evaluated = stop.index if stop else n

    columns = []  # (measure, names, values (n, k) or strings)
    if n == 0:
        plan = []
    else:
        levels = level_tables(rankings, opts.level)
        batches = rankings.batches(BATCH_CELLS)
    results: dict[str, object] = {}
    failure: tuple[str, str] | None = None
    for queries in batches if n else []:
        ctx = Context(rankings, opts.level, opts.num_docs, queries, levels)
        for m, params, _names in plan:
            if m.kind == "runid":
                continue
            try:
                values = m.compute(ctx, params)
            except MeasureError as error:
                failure = (str(error), m.name)
                break
            if m.kind == "relstring":
                out_list = results.setdefault(m.name, [""] * n)
                for q, text in zip(queries.tolist(), values, strict=True):
                    out_list[q] = text
            else:
                values = np.asarray(values, dtype=np.float64).reshape(len(queries), -1)
                full = results.setdefault(m.name, np.zeros((n, values.shape[1])))
                full[queries] = values
        if failure:
            break
        del ctx
    for m, _params, names in plan:
        if failure and m.name == failure[1]:
            if stop and stop.index == 0:
                break  # the first query fails before this measure's own check
            # The measure refuses on the first query, before any line is printed.
            lines = [failure[0], f"trec_eval: Can't calculate measure '{m.name}'\n"]
            return _finish(out, columns, rankings, opts, 0, lines, 4, plan)
        if m.kind == "runid":
            columns.append((m, names, None))
            continue
        values = results[m.name]
        if m.kind != "relstring":
            values = _bogus_cleanup(values, names, rankings.bogus)
        elif names[0] == "relstring":
            # The placeholder ranking's string is cleared only under the plain name.
            values = ["" if b else s for s, b in zip(values, rankings.bogus.tolist(), strict=True)]
        columns.append((m, names, values))

    if zscores is not None:
        columns = _to_zscores(columns, rankings.qids, zscores)
    if stop:
        lines = list(stop.lines)
        if stop.measure_failure:
            first = next(m.name for m in measures if m.name not in ("runid", "num_q"))
            lines.append(f"trec_eval: Can't calculate measure '{first}'\n")
        return _finish(out, columns, rankings, opts, evaluated, lines, stop.status, plan)
    if n == 0:
        return _finish(
            out, columns, rankings, opts, 0,
            ["trec_eval: No queries with both results and relevance info\n"], 7, plan,
        )  # fmt: skip
    _print_queries(out, columns, rankings, opts, n)
    if opts.summary:
        _print_summary(out, columns, rankings, opts)
    return 0


MISSING_ZSCORE = -1000000.0


def read_zscores(path: str) -> dict[str, dict[str, tuple[float, float]]]:
    """-Z's file, ``qid measure mean stddev`` per line: {qid: {value name: (mean, sd)}}."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        data = b""
    if not data:
        raise Exit(255, f"trec_eval.get_zscores: Cannot read zscores file '{path}'\n")
    table: dict[str, dict[str, tuple[float, float]]] = {}
    for number, line in enumerate(data.rstrip(b"\n").split(b"\n"), start=1):
        fields = line.split()
        if len(fields) < 4:
            raise Exit(255, f"trec_eval.get_zscores: Malformed line {number}\n")
        qid, name = fields[0].decode("latin-1"), fields[1].decode("latin-1")
        mean, sd = (_atof(f.decode("latin-1")) for f in fields[2:4])
        table.setdefault(qid, {}).setdefault(name, (mean, sd))
    return table


def _to_zscores(columns, qids, zscores):
    """Each query's values as z-scores against the file's mean and standard deviation
    for that query and value name; -1000000 where the file has none (convert_zscores.c)."""
    converted = []
    for m, names, values in columns:
        if values is None or m.kind == "relstring":
            converted.append((m, names, values))
            continue
        values = values.copy()
        for q, qid in enumerate(qids):
            known = zscores.get(qid)
            for j, name in enumerate(names):
                stats = known.get(name) if known is not None else None
                value = values[q, j]
                if stats is None:
                    values[q, j] = MISSING_ZSCORE
                elif stats[1]:
                    values[q, j] = (value - stats[0]) / stats[1]
                else:
                    values[q, j] = 0.0 if value == stats[0] else MISSING_ZSCORE
        converted.append((m, names, values))
    return converted


def _bogus_cleanup(values, names, bogus):
    if not bogus.any():
        return values
    for j, name in enumerate(names):
        if name in ("num_ret", "utility", "rbp_resid") or name.startswith("unj"):
            values[bogus, j] = 0.0
    return values


def _finish(out, columns, rankings, opts, count, lines, status, plan):
    _print_queries(out, columns, rankings, opts, count)
    out.flush()
    raise Exit(status, "".join(lines))


def _print_queries(out, columns, rankings, opts, count):
    if not opts.query or count == 0:
        return
    # Each printed column's name and values as text, then the lines query by query.
    printed = []  # (prefix, texts)
    for m, names, values in columns:
        if not m.per_query:
            continue
        if m.kind == "relstring":
            printed.append((f"{names[0]:<22}\t", [f"\t'{v}'\n" for v in values[:count]]))
            continue
        for j, name in enumerate(names):
            column = values[:count, j]
            if opts.zscore:
                printed.append((f"Z{name:<22}\t", _texts(column, _fmt)))
            else:
                printed.append(
                    (f"{name:<22}\t", _texts(column, _long if m.kind == "long" else _fmt))
                )
    write = out.write
    qids = rankings.qids
    # One query's lines: a template with the query id and each column's text as fields.
    template = "".join(
        prefix.replace("{", "{{").replace("}", "}}") + f"{{0}}{{{c + 1}}}"
        for c, (prefix, _texts_) in enumerate(printed)
    ).format
    columns_texts = [texts for _prefix, texts in printed]
    for start in range(0, count, 1000):
        end = min(count, start + 1000)
        rows = zip(qids[start:end], *(t[start:end] for t in columns_texts), strict=True)
        write("".join([template(*row) for row in rows]))


def _texts(column: np.ndarray, fmt) -> list[str]:
    """``\t<value>\n`` for each value, as _fmt or _long writes it."""
    values = column.tolist()
    if fmt is _fmt and np.isfinite(column).all():
        return list(map("\t%6.4f\n".__mod__, values))  # as f"\t{v:6.4f}\n", faster
    return [f"\t{fmt(v)}\n" for v in values]


def _print_summary(out, columns, rankings, opts):
    n = rankings.n
    denominator = rankings.num_qrels_queries if opts.complete else n
    write = out.write
    for m, names, values in columns:
        if m.kind == "runid":
            write(f"{'runid':<22}\tall\t{rankings.runid}\n")
            continue
        if m.summary == "none":
            continue
        for j, name in enumerate(names):
            column = values[:, j]
            total = float(np.cumsum(column)[-1]) if n else 0.0
            if m.summary == "num_q":
                total = float(denominator)
            elif m.summary == "num_rel":
                if opts.complete:
                    total = float(int((rankings.all_qrels_grades > 0).sum()))
            elif m.summary == "mean":
                if denominator:
                    total = total / denominator
            elif m.summary == "gm" and denominator > 0:
                if opts.complete:
                    total += (denominator - n) * math.log(0.00001)
                total = math.exp(total / denominator)
            if opts.zscore:
                write(f"Z{name:<22}\tall\t{_fmt(total)}\n")
                continue
            text = _long(total) if m.kind == "long" else _fmt(total)
            write(f"{name:<22}\tall\t{text}\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # malloc's pool: pyarrow's default (jemalloc) pays for fresh pages in system time.
    pa.set_memory_pool(pa.system_memory_pool())
    _reuse_freed_memory()
    out = _Latin1(sys.stdout.buffer)
    try:
        status = run(argv, out)
    except InputError as error:
        out.flush()
        sys.stderr.write("\n".join(error.lines) + "\n")
        return 2
    except Exit as stop:
        out.flush()
        if stop.status == 0:
            sys.stderr.write(stop.message)
        else:
            sys.stderr.write(stop.message)
        return stop.status
    except BrokenPipeError:
        return 1
    except MemoryError:
        out.flush()
        sys.stderr.write(OUT_OF_MEMORY)
        return 3
    out.flush()
    return status


#: What a run out of memory says instead of a traceback. trec_eval 10 sizes each query's
#: table of relevance levels by its highest grade and touches only what it uses; here the
#: table is an array, so an absurd grade (2147483647) asks for gigabytes.
OUT_OF_MEMORY = (
    "verity-trec-eval: out of memory. The largest input is the usual cause; a relevance "
    "grade in the qrels in the millions also is (each query's table of levels holds one "
    "entry per grade up to its highest): check the qrels' fourth column.\n"
)


def _reuse_freed_memory() -> None:
    """glibc's malloc maps every block above its threshold (32 MB at most) afresh and
    unmaps it when freed, so each 10M-element temporary array costs its pages' faults
    again (system time: ~2.2 s of a 10M-line run). Without mmap'd blocks the heap's freed
    memory is reused: ~0.5 s less system time there, the same peak (RSS counts the high
    water mark anyway). Elsewhere, nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(-4, 0)  # M_MMAP_MAX = 0
        # M_TRIM_THRESHOLD: keep up to 256 MB freed at the heap's top instead of giving
        # it back at every free (a block's temporaries would fault in again at the next
        # block: 560k page faults, ~1 s of system time, on a 10M-line run; 92k with it).
        libc.mallopt(-1, 1 << 28)
    except (OSError, AttributeError):
        pass


class _Latin1:
    """Text written as the bytes it was read from (ids are latin-1 decoded)."""

    def __init__(self, buffer):
        self.buffer = buffer
        self.parts: list[str] = []
        self.size = 0

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size > 1 << 20:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.buffer.write("".join(self.parts).encode("latin-1"))
            self.parts = []
            self.size = 0
        self.buffer.flush()


if __name__ == "__main__":
    sys.exit(main())
