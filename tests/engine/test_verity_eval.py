"""``verity-eval``: ``pip install ./scorer`` gives the commands ``verity-eval`` and
``verity-trec-eval``, working from any directory, with numpy and pyarrow as the only
dependencies; ``--format trec_eval`` prints what trec_eval prints.

The scorer's distribution (``scorer/``) is installed (not in editable mode) into a fresh
virtual environment made for this test, which borrows the dependencies of the running one,
and the commands are run from ``/tmp``, where no ``verity_eval`` package is in sight.
Two oracles: trec_eval 10's own expected outputs (../shared/conformance: every line of a
shared measure must appear byte for byte, in the same order), and trec_eval's C code
through ``pytrec_eval`` on the same files (every value, per query and averaged, to
trec_eval's four decimals).

While mutating (``VERITY_MUTATING=1``, set by scripts/mutate.sh) the same checks call
``run_cli`` in this process instead: an installed copy would not see the mutant, and a
fresh install per mutant costs seconds.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import random
import re
import shutil
import subprocess
import sysconfig
import venv
from pathlib import Path

import pytest

from tests.shared_data import need_shared, shared_dir
from verity_eval.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
KS = "1,5,10,15,20,30,100,200,500,1000"
COUNTS = ("num_ret", "num_rel", "num_rel_ret")


@pytest.fixture(scope="session")
def verity_eval(tmp_path_factory) -> Path | None:
    """The ``verity-eval`` script of a fresh ``pip install`` of a copy of the project
    (``None`` while mutating: the commands then run in this process)."""
    if os.environ.get("VERITY_MUTATING") == "1":
        return None
    base = tmp_path_factory.mktemp("verity-eval")
    source = base / "src"
    shutil.copytree(
        ROOT / "scorer",
        source,
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"),
    )
    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # The running environment's packages (numpy, pyarrow, setuptools) stand in for the
    # registry: the install needs no network.
    Path(purelib, "verity-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", str(source)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    script = env_dir / "bin" / "verity-eval"
    assert script.is_file()
    return script


def run_from_tmp(script: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    if script is None:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = run_cli(list(args), out=out, err=err)
            except SystemExit as exit_:  # --help
                code = exit_.code if isinstance(exit_.code, int) else 1
        return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())
    return subprocess.run(
        [str(script), *args], cwd="/tmp", capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def conformance() -> Path:
    folder = shared_dir() / "conformance" / "trec_eval"
    need_shared(folder / "qrels.test", "trec_eval conformance data")
    return folder


CASES = [
    # (trec_eval's expected output, qrels, run, verity-eval options)
    ("out.core.q", "qrels.test", "results.test", []),
    ("out.core.ql2", "qrels.rel_level", "results.test", ["-l", "2"]),
    ("out.core.qJ", "qrels.test", "results.test", ["-J"]),
    # trec_eval -c: Verity averages a scorable query missing from the run in as 0 always.
    ("out.core.qc.trunc", "qrels.test", "results.trunc", []),
    ("out.test.aq", "qrels.test", "results.test", []),
    ("out.test.aql", "qrels.rel_level", "results.test", ["-l2"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_trec_eval_lines_byte_for_byte(case, verity_eval, conformance):
    expected, qrels, run, options = case
    proc = run_from_tmp(
        verity_eval, str(conformance / qrels), str(conformance / run),
        "--format", "trec_eval", "-q", "--k", KS, *options,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    mine = proc.stdout.splitlines()
    names = {line.split("\t")[0].rstrip() for line in mine}
    reference = (conformance / expected).read_text().splitlines()
    shared = [line for line in reference if line.split("\t")[0].rstrip() in names]
    # Every shared measure of trec_eval's output is there: the counts, map, Rprec, bpref,
    # recip_rank, P_k, recall_k, ndcg_cut_k, success_k (those trec_eval printed).
    bases = {re.sub(r"_[0-9]+$", "", line.split("\t")[0].rstrip()) for line in shared}
    assert bases >= {"num_ret", "num_rel", "num_rel_ret", "map", "recip_rank", "P", "recall"}
    assert [line for line in shared if line not in mine] == []
    positions = [mine.index(line) for line in shared]
    assert positions == sorted(positions)  # trec_eval's order


def pytrec_values(qrels: dict, run: dict, measures: set[str], level: int) -> dict:
    import pytrec_eval

    return pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level).evaluate(run)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            q, _, d, g = line.split()
            out.setdefault(q, {})[d] = int(g)
    return out


def read_run(path: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        f = line.split()
        out.setdefault(f[0], {})[f[2]] = float(f[4])
    return out


def compare_with_pytrec(stdout: str, qrels: dict, run: dict, level: int) -> int:
    """Check every value of verity-eval's trec_eval output against pytrec_eval; return how
    many values were compared."""
    rows = [line.split("\t") for line in stdout.splitlines()]
    names = sorted({r[0].rstrip() for r in rows} - {"num_q"})
    measures = {n.rsplit("_", 1)[0] + "." + n.rsplit("_", 1)[1] if n[-1].isdigit() else n
                for n in names}  # fmt: skip
    oracle = pytrec_values(qrels, run, measures, level)
    compared = 0
    for name, qid, value in ((r[0].rstrip(), r[1], r[2]) for r in rows):
        if name == "num_q":
            assert int(value) == len(oracle)
            continue
        if qid == "all":
            per_query = [oracle[q][name] for q in oracle]
            want = sum(per_query) if name in COUNTS else math.fsum(per_query) / len(per_query)
        else:
            want = oracle[qid][name]
        if name in COUNTS:
            assert value == str(int(want)), (name, qid)
        else:
            assert value == f"{want:.4f}", (name, qid, value, want)
        compared += 1
    return compared


def test_values_agree_with_pytrec_eval_on_the_conformance_files(verity_eval, conformance):
    qrels_path, run_path = conformance / "qrels.test", conformance / "results.test"
    proc = run_from_tmp(
        verity_eval, str(qrels_path), str(run_path), "--format", "trec_eval", "-q", "--k", KS
    )
    assert proc.returncode == 0, proc.stderr
    n = compare_with_pytrec(proc.stdout, read_qrels(qrels_path), read_run(run_path), 1)
    # 3 queries + all, each with 3 counts, 4 whole-ranking measures, 4 families x 10 cutoffs.
    assert n == 4 * (3 + 4 + 4 * 10)


def test_values_agree_with_pytrec_eval_on_dl19_with_a_generated_run(verity_eval, tmp_path):
    """TREC DL 2019's real qrels at level 2, and a run made here: for each query, its
    judged passages and as many unjudged ids, in a shuffled order with scores kept apart
    by far more than 1e-7 (pytrec_eval reads them as 32-bit floats)."""
    folder = shared_dir() / "realdata" / "trec-dl-2019-passage"
    need_shared(folder / "qrels.txt", "TREC DL 2019 qrels")
    qrels = read_qrels(folder / "qrels.txt")
    rng = random.Random(19)
    lines = []
    for qid, judged in sorted(qrels.items()):
        ids = sorted(judged) + [f"unjudged-{qid}-{n}" for n in range(len(judged))]
        rng.shuffle(ids)
        ids = ids[: rng.randint(50, len(ids))]
        lines += [f"{qid} Q0 {d} {r} {1000 - r * 0.01:.2f} gen" for r, d in enumerate(ids, 1)]
    run_path = tmp_path / "run.trec"
    run_path.write_text("\n".join(lines) + "\n")
    proc = run_from_tmp(
        verity_eval, str(folder / "qrels.txt"), str(run_path),
        "--format", "trec_eval", "-q", "-l", "2", "--k", KS,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # the same query set as trec_eval: no departure to note
    n = compare_with_pytrec(proc.stdout, qrels, read_run(run_path), 2)
    assert n == (len(qrels) + 1) * (3 + 4 + 4 * 10)


def test_other_formats_keep_veritys_names_and_bounds_is_refused(verity_eval, conformance):
    args = [str(conformance / "qrels.test"), str(conformance / "results.test"), "--k", "10"]
    trec = run_from_tmp(verity_eval, *args, "--format", "trec", "--measures", "R,nDCG,AP")
    assert trec.returncode == 0, trec.stderr
    assert {line.split("\t")[0] for line in trec.stdout.splitlines()} >= {"R@10", "nDCG@10", "AP"}
    refused = run_from_tmp(verity_eval, *args, "--format", "trec_eval", "--unjudged", "bounds")
    assert refused.returncode == 2
    assert "intervals" in refused.stderr
    # Without -q: only the 'all' lines, as trec_eval without -q.
    plain = run_from_tmp(verity_eval, *args, "--format", "trec_eval", "--measures", "P_10")
    assert plain.stdout.splitlines() == [
        "num_q                 \tall\t3",
        "num_ret               \tall\t1500",
        "num_rel               \tall\t561",
        "num_rel_ret           \tall\t131",
        "P_10                  \tall\t0.3000",
    ]  # as out.test
    assert "--format" in run_from_tmp(verity_eval, "--help").stdout


def test_the_scorer_installs_alone_with_numpy_and_pyarrow(verity_eval, tmp_path) -> None:
    """``pip install ./scorer``: both commands, run from /tmp, and nothing but numpy and
    pyarrow asked of the registry; two top-level names, neither of them generic."""
    if verity_eval is None:
        pytest.skip("mutating: no installed copy")
    python = verity_eval.parent / "python"
    metadata = subprocess.run(
        [python, "-c", "import importlib.metadata as m; d = m.distribution('verity-eval'); "
         "print(sorted(r.split('>')[0].split(';')[0].strip() for r in d.requires)); "
         "print(d.read_text('top_level.txt').split())"],
        capture_output=True, text=True, check=True, cwd="/tmp",
    ).stdout.splitlines()  # fmt: skip
    assert metadata == ["['numpy', 'pyarrow']", "['verity_eval', 'verity_limits']"]
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\n")
    run.write_text("q1 Q0 b 1 2 r\nq1 Q0 a 2 1 r\n")
    trec = subprocess.run(
        [verity_eval.parent / "verity-trec-eval", "-m", "map", "-m", "P.1", str(qrels), str(run)],
        cwd="/tmp", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert trec.returncode == 0, trec.stderr
    assert (
        trec.stdout == "map                   \tall\t0.5000\nP_1                   \tall\t0.0000\n"
    )
    imported = subprocess.run(
        [python, "-c", "import sys, verity_eval.trec_eval.cli, verity_eval.cli; "
         "print('django' in sys.modules, verity_eval.__file__.startswith('/tmp'))"],
        cwd="/tmp", capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert imported == ["False", "True"]  # no Django; the installed copy, not the checkout
