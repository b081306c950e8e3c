"""``python -m scoring QRELS RUN ...``: the standalone scorer (no Django, no database)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from .errors import EngineError
from .evaluate import EvalResult, evaluate
from .params import EvalParams, split_measure
from .readers import Statuses, read_mapping, read_qrels, read_run, read_statuses

EXIT_BAD_INPUT = 2


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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m scoring",
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
        "--rel-level",
        type=int,
        default=1,
        help="lowest grade counted as relevant (trec_eval -l); default 1",
    )
    p.add_argument(
        "--unjudged",
        choices=("nonrel", "judged-only", "bounds"),
        default="nonrel",
        help="unjudged items: non-relevant (default, trec_eval), removed "
        "(judged-only, trec_eval -J), or both labelings as an interval (bounds)",
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
    p.add_argument("--format", choices=("table", "json", "trec"), default="table")
    return p


def run_cli(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    args = build_parser().parse_args(argv)
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


def main() -> None:
    sys.exit(run_cli())
