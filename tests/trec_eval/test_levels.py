"""``level_tables`` with arrays against the loop that follows form_res_rels step by step
(its one buffer reused from query to query, grown and cleared as trec_eval does)."""

from __future__ import annotations

import random

import numpy as np

from verity_eval.trec_eval import measures


def _case(rnd: random.Random):
    n = rnd.randint(1, 30)
    top = rnd.choice([1, 3, 5, 40])
    rows, grades = [], []
    for q in range(n):
        for _ in range(rnd.choice([0, 0, 1, 2, 5, 12])):
            rows.append(q)
            grades.append(rnd.choice([-3, -1, -1, 0, 0, *range(top)]))
    order = np.argsort(rows, kind="stable")
    rows_a = np.array(rows, np.int64)[order]
    grades_a = np.array(grades, np.int64)[order]
    bounds = np.searchsorted(rows_a, np.arange(n + 1))
    return n, rows_a, grades_a, bounds


def test_level_arrays_equal_the_loop():
    rnd = random.Random(26)
    for _ in range(600):
        n, rows, g, bounds = _case(rnd)
        level = rnd.choice([-1, 0, 1, 2, 3, 7])
        shuffled = np.random.default_rng(len(rows)).permutation(len(rows))
        got = measures._level_arrays(n, rows[shuffled], g[shuffled], level)
        want = measures._level_loop(n, g, bounds, level)
        assert got is not None
        assert [t.tolist() for t in got[0]] == [t.tolist() for t in want[0]]
        assert list(got[1]) == list(want[1])
        assert got[2].tolist() == want[2].tolist()
        assert got[3].tolist() == want[3].tolist()


def test_a_huge_grade_takes_the_loop(monkeypatch):
    monkeypatch.setattr(measures, "LEVEL_CELLS", 10)
    rows = np.array([0, 1], np.int64)
    g = np.array([50, 1], np.int64)
    assert measures._level_arrays(2, rows, g, 1) is None


def test_running_out_of_memory_says_what_to_check_instead_of_a_traceback(
    tmp_path, monkeypatch, capsys
):
    """A grade of 2147483647 makes the level tables ask for 16 GiB (trec_eval 10 prints
    its measures: its buffer is touched only where used); here the table is an array,
    so the run ends with a message naming the qrels' grades and status 3."""
    from verity_eval.trec_eval import cli

    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 d1 2147483647\nq1 0 d2 0\n")
    run.write_text("q1 Q0 d1 1 1.0 r\nq1 Q0 d2 2 0.5 r\n")

    def too_big(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(cli, "level_tables", too_big)
    assert cli.main([str(qrels), str(run)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("verity-trec-eval: out of memory.")
    assert "qrels' fourth column" in err
