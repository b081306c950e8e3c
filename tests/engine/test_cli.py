"""``python -m scoring``: output formats, exit codes, and no Django anywhere.

The options are exercised in-process through ``run_cli`` (the function ``python -m
scoring`` calls), so that a mutation of the CLI is seen by these tests; one test runs the
real ``python -m scoring`` in a subprocess, and the Django checks need a fresh interpreter.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from scoring.engine.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str


def _run(*args: str) -> Completed:
    """``python -m scoring ARGS`` in this process; argparse's own exits are caught."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = run_cli(list(args), out=out, err=err)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
    return Completed(code, out.getvalue(), err.getvalue())


def test_python_m_scoring_runs_the_cli(files: tuple[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "scoring", *files, "--k", "2", "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["aggregates"]["R@2"]["macro"] == pytest.approx(4 / 9)
    bad = subprocess.run(
        [sys.executable, "-m", "scoring", files[0], files[0] + ".missing"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    # The founding text's example as files, plus a query with no relevant judgment.
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("A 0 a 1\nA 0 b 1\nA 0 c 1\nB 0 d 1\nC 0 e 1\nD 0 z 0\n")
    run = tmp_path / "run.trec"
    run.write_text(
        "A Q0 a 1 4 t\nA Q0 x 2 3 t\nA Q0 b 3 2 t\nA Q0 c 4 1 t\n"
        "B Q0 x 1 2 t\nB Q0 d 2 1 t\nC Q0 x 1 2 t\nC Q0 y 2 1 t\nD Q0 z 1 1 t\n"
    )
    return str(qrels), str(run)


def test_json_shape(files: tuple[str, str]) -> None:
    proc = _run(*files, "--k", "2", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert set(data) == {"status", "params", "counts", "aggregates", "per_query", "excluded"}
    assert data["status"] == "ok"
    for key in ("ks", "measures", "rel_level", "unjudged", "dedup", "order", "mapping", "stage"):
        assert key in data["params"]
    assert data["params"]["order"] == "score"
    assert data["counts"]["scorable"] == 3
    assert data["counts"]["excluded"] == {"no_relevant_judgments": 1}
    assert data["aggregates"]["R@2"]["macro"] == pytest.approx(4 / 9)
    assert data["aggregates"]["R@2"]["pooled"] == pytest.approx(2 / 5)
    assert set(data["aggregates"]["P@2"]) == {"macro"}
    assert data["per_query"]["A"]["weight"] == pytest.approx(0.6)
    assert data["per_query"]["A"]["hits@2"] == 1 and data["per_query"]["A"]["relevant"] == 3


def test_trec_format(files: tuple[str, str]) -> None:
    proc = _run(*files, "--k", "2", "--measures", "R,P", "--format", "trec")
    assert proc.returncode == 0, proc.stderr
    lines = [line.split("\t") for line in proc.stdout.splitlines()]
    assert ["R@2", "A", "0.3333"] in lines
    assert ["P@2", "C", "0.0000"] in lines
    assert ["R@2", "all", "0.4444"] in lines
    assert ["R@2:pooled", "all", "0.4000"] in lines
    assert ["num_q", "all", "3"] in lines


def test_table_format_states_status_counts_and_params(files: tuple[str, str]) -> None:
    proc = _run(*files, "--k", "2", "--unjudged", "bounds")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for text in (
        "status: ok",
        "order: score",
        "dedup: error",
        "unjudged: bounds",
        "rel-level: 1",
        "3 scorable",
        "no_relevant_judgments 1",
        "macro",
        "pooled",
    ):
        assert text in out


def test_bad_input_exits_2_with_message_and_no_traceback(
    tmp_path: Path, files: tuple[str, str]
) -> None:
    bad = tmp_path / "bad.trec"
    bad.write_text("A Q0 a 1 4 t\nA Q0 a 2 3 t\n")
    proc = _run(files[0], str(bad))
    assert proc.returncode == 2
    assert "line 2: duplicate docid 'a'" in proc.stderr and "--dedup first" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    for args in (
        [files[0], str(tmp_path / "missing.trec")],
        [*files, "--k", "0"],
        [*files, "--measures", "MRR"],
    ):
        proc = _run(*args)
        assert proc.returncode == 2 and proc.stderr and "Traceback" not in proc.stderr


def test_statuses_and_mapping_options(tmp_path: Path, files: tuple[str, str]) -> None:
    statuses = tmp_path / "st.jsonl"
    statuses.write_text(
        '{"query": "A", "status": "relevant"}\n{"query": "B", "status": "unreviewed"}\n'
    )
    mapping = tmp_path / "map.tsv"
    mapping.write_text("x\tb\n")  # x -> b: in A, b moves up to rank 2 and the later b goes
    proc = _run(
        *files,
        "--k",
        "2",
        "--statuses",
        str(statuses),
        "--mapping",
        str(mapping),
        "--format",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert list(data["per_query"]) == ["A"]
    assert data["per_query"]["A"]["R@2"] == pytest.approx(2 / 3)
    assert data["params"]["mapping"]["collapsed"] == 1
    # C and D are judged but have no status line.
    assert data["counts"]["excluded"] == {"no_status": 2, "unreviewed": 1}


@pytest.mark.parametrize(
    "code",
    [
        "import sys, scoring.engine; assert 'django' not in sys.modules, 'django imported'",
        "import sys, runpy; sys.argv = ['scoring', '--help']\n"
        "try:\n    runpy.run_module('scoring', run_name='__main__')\n"
        "except SystemExit as exit_:\n    assert exit_.code == 0, exit_.code\n"
        "assert 'django' not in sys.modules, 'django imported'",
    ],
    ids=["import-engine", "python-m-scoring"],
)
def test_engine_never_imports_django(code: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": ""},
    )
    assert proc.returncode == 0, proc.stderr
