"""A run ranked block by block as it is read (``blocks.read_ranked``) against the built
trec_eval 10.0, byte for byte: runs written query by query (as real runs are), read in
blocks of a few lines so that queries span blocks, and the files the block path must hand
to the whole-file readers (queries interleaved, duplicates, long ids, NaN scores)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.trec_eval.conftest import run_oracle, run_verity
from tests.trec_eval.test_generated import make_case
from verity_eval.trec_eval import blocks, inputs

FLAGS = [
    ["-q"],
    ["-q", "-c"],
    ["-q", "-c", "-l2", "-J"],
    ["-q", "-c", "-M", "3", "-m", "all_trec"],
    ["-q", "-c", "-M0"],
    ["-q", "-c", "-m", "all_trec", "-l-1"],
    ["-q", "-c", "-D", "0.q3"],
    ["-c", "-n", "-m", "relstring.5", "-m", "num_ret"],
]
SEEDS = range(24)


def make_grouped(seed: int, directory: Path) -> tuple[Path, Path, bool | None]:
    """qrels and a run written query by query; whether the block path should take it
    (None: only once the run is read whole and put query by query)."""
    rnd = random.Random(1000 + seed)
    queries = [f"q{i}" for i in range(rnd.randint(2, 9))]
    docs = [f"D{j:03d}" for j in range(60)] + ["x", "yz", "clueweb09-en0000-00-00000"]
    qrels_lines, run_queries = [], []
    for i, qid in enumerate(queries):
        for doc in rnd.sample(docs, rnd.randint(1, 30)):
            grade = 0 if i == 1 else rnd.choice([-1, 0, 0, 1, 2, 3])
            qrels_lines.append(f"{qid} 0 {doc} {grade}")
        if i == len(queries) - 1 and seed % 2:
            continue  # a qrels-only query
        lines = []
        for rank, doc in enumerate(rnd.sample(docs, rnd.randint(1, 40))):
            score = rnd.choice([1, 2, 2, 3, 5, -0.0, 0.0]) / 4  # ties, and -0 ties 0
            lines.append(f"{qid} Q0 {doc} {rank + 1} {score} run{seed}")
        run_queries.append(lines)
    zz = ["zz Q0 D001 1 3 r", "zz Q0 D002 2 1 r"]  # a run-only query
    run_queries.insert(rnd.randrange(len(run_queries) + 1), zz)
    target = next(q for q in reversed(run_queries) if q is not zz)
    streamable = True
    kind = seed % 6
    if kind == 1:  # a query's lines apart: read whole, then put query by query
        run_queries[0].append(run_queries[0][0].replace("Q0 ", "Q0 extra", 1))
        run_queries.append([run_queries[0].pop()])
        streamable = None
    elif kind == 2:  # a document twice in a query's ranking (trec_eval stops there)
        target.append(target[0].replace(" Q0 ", " Q0 ", 1).rsplit(" ", 3)[0] + " 99 0.5 r")
        streamable = False
    elif kind == 3:  # an id longer than 32 bytes
        target.append(f"{target[0].split()[0]} Q0 {'L' * 40} 77 0.1 r")
        streamable = False
    elif kind == 4:  # a document twice in a run query's qrels
        qid = target[0].split()[0]
        qrels_lines.append(next(line for line in qrels_lines if line.startswith(qid + " ")))
        streamable = False
    elif kind == 5:  # twice in a qrels-only query's (-c ranks it apart from the blocks)
        qrels_lines.append(next(line for line in qrels_lines if line.startswith(queries[-1])))
    run = directory / f"grouped.run.{seed}"
    qrels = directory / f"grouped.qrels.{seed}"
    sep = "\t" if seed % 4 == 0 else " "
    run.write_text("".join(line.replace(" ", sep) + "\n" for q in run_queries for line in q))
    qrels.write_text("\n".join(rnd.sample(qrels_lines, len(qrels_lines))) + "\n")
    return qrels, run, streamable


@pytest.fixture(scope="module")
def grouped(tmp_path_factory) -> list[tuple[Path, Path, bool | None]]:
    directory = tmp_path_factory.mktemp("grouped")
    return [make_grouped(seed, directory) for seed in SEEDS]


def spy_on_rank_blocks(monkeypatch) -> list[bool]:
    """Whether each call of ``rank_blocks`` ranked the run (True) or gave up (False)."""
    taken: list[bool] = []
    original = blocks.rank_blocks

    def spy(*args, **kwargs):
        result = original(*args, **kwargs)
        taken.append(result is not None)
        return result

    monkeypatch.setattr(blocks, "rank_blocks", spy)
    return taken


@pytest.mark.parametrize("block", [None, 64, 200])
@pytest.mark.parametrize("flags", FLAGS, ids=[" ".join(f) for f in FLAGS])
def test_runs_read_block_by_block_match_trec_eval(
    flags, block, grouped, trec_eval_binary, monkeypatch
):
    if block is not None:
        monkeypatch.setattr(inputs, "STREAM_BLOCK", block)
        monkeypatch.setattr(blocks, "STREAM_LINES", block // 20)
    taken = spy_on_rank_blocks(monkeypatch)
    for qrels, run, streamable in grouped:
        taken.clear()
        args = [*flags, str(qrels), str(run)]
        expected = run_oracle(trec_eval_binary, args, qrels.parent)
        got = run_verity(args)
        assert (got.status, got.stderr) == (expected.status, expected.stderr), args
        assert got.stdout == expected.stdout, args
        if "-D" in flags:
            continue  # one query: another query's defect does not count
        if streamable:
            assert taken == [True], args  # the block path took it
        elif streamable is None:
            assert taken == [False, True], args  # read whole, then ranked by blocks
        else:
            assert True not in taken, args  # the whole-file path


def test_nan_scores_and_long_lines_go_to_the_whole_file_readers(
    tmp_path, trec_eval_binary, monkeypatch
):
    monkeypatch.setattr(inputs, "STREAM_BLOCK", 64)
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 A 1\nq1 0 B 0\nq1 0 E 2\nq1 0 H 1\nq2 0 C 2\n")
    for name, body in {
        "nan": "q1 Q0 A 1 nan r\nq1 Q0 B 2 1 r\nq2 Q0 C 1 2 r\n",
        "long line": f"q1 Q0 A 1 1 {'r' * 200}\nq2 Q0 C 1 2 {'r' * 200}\n",
        "inf": "q1 Q0 A 1 inf r\nq1 Q0 B 2 -inf r\nq2 Q0 C 1 2 r\n",
        # Scores alike in their upper 32 bits, told apart by the lower ones; and ties.
        "near ties": "".join(
            f"q1 Q0 {doc} {i} {score} r\n"
            for i, (doc, score) in enumerate(
                zip(
                    "ABDEFGH",
                    [
                        "1",
                        "1.0000000000002",
                        "0.9999999999998",
                        "1",
                        "1.0000000000002",
                        "1e-300",
                        "1.0000000000000002",
                    ],
                    strict=True,
                )
            )
        )
        + "q2 Q0 C 1 2 r\n",
    }.items():
        run = tmp_path / f"run.{name.replace(' ', '_')}"
        run.write_text(body)
        for flags in (["-q"], ["-q", "-c", "-m", "all_trec"], ["-q", "-m", "relstring.7"]):
            args = [*flags, str(qrels), str(run)]
            expected = run_oracle(trec_eval_binary, args, tmp_path)
            got = run_verity(args)
            assert (got.status, got.stdout, got.stderr) == (
                expected.status,
                expected.stdout,
                expected.stderr,
            ), name


@pytest.mark.parametrize(
    "flags", [["-q", "-c"], ["-q", "-c", "-m", "all_trec", "-M5"], ["-q", "-J", "-l2"]]
)
def test_shuffled_runs_read_whole_then_by_blocks_match_trec_eval(
    flags, tmp_path, trec_eval_binary, monkeypatch
):
    """test_generated's runs (lines shuffled, a comment line) are read whole, put query by
    query and ranked in blocks of a few lines."""
    monkeypatch.setattr(blocks, "STREAM_LINES", 7)
    for seed in range(16):
        qrels, run = make_case(seed, tmp_path)
        args = [*flags, str(qrels), str(run)]
        expected = run_oracle(trec_eval_binary, args, tmp_path)
        got = run_verity(args)
        assert (got.status, got.stdout, got.stderr) == (
            expected.status,
            expected.stdout,
            expected.stderr,
        ), args


@pytest.mark.parametrize("flags", [["-q", "-c"], ["-q", "-c", "-m", "all_trec", "-M5"]])
def test_interleaved_runs_split_into_buckets_match_trec_eval(
    flags, tmp_path, trec_eval_binary, monkeypatch
):
    """Regular runs with their lines shuffled: read in blocks again, split into buckets
    of whole queries, each ranked query by query."""
    monkeypatch.setattr(inputs, "STREAM_BLOCK", 128)
    monkeypatch.setattr(blocks, "STREAM_LINES", 5)
    monkeypatch.setattr(blocks, "PARTS", 3)
    taken = spy_on_rank_blocks(monkeypatch)
    for seed in range(12):
        qrels, run = make_case(seed, tmp_path)
        lines = [
            " ".join(line.split())
            for line in run.read_text().splitlines()
            if line.strip() and not line.startswith("#")
        ]
        run.write_text("\n".join(lines) + "\n")
        taken.clear()
        args = [*flags, str(qrels), str(run)]
        expected = run_oracle(trec_eval_binary, args, tmp_path)
        got = run_verity(args)
        assert (got.status, got.stdout, got.stderr) == (
            expected.status,
            expected.stdout,
            expected.stderr,
        ), args
        assert taken == [False, True], args
