"""``python -m scoring``: output formats, exit codes, and no Django anywhere.

The options are exercised in-process through ``run_cli`` (the function ``python -m
scoring`` calls), so that a mutation of the CLI is seen by these tests; one test runs the
real ``python -m scoring`` in a subprocess, and the Django checks need a fresh interpreter.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

from verity_eval.cli import _NoPandas, main, run_cli

ROOT = Path(__file__).resolve().parents[2]

#: The two tests that start a new interpreter check the process boundary (the module runs,
#: Django stays out), not the engine's values; at seconds each they are left out of the
#: mutation runs (scripts/mutate.sh sets VERITY_MUTATING=1), and run in the suite.
new_interpreter = pytest.mark.skipif(
    os.environ.get("VERITY_MUTATING") == "1", reason="starts an interpreter; not while mutating"
)


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


@new_interpreter
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
        "import sys, verity_eval; assert 'django' not in sys.modules, 'django imported'",
        "import sys, runpy; sys.argv = ['scoring', '--help']\n"
        "try:\n    runpy.run_module('scoring', run_name='__main__')\n"
        "except SystemExit as exit_:\n    assert exit_.code == 0, exit_.code\n"
        "assert 'django' not in sys.modules, 'django imported'",
    ],
    ids=["import-engine", "python-m-scoring"],
)
@new_interpreter
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


# -- the output formats, whole -------------------------------------------------------------------

PIPELINE = [
    {"query": "A", "stages": {"cand": ["a", "x", "b", "c"], "ctx": ["a", "x"]}},
    {"query": "B", "stages": {"cand": ["x", "d"], "ctx": ["x"]}},
    {"query": "C", "stages": {"cand": ["x", "y"], "ctx": []}},
    {"query": "D", "stages": {"cand": ["z"], "ctx": ["z"]}},
]
STATUSES = [
    {"query": "A", "status": "relevant", "evidence": [["a", "b"], ["c"]]},
    {"query": "B", "status": "relevant"},
    {"query": "C", "status": "relevant"},
    {"query": "D", "status": "no_answer"},
]


@pytest.fixture
def pipeline(tmp_path: Path, files: tuple[str, str]) -> dict[str, str]:
    paths = {"qrels": files[0]}
    for name, lines in (("run", PIPELINE), ("statuses", STATUSES)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in lines))
        paths[name] = str(path)
    (tmp_path / "map.tsv").write_text("x\tb\n")
    paths["mapping"] = str(tmp_path / "map.tsv")
    return paths


def test_table_format_whole(pipeline: dict[str, str]) -> None:
    """By hand, stage cand with x -> b: A [a, b, c] (b's second copy collapsed), B [b, d],
    C [b, y]; G: A {a,b,c}, B {d}, C {e}; D is no_answer. Bounds relabel b for B, b and y
    for C. R@2: low (2/3 + 1 + 0)/3, high (2/3 + 2/2 + 2/3)/3; pooled low 3/5, high 6/8.
    AP: low (1 + 1/2 + 0)/3, high (1 + 1 + 2/3)/3. Evidence@2: (a AND b) in A's top 2."""
    p = pipeline
    proc = _run(p["qrels"], p["run"], "--stage", "cand", "--k", "2", "--measures",
                "R,Evidence,AP", "--unjudged", "bounds", "--statuses", p["statuses"],
                "--mapping", p["mapping"])  # fmt: skip

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "status: ok\n"
        f"qrels: {p['qrels']}   run: {p['run']}   stage: cand\n"
        "order: list (list order as given)\n"
        "dedup: error (removed 0)   unjudged: bounds   rel-level: 1   gains: raw grades\n"
        "mapping: 1 ids, 1 collapsed (first rank kept)\n"
        "queries: 3 scorable; excluded: no_answer 1; empty ranking: 0; abstained: 0; "
        "with evidence: 1\n"
        "aggregation: macro = mean over scorable queries; pooled = sum hits / sum |G| "
        "(recall only)\n"
        "bounds: low/high = smaller/larger of two labelings: unjudged as non-relevant, and "
        "unjudged as relevant at grade rel_level (for a measure at k, those in the first k; "
        "for RR, AP, Rprec, bpref, every ranked one)\n"
        "\n"
        "measure                      macro                pooled\n"
        "R@2               [0.5556, 0.7778]      [0.6000, 0.7500]\n"
        "Evidence@2 *                1.0000                      \n"
        "AP                [0.5000, 0.8889]                      \n"
        "* Evidence@k: over the 1 queries with a condition\n"
    )


