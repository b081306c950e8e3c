"""``verity-eval QRELS RUN ...`` (or ``python -m scoring``): the standalone scorer, with no
Django and no database. ``pip install ./scorer`` provides the ``verity-eval`` command."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from importlib.abc import MetaPathFinder
from typing import Any, TextIO

import numpy as np

from .errors import EngineError
from .evaluate import EvalResult, evaluate
from .params import EvalParams, parse_ks, split_measure
from .readers import Statuses, read_mapping, read_qrels, read_run, read_statuses
from .tables import Run
from .trec_eval_format import departures, format_trec_eval

EXIT_BAD_INPUT = 2


def build_parser(prog: str = "verity-eval") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Score a retrieval run against qrels (trec_eval-compatible measures, "
        "Verity's recall accounting). Needs no database.",
    )
    p.add_argument("qrels", help="TREC qrels: 'qid 0 docid grade' per line")
    p.add_argument("run", help="TREC run 'qid Q0 docid rank score tag' or JSON Lines run")
    p.add_argument("--k", type=parse_ks, default=(5, 10), help="cutoffs, e.g. 5,10,100")
    p.add_argument(
        "--measures",
        help="comma-separated: R, Ceiling, AnyHit, AllHit, P, nDCG, Judged, Evidence "
        "(over --k, or 'nDCG@10'), RR, AP, Rprec, bpref; trec_eval names accepted "
        "(recall_100, ndcg_cut_10, map, ...). Default: all",
    )
    p.add_argument(
        "-l",
        "--rel-level",
        type=int,
        default=1,
        help="lowest grade counted as relevant (as trec_eval -l); default 1",
    )
    p.add_argument(
        "--unjudged",
        choices=("nonrel", "judged-only", "bounds"),
        default="nonrel",
        help="unjudged items: non-relevant (default, trec_eval), removed "
        "(judged-only, trec_eval -J), or both labelings as an interval (bounds)",
    )
    p.add_argument(
        "-J",
        dest="unjudged",
        action="store_const",
        const="judged-only",
        help="the same as --unjudged judged-only (trec_eval -J)",
    )
    p.add_argument(
        "--dedup",
        choices=("error", "first"),
        default="error",
        help="duplicate ids in a query's ranking: error (default) or keep first",
    )
    p.add_argument(
        "--order",
        choices=("score", "rank"),
        default="score",
        help="TREC runs: score (trec_eval's order, default) or the rank column",
    )
    p.add_argument("--statuses", help="JSON Lines review statuses (and evidence conditions)")
    p.add_argument("--mapping", help="unit map, 'fine<TAB>coarse' per line")
    p.add_argument("--stage", help="stage of a multi-stage JSON Lines run")
    p.add_argument(
        "--format",
        choices=("table", "json", "trec", "trec_eval"),
        default="table",
        help="table (default); json; trec: Verity's measures as measure<TAB>qid<TAB>value; "
        "trec_eval: the measures trec_eval has, in its exact layout and names",
    )
    p.add_argument(
        "-q",
        dest="per_query",
        action="store_true",
        help="with --format trec_eval: each query's lines before the 'all' lines (trec_eval -q)",
    )
    return p


def run_cli(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    prog = os.path.basename(sys.argv[0]) if argv is None else "verity-eval"
    if prog in ("__main__.py", "-m"):
        prog = "python -m scoring"
    args = build_parser(prog).parse_args(argv)
    if args.format == "trec_eval" and args.unjudged == "bounds":
        print(
            "error: --format trec_eval prints one number per measure; --unjudged bounds gives "
            "intervals: use --format table, json or trec",
            file=err,
        )
        return EXIT_BAD_INPUT
    try:
        measures = (
            tuple(m.strip() for m in args.measures.split(",") if m.strip())
            if args.measures
            else None
        )
        params = EvalParams(
            ks=args.k,
            measures=measures,
            rel_level=args.rel_level,
            unjudged=args.unjudged,
            dedup=args.dedup,
            order=args.order,
            stage=args.stage,
        )
        statuses: Statuses | None = read_statuses(args.statuses) if args.statuses else None
        mapping = read_mapping(args.mapping) if args.mapping else None
        qrels = read_qrels(args.qrels)
        run = read_run(args.run, order=args.order, dedup=args.dedup, stage=args.stage)
        asked = params.measure_names(with_evidence=False)
        if args.format == "trec_eval":
            whole, params = _with_whole_ranking_recall(params, run)
        result = evaluate(qrels, run, params, statuses=statuses, mapping=mapping)
    except EngineError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"error: {exc.filename or ''}: {exc.strerror or exc}", file=err)
        return EXIT_BAD_INPUT
    if args.format == "json":
        # Compact: the C encoder is ~10x faster than indented output on 10k queries.
        out.write(json.dumps(result.to_dict(), allow_nan=False, separators=(",", ":")))
        out.write("\n")
    elif args.format == "trec":
        out.write(format_trec(result))
    elif args.format == "trec_eval":
        if result.status != "ok":
            print("error: no scorable query, so every mean is undefined", file=err)
            return EXIT_BAD_INPUT
        hits = {qid: row[f"hits@{whole}"] for qid, row in result.per_query.items()}
        out.write(
            format_trec_eval(
                result, per_query=args.per_query, relevant_retrieved=hits, measures=asked
            )
        )
        for note in departures(result):
            print(f"note: {note}", file=err)
    else:
        out.write(format_table(result))
    return 0


def _num(value: Any) -> str:
    if value is None:
        return "undefined"
    if isinstance(value, dict):
        return f"[{value['low']:.4f}, {value['high']:.4f}]"
    return f"{value:.4f}"


def format_trec(result: EvalResult) -> str:
    """``measure<TAB>qid<TAB>value`` lines like ``trec_eval -q``; ``all`` = macro mean.

    Pooled recall is printed as ``R@k:pooled``; under bounds ``X:low`` / ``X:high``.
    """
    lines: list[str] = []

    def emit(name: str, qid: str, value: Any) -> None:
        if isinstance(value, dict):
            lines.append(f"{name}:low\t{qid}\t{_num(value['low'])}")
            lines.append(f"{name}:high\t{qid}\t{_num(value['high'])}")
        else:
            lines.append(f"{name}\t{qid}\t{_num(value)}")

    for qid, row in result.per_query.items():
        for name in result.measures:
            if name in row:
                emit(name, qid, row[name])
    lines.append(f"num_q\tall\t{result.counts['scorable']}")
    for name in result.measures:
        agg = result.aggregates[name]
        emit(name, "all", agg["macro"])
        if "pooled" in agg:
            emit(f"{name}:pooled", "all", agg["pooled"])
    return "\n".join(lines) + "\n"


def format_table(result: EvalResult) -> str:
    p, c = result.params, result.counts
    mapping = p["mapping"]
    excluded = ", ".join(f"{k} {v}" for k, v in c["excluded"].items()) or "none"
    head = [
        f"status: {result.status}",
        f"qrels: {p['qrels']}   run: {p['run']}"
        + (f"   stage: {p['stage']}" if p["stage"] else ""),
        f"order: {p['order']} ({p['order_rule']})",
        f"dedup: {p['dedup']} (removed {p['duplicates_removed']})   unjudged: {p['unjudged']}"
        f"   rel-level: {p['rel_level']}   gains: raw grades",
        "mapping: "
        + (
            f"{mapping['size']} ids, {mapping['collapsed']} collapsed (first rank kept)"
            if mapping["applied"]
            else "none"
        ),
        f"queries: {c['scorable']} scorable; excluded: {excluded}; empty ranking: "
        f"{c['empty_ranking']}; abstained: {c['abstained']}; with evidence: "
        f"{c['with_evidence']}",
        "aggregation: macro = mean over scorable queries; pooled = sum hits / sum |G| "
        "(recall only)",
    ]
    if "bounds" in p:
        head.append(f"bounds: {p['bounds']}")
    # At least as wide as the header's "measure", or short names shift their row left.
    width = max([len("measure"), *(len(n) for n in result.measures)]) + 2
    rows = [f"{'measure':<{width}}{'macro':>22}{'pooled':>22}"]
    for name in result.measures:
        agg = result.aggregates[name]
        pooled = _num(agg["pooled"]) if "pooled" in agg else ""
        fam, _ = split_measure(name)
        label = name + (" *" if fam == "Evidence" else "")
        rows.append(f"{label:<{width}}{_num(agg['macro']):>22}{pooled:>22}")
    if c["with_evidence"]:
        rows.append(f"* Evidence@k: over the {c['with_evidence']} queries with a condition")
    return "\n".join(head) + "\n\n" + "\n".join(rows) + "\n"


def _with_whole_ranking_recall(params: EvalParams, run: Run) -> tuple[int, EvalParams]:
    """trec_eval's num_rel_ret is the hits over the whole ranking: R@K with K the longest
    ranking gives them (``hits@K``), beside the measures asked for."""
    lengths = np.diff(run.offsets)
    whole = max(1, int(lengths.max()) if lengths.size else 1)
    measures = (*params.measure_names(with_evidence=False), f"R@{whole}")
    return whole, replace(params, measures=measures)


class _NoPandas(MetaPathFinder):
    """pyarrow probes for pandas on its first compute call; the scorer never uses pandas,
    and importing it (when installed) adds ~0.4 s to every run. Only the command line
    makes it look absent: code importing verity_eval as a library is left alone."""

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def main() -> None:
    """The ``verity-eval`` console script and ``python -m scoring``."""
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _NoPandas())
    try:
        sys.exit(run_cli())
    except BrokenPipeError:  # `verity-eval … | head`: end quietly, as manage.py does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
