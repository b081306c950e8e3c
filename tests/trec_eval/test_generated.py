"""Generated qrels and runs against the built trec_eval 10.0, byte for byte (stdout, exit
status and stderr) under many flag combinations.

The data has what real files have and trec_eval treats specially: tied scores (broken by
document id, descending), grades from -1 to 3 (a negative grade is "in the pool, not
judged"), a comment line, queries judged only non-relevant, queries only in the run (they
are ignored), queries only in the qrels (trec_eval stops on them without -c, scores them
on a placeholder ranking with -c), runs cut short, and scores written in several ways."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.trec_eval.conftest import run_oracle, run_verity
from verity_eval.trec_eval import cli, measures

FLAGS = [
    [],
    ["-q"],
    ["-c"],
    ["-q", "-c"],
    ["-q", "-c", "-n"],
    ["-l2"],
    ["-q", "-c", "-l0"],
    ["-q", "-c", "-l-1", "-m", "all_trec"],  # unjudged documents count as relevant
    ["-q", "-c", "-l5", "-M0", "-m", "all_trec"],
    ["-q", "-c", "-J"],
    ["-c", "-M", "5"],
    ["-q", "-c", "-M1100", "-m", "P.1000,1100", "-m", "map_cut.1000"],
    ["-q", "-m", "all_trec", "-c"],
    ["-m", "all_trec", "-c", "-l2", "-J"],
    ["-q", "-m", "all_trec", "-c", "-M3"],
    ["-q", "-c", "-m", "P.1,3,7", "-m", "ndcg_cut.2,4", "-m", "recall.3", "-m", "success.2"],
    ["-q", "-c", "-m", "ndcg.0=1,1=2,2=5,3=-1", "-m", "G.1=1,2=3"],
    # rbp alone: trec_eval's rbp starts its gain bounds uninitialised, so after another
    # gain measure it normalises with that measure's leftovers (see docs/TREC_EVAL.md).
    ["-q", "-c", "-m", "rbp.p=0.5", "-m", "rbp_resid", "-m", "num_q"],
    ["-q", "-c", "-m", "utility.1,-2,0,1", "-N", "500", "-m", "set", "-m", "set_F.0.5"],
    ["-q", "-c", "-m", "iprec_at_recall.0,.33,.5,1", "-m", "11pt_avg.0,.5,1", "-m", "map_cut.3"],
    ["-q", "-c", "-m", "Rprec_mult.0.5,1.5,3", "-m", "relative_P.2,4", "-m", "unj.1,4"],
    ["-q", "-c", "-m", "dcg", "-m", "ideal_dcg", "-m", "Rndcg", "-m", "ndcg_rel"],
    # Fractional, zero and negative gains, and gains for unjudged (-1) documents.
    ["-q", "-c", "-m", "Rndcg.3=0.5,2=0.7", "-m", "ndcg_rel.1=-2", "-m", "ndcg.-1=1,5=3"],
    ["-q", "-c", "-m", "Rndcg.1=0", "-m", "ndcg_rel.2=0", "-m", "G.0=0.5"],
    ["-q", "-c", "-D", "0.q3"],
    ["-q", "-c", "-m", "relstring.4", "-m", "num_nonrel_judged_ret", "-m", "binG"],
    ["-q", "-c", "-m", "relstring", "-m", "infAP", "-m", "gm_bpref", "-J"],
]
SEEDS = range(40)


def make_case(seed: int, directory: Path) -> tuple[Path, Path]:
    rnd = random.Random(seed)
    qrels_lines: list[str] = ["# generated qrels"]
    run_lines: list[str] = []
    queries = [f"q{i}" for i in range(rnd.randint(3, 7))]
    many = seed % 10 == 9  # long rankings: the cutoffs at 500 and 1000, -M beyond them
    docs = [f"D{j:04d}" for j in range(1500 if many else 40)]
    for i, qid in enumerate(queries):
        judged = rnd.sample(docs, rnd.randint(1, 400 if many else 25))
        only_nonrel = i == 1
        for doc in judged:
            grade = (
                0 if only_nonrel else rnd.choice([-1, 0, 0, 0, 1, 1, 2, 3, 12 * (seed % 5 == 0)])
            )
            qrels_lines.append(f"{qid} 0 {doc} {grade}")
        if i == len(queries) - 1 and seed % 2:
            continue  # a qrels-only query
        retrieved = rnd.sample(docs, rnd.randint(1, 1200 if many else 30 if seed % 3 else 8))
        scores = [rnd.choice([1, 2, 2, 3, 5]) / 4 for _ in retrieved]  # many ties
        for rank, (doc, score) in enumerate(zip(retrieved, scores, strict=True)):
            written = rnd.choice([f"{score}", f"{score:.3e}", f"  {score:f}"])
            run_lines.append(f"{qid}\tQ0\t{doc}\t{rank + 1}\t{written}\trun{seed}")
    run_lines += [f"zz Q0 D00{k} {k} {k} run{seed}" for k in range(3)]  # run-only query
    rnd.shuffle(run_lines)
    run_lines.insert(rnd.randrange(len(run_lines)), "# a comment line")
    body = qrels_lines[:1] + rnd.sample(qrels_lines[1:], len(qrels_lines) - 1)
    qrels = directory / f"qrels.{seed}"
    run = directory / f"run.{seed}"
    qrels.write_text("\n".join(body) + "\n")
    run.write_text("\n".join(run_lines) + ("\n" if seed % 4 else ""))
    return qrels, run


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> list[tuple[Path, Path]]:
    directory = tmp_path_factory.mktemp("generated")
    return [make_case(seed, directory) for seed in SEEDS]


@pytest.mark.parametrize("flags", FLAGS, ids=[" ".join(f) or "default" for f in FLAGS])
def test_generated_cases_match_trec_eval(flags, cases, trec_eval_binary):
    for qrels, run in cases:
        args = [*flags, str(qrels), str(run)]
        expected = run_oracle(trec_eval_binary, args, qrels.parent)
        got = run_verity(args)
        assert (got.status, got.stderr) == (expected.status, expected.stderr), args
        assert got.stdout.decode() == expected.stdout.decode(), args


@pytest.mark.parametrize("flags", [["-q", "-c", "-m", "all_trec"], ["-q", "-c", "-l2", "-J"]])
def test_queries_scored_in_small_batches_give_the_same_bytes(
    flags, cases, trec_eval_binary, monkeypatch
):
    """Queries are scored in batches of similar depth (a deep ranking must not widen every
    row of the padded matrix); batches of a few cells change no byte."""
    monkeypatch.setattr(cli, "BATCH_CELLS", 40)
    for qrels, run in cases[:12]:
        args = [*flags, str(qrels), str(run)]
        expected = run_oracle(trec_eval_binary, args, qrels.parent)
        got = run_verity(args)
        assert (got.status, got.stdout) == (expected.status, expected.stdout), args


def test_ideal_dcg_by_the_loop_gives_the_same_bytes(cases, trec_eval_binary, monkeypatch):
    """ndcg_cut's ideal DCG is computed for a batch at once; the per-query loop it falls
    back to (a very large batch) gives the same bytes."""
    monkeypatch.setattr(measures, "IDEAL_CELLS", 0)
    for qrels, run in cases[:12]:
        args = ["-q", "-c", "-m", "ndcg_cut.1,3,10,1000", str(qrels), str(run)]
        expected = run_oracle(trec_eval_binary, args, qrels.parent)
        got = run_verity(args)
        assert (got.status, got.stdout) == (expected.status, expected.stdout), args


BROKEN = {
    "duplicate document in the run": ("q1 0 A 1\nq1 0 B 0\n", "q1 Q0 A 1 2 r\nq1 Q0 A 2 1 r\n"),
    "duplicate document in the qrels": ("q1 0 A 1\nq1 0 A 0\n", "q1 Q0 A 1 2 r\n"),
    "malformed qrels line": ("q1 0 A 1\nq1 0 B\n", "q1 Q0 A 1 2 r\n"),
    "malformed run line": ("q1 0 A 1\n", "q1 Q0 A 1 2 r\nq1 Q0 B 1\n"),
    "qrels query missing from the run": ("q1 0 A 1\nq2 0 A 1\n", "q1 Q0 A 1 2 r\n"),
    "no query in common": ("q1 0 A 1\n", "q9 Q0 A 1 2 r\n"),
    "empty run": ("q1 0 A 1\n", ""),
    "empty qrels": ("", "q1 Q0 A 1 2 r\n"),
    "byte-order marks": ("\ufeffq1 0 A 1\nq2 0 B 1\n", "\ufeffq1 Q0 A 1 2 r\nq2 Q0 B 1 1 r\n"),
    "a header line and CRLF": ("q1 0 A 1\r\n", "qid Q0 docno rank score run\r\nq1 Q0 A 1 2 r\r\n"),
    "qrels without a final newline": ("q1 0 A 1\nq1 0 B 2", "q1 Q0 A 1 2 r\nq1 Q0 B 1 1 r"),
    "blank line in the qrels": ("q1 0 A 1\n\nq1 0 B 1\n", "q1 Q0 A 1 2 r\n"),
    "comment then blank-led run lines": ("# c\nq1 0 A 1\n", "  # c\n\n  q1 Q0 A 1 2 r x y\n"),
    "scores atof reads a prefix of": ("q1 0 A 1\nq1 0 B 1\n", "q1 Q0 A 1 1.5x r\nq1 Q0 B 1 .7 r\n"),
}
BROKEN_FLAGS = [
    [],
    ["-q"],
    ["-q", "-c"],
    ["-m", "P.0"],
    ["-m", "P.5,5"],
    ["-m", "nosuch"],
    ["-m", "ndcg.1=2,,"],
    ["-m", "utility.1,2"],
    ["-q", "-m", "all_trec"],
]


@pytest.mark.parametrize("name", BROKEN)
def test_refusals_and_odd_files_match_trec_eval(name, tmp_path, trec_eval_binary):
    qrels_text, run_text = BROKEN[name]
    (tmp_path / "qrels").write_text(qrels_text)
    (tmp_path / "run").write_text(run_text)
    for flags in BROKEN_FLAGS:
        args = [*flags, "qrels", "run"]
        expected = run_oracle(trec_eval_binary, args, tmp_path)
        got = run_verity([*flags, str(tmp_path / "qrels"), str(tmp_path / "run")])
        assert got.status == expected.status, args
        assert got.stdout == expected.stdout, args
        if expected.status:
            assert got.stderr.replace(str(tmp_path) + "/", "") == expected.stderr, args


COMMAND_LINES = [
    ["qrels", "run", "-q"],  # options after the files (GNU getopt)
    ["-qc", "qrels", "run"],
    ["--measure=P.5", "--query_eval_wanted", "qrels", "run"],
    ["--measure", "map", "--complete_rel_info_wanted", "--level_for_rel", "2", "qrels", "run"],
    ["-mP.3", "-m", "P.1", "-q", "qrels", "run"],  # the first parameters given win
    ["-m", "official", "-m", "P.2", "qrels", "run"],
    ["-n", "-q", "-M2", "qrels", "run"],
    ["-N", "10", "-m", "utility", "-q", "qrels", "run"],
    ["-v"],
    ["qrels"],
    [],
]


@pytest.mark.parametrize("argv", COMMAND_LINES, ids=[" ".join(a) or "none" for a in COMMAND_LINES])
def test_command_lines_match_trec_eval(argv, tmp_path, trec_eval_binary, monkeypatch):
    (tmp_path / "qrels").write_text("q1 0 A 1\nq1 0 B 0\nq2 0 C 2\n")
    (tmp_path / "run").write_text("q1 Q0 A 1 2 r\nq1 Q0 B 2 1 r\nq2 Q0 C 1 1 r\n")
    expected = run_oracle(trec_eval_binary, argv, tmp_path)
    monkeypatch.chdir(tmp_path)
    got = run_verity(argv)
    assert (got.status, got.stdout) == (expected.status, expected.stdout)
    if argv == ["-v"]:
        assert got.stderr == expected.stderr


def test_z_scores_match_trec_eval(cases, trec_eval_binary, tmp_path):
    """-Z: each value against the file's mean and deviation for its query and name; a
    zero deviation gives 0 for the mean itself and -1000000 otherwise, as does a value or
    a query the file lacks."""
    zscores = tmp_path / "zscores"
    rnd = random.Random(5)
    lines = []
    for q in ("q0", "q2", "q3", "q5"):
        for name in ("num_ret", "map", "P_5", "P_10", "ndcg", "gm_map", "recall_5", "bpref"):
            sd = rnd.choice([0.0, 0.5, 2.0])
            mean = rnd.choice([0.0, 0.25, 10.0])
            lines.append(f"{q} {name} {mean} {sd}")
        # trec_eval's binary search reads one entry past the end for a name or query
        # beyond the last (and may crash): a last entry in both keeps it defined.
        lines.append(f"{q} zzz 0 1")
    lines.append("zzz zzz 0 1")
    zscores.write_text("\n".join(rnd.sample(lines, len(lines))) + "\n")
    for flags in (["-q", "-c", "-m", "all_trec"], ["-c"], ["-q", "-n", "-c", "-m", "set"]):
        for qrels, run in cases[:10]:
            args = [*flags, "-Z", str(zscores), str(qrels), str(run)]
            expected = run_oracle(trec_eval_binary, args, qrels.parent)
            got = run_verity(args)
            assert (got.status, got.stdout) == (expected.status, expected.stdout), args