def test_table_format_without_options(files: tuple[str, str]) -> None:
    proc = _run(*files, "--k", "2", "--measures", "P")
    assert proc.stdout.splitlines()[1:5] == [
        f"qrels: {files[0]}   run: {files[1]}",
        "order: score (score descending (64-bit floats), ties by docid descending (byte "
        "order), as trec_eval)",
        "dedup: error (removed 0)   unjudged: nonrel   rel-level: 1   gains: raw grades",
        "mapping: none",
    ]
    # Short names: the column is as wide as "measure" (+ 2), so the numbers line up.
    assert proc.stdout.endswith(
        "\nmeasure" + " " * 19 + "macro" + " " * 16 + "pooled\n"
        "P@2" + " " * 22 + "0.3333" + " " * 22 + "\n"
    )


def test_trec_format_whole_with_bounds(pipeline: dict[str, str]) -> None:
    """Stage ctx: A [a, x], B [x], C []. High relabels x (A: |G| 4, B: |G| 2)."""
    p = pipeline
    proc = _run(p["qrels"], p["run"], "--stage", "ctx", "--k", "1,2", "--measures", "R@2,P@1",
                "--format", "trec", "--unjudged", "bounds")  # fmt: skip

    rows = [
        ("P@1", "A", "1.0000", "1.0000"), ("R@2", "A", "0.3333", "0.5000"),
        ("P@1", "B", "0.0000", "1.0000"), ("R@2", "B", "0.0000", "0.5000"),
        ("P@1", "C", "0.0000", "0.0000"), ("R@2", "C", "0.0000", "0.0000"),
    ]  # fmt: skip
    expected = [f"{m}:{side}\t{q}\t{v}" for m, q, lo, hi in rows
                for side, v in (("low", lo), ("high", hi))]  # fmt: skip
    expected += [
        "num_q\tall\t3",
        "P@1:low\tall\t0.3333",
        "P@1:high\tall\t0.6667",
        "R@2:low\tall\t0.1111",
        "R@2:high\tall\t0.3333",
        "R@2:pooled:low\tall\t0.2000",
        "R@2:pooled:high\tall\t0.4286",  # (2 + 1 + 0) / (4 + 2 + 1)
    ]
    assert proc.stdout == "\n".join(expected) + "\n"


def test_trec_format_prints_undefined(tmp_path: Path) -> None:
    qrels = tmp_path / "q.txt"
    qrels.write_text("A 0 a 0\n")
    run = tmp_path / "r.trec"
    run.write_text("A Q0 a 1 1 t\n")
    proc = _run(str(qrels), str(run), "--k", "1", "--measures", "R", "--format", "trec")
    assert proc.stdout == "num_q\tall\t0\nR@1\tall\tundefined\nR@1:pooled\tall\tundefined\n"


HELP = """
usage: verity-eval [-h] [--k K] [--measures MEASURES] [-l REL_LEVEL] [--unjudged
{nonrel,judged-only,bounds}] [-J] [--dedup {error,first}] [--order {score,rank}] [--statuses
STATUSES] [--mapping MAPPING] [--stage STAGE] [--format {table,json,trec,trec_eval}] [-q] qrels
run Score a retrieval run against qrels (trec_eval-compatible measures, Verity's recall
accounting). Needs no database. positional arguments: qrels TREC qrels: 'qid 0 docid grade' per
line run TREC run 'qid Q0 docid rank score tag' or JSON Lines run options: -h, --help show this
help message and exit --k K cutoffs, e.g. 5,10,100 --measures MEASURES comma-separated: R,
Ceiling, AnyHit, AllHit, P, nDCG, Judged, Evidence (over --k, or 'nDCG@10'), RR, AP, Rprec,
bpref; trec_eval names accepted (recall_100, ndcg_cut_10, map, ...). Default: all -l REL_LEVEL,
--rel-level REL_LEVEL lowest grade counted as relevant (as trec_eval -l); default 1 --unjudged
{nonrel,judged-only,bounds} unjudged items: non-relevant (default, trec_eval), removed
(judged-only, trec_eval -J), or both labelings as an interval (bounds) -J the same as
--unjudged judged-only (trec_eval -J) --dedup {error,first} duplicate ids in a query's ranking:
error (default) or keep first --order {score,rank} TREC runs: score (trec_eval's order,
default) or the rank column --statuses STATUSES JSON Lines review statuses (and evidence
conditions) --mapping MAPPING unit map, 'fine<TAB>coarse' per line --stage STAGE stage of a
multi-stage JSON Lines run --format {table,json,trec,trec_eval} table (default); json; trec:
Verity's measures as measure<TAB>qid<TAB>value; trec_eval: the measures trec_eval has, in its
exact layout and names -q with --format trec_eval: each query's lines before the 'all' lines
(trec_eval -q)
"""


def test_help_documents_every_option() -> None:
    """The standalone scorer's only manual; compared word by word (wrapping ignored)."""
    proc = _run("--help")
    assert proc.returncode == 0
    assert proc.stdout.split() == HELP.split()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k", "5,x"], "--k must be comma-separated positive integers, e.g. 5,10,100; got '5,x'"),
        (["--k", "5,-1"], "--k values must be positive integers; got '5,-1'"),
        (["--k", ","], "--k values must be positive integers; got ','"),
        (["--rel-level", "two"], "argument -l/--rel-level: invalid int value: 'two'"),
        (["--format", "csv"], "argument --format: invalid choice: 'csv'"),
        (["--order", "list"], "argument --order: invalid choice: 'list'"),
        (["--dedup", "last"], "argument --dedup: invalid choice: 'last'"),
        (["--unjudged", "skip"], "argument --unjudged: invalid choice: 'skip'"),
    ],
)  # fmt: skip
def test_bad_options_exit_2_naming_the_option(files, args, message) -> None:
    proc = _run(*files, *args)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_defaults_and_every_option_reach_the_parameters(tmp_path: Path, files) -> None:
    plain = json.loads(_run(*files, "--format", "json").stdout)["params"]
    run = tmp_path / "dup.trec"
    run.write_text("A Q0 a 1 2 t\nA Q0 a 2 1 t\nB Q0 d 1 1 t\n")
    given = _run(files[0], str(run), "--format", "json", "--k", "3", "--rel-level", "2",
                 "--dedup", "first", "--order", "rank", "--unjudged", "judged-only")  # fmt: skip

    assert (plain["ks"], plain["rel_level"], plain["unjudged"]) == ([5, 10], 1, "nonrel")
    assert (plain["dedup"], plain["order"], plain["stage"]) == ("error", "score", None)
    # rel-level 2 on a binary file: no relevant judgment, so nothing is scorable.
    data = json.loads(given.stdout)
    assert data["status"] == "undefined"
    assert {k: data["params"][k] for k in ("ks", "rel_level", "unjudged", "dedup", "order")} == {
        "ks": [3], "rel_level": 2, "unjudged": "judged-only", "dedup": "first", "order": "rank",
    }  # fmt: skip
    assert data["params"]["duplicates_removed"] == 1
    assert _run(*files).stdout.startswith("status: ok\n")  # the table is the default format


def test_main_exits_with_run_clis_code_and_hides_pandas(monkeypatch, capsys, files) -> None:
    """``main`` in this process (the console script's entry point): its exit code is
    run_cli's, and pandas, which pyarrow would import on its first compute call, looks
    absent to the command line only."""
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(sys.modules, "pandas", raising=False)
    missing = files[0] + ".missing"
    for argv, code in (([*files, "--k", "2", "--format", "json"], 0), ([files[0], missing], 2)):
        monkeypatch.setattr(sys, "argv", ["verity-eval", *argv])
        with pytest.raises(SystemExit) as info:
            main()
        assert info.value.code == code
    assert json.loads(capsys.readouterr().out.splitlines()[0])["counts"]["scorable"] == 3
    assert isinstance(sys.meta_path[0], _NoPandas)
    assert sum(isinstance(f, _NoPandas) for f in sys.meta_path) == 2  # once per call
    monkeypatch.setitem(sys.modules, "pandas", types.ModuleType("pandas"))
    with pytest.raises(SystemExit):
        main()  # pandas already imported by the caller: left alone
    assert sum(isinstance(f, _NoPandas) for f in sys.meta_path) == 2

    finder = _NoPandas()
    for name in ("pandas", "pandas.core.frame"):
        with pytest.raises(ModuleNotFoundError) as missing:
            finder.find_spec(name)
        assert str(missing.value) == f"No module named {name!r}" and missing.value.name == name
    assert finder.find_spec("pandasql") is None and finder.find_spec("numpy") is None


def test_table_lists_every_exclusion_or_none(tmp_path: Path, files) -> None:
    run = tmp_path / "more.trec"
    run.write_text("A Q0 a 1 1 t\nX Q0 a 1 1 t\nY Q0 a 1 1 t\n")
    table = _run(files[0], str(run), "--k", "1").stdout
    line = next(x for x in table.splitlines() if x.startswith("queries: "))
    assert line.startswith(
        "queries: 3 scorable; excluded: no_relevant_judgments 1, not_in_qrels 2;"
    )
    qrels, one = tmp_path / "q.txt", tmp_path / "one.trec"
    qrels.write_text("A 0 a 1\n")
    one.write_text("A Q0 a 1 1 t\n")
    assert "queries: 1 scorable; excluded: none; " in _run(str(qrels), str(one)).stdout


def test_output_goes_to_the_streams_given_or_to_stdout_and_stderr(capsys, files) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert run_cli([*files, "--k", "2", "--format", "json"], out=out, err=err) == 0
    assert json.loads(out.getvalue())["status"] == "ok" and err.getvalue() == ""
    missing = files[1] + ".missing"
    assert run_cli([files[0], missing], out=out, err=err) == 2
    assert err.getvalue() == f"error: {missing}: No such file or directory\n"
    assert capsys.readouterr() == ("", "")  # nothing went to the process's streams
    assert run_cli([*files, "--k", "2", "--format", "json"]) == 0
    assert run_cli([files[0], missing]) == 2
    printed = capsys.readouterr()
    assert json.loads(printed.out)["status"] == "ok"
    assert printed.err == f"error: {missing}: No such file or directory\n"


@pytest.mark.parametrize(
    ("argv0", "prog"),
    [("/usr/bin/verity-eval", "verity-eval"), ("/x/scoring/__main__.py", "python -m scoring"),
     ("-m", "python -m scoring")],
)  # fmt: skip
def test_usage_names_the_command_as_it_was_started(monkeypatch, capsys, argv0, prog) -> None:
    monkeypatch.setattr(sys, "argv", [argv0, "--help"])
    with pytest.raises(SystemExit):
        run_cli()
    assert capsys.readouterr().out.startswith(f"usage: {prog} [-h]")


def test_json_is_compact_and_trec_eval_refuses_bounds_in_words(files) -> None:
    text = _run(*files, "--k", "2", "--format", "json").stdout
    assert text.startswith('{"status":"ok","params":{"ks":[2],') and '": ' not in text
    refused = _run(*files, "--format", "trec_eval", "--unjudged", "bounds")
    assert refused.returncode == 2 and refused.stderr == (
        "error: --format trec_eval prints one number per measure; --unjudged bounds gives "
        "intervals: use --format table, json or trec\n"
    )
    zero = _run(*files, "--k", "5,0")
    assert zero.returncode == 2 and "--k values must be positive integers; got '5,0'" in zero.stderr


def test_trec_eval_format_notes_departures_and_refuses_an_undefined_mean(tmp_path, files) -> None:
    proc = _run(*files, "--format", "trec_eval", "--measures", "P_2")
    assert (
        proc.returncode == 0
        and proc.stdout.splitlines()[-1] == "P_2                   \tall\t0.3333"
    )
    assert proc.stderr == (
        "note: 1 queries have no relevant judgment and are left out (trec_eval averages in "
        "those the run ranks: as 0 for most measures, but its ndcg_cut counts every positive "
        "grade, below -l too; verity-trec-eval follows trec_eval exactly)\n"
    )
    qrels = tmp_path / "zero.txt"
    qrels.write_text("A 0 a 0\n")
    undefined = _run(str(qrels), files[1], "--format", "trec_eval")
    assert undefined.returncode == 2 and undefined.stdout == ""
    assert undefined.stderr == "error: no scorable query, so every mean is undefined\n"
