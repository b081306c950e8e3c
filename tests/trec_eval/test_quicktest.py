"""Every command of trec_eval 10's ``make quicktest``, run with ``verity-trec-eval`` in
place of the program: the expected file byte for byte, or, for the preference,
judgment-group and z-score formats, a refusal that says so (status 2, nothing on stdout).

The commands are read from the reference Makefile itself, so a command added there is a
case here."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.shared_data import shared_dir
from tests.trec_eval.conftest import run_oracle, run_verity

SOURCE = shared_dir() / "reference" / "trec_eval-10.0"
QUICKTEST = re.compile(r"^\t\./trec_eval (.*?) \| diff - (test/\S+)\s*$")


def quicktest_commands() -> list[tuple[list[str], str]]:
    makefile = SOURCE / "Makefile"
    if not makefile.exists():
        return []
    lines = makefile.read_text().split("\nquicktest:", 1)[1].split("\n\n", 1)[0]
    return [
        (shlex.split(m.group(1)), m.group(2))
        for line in lines.splitlines()
        if (m := QUICKTEST.match(line))
    ]


COMMANDS = quicktest_commands()
REFUSED = ("prefs", "qrels_prefs", "qrels_jg")


def test_the_makefile_lists_the_fifteen_quicktest_commands(trec_eval_source):
    assert len(COMMANDS) == 15


@pytest.mark.parametrize(
    ("args", "expected"), COMMANDS, ids=[" ".join(a) for a, _ in COMMANDS] or None
)
def test_quicktest_command(args, expected, trec_eval_source, monkeypatch):
    monkeypatch.chdir(trec_eval_source)
    got = run_verity(args)
    refused = any(a == "-R" and args[i + 1] in REFUSED for i, a in enumerate(args[:-1]))
    if refused:
        assert got.status == 2
        assert got.stdout == b""
        assert "not supported" in got.stderr
        return
    assert got.stderr == ""
    assert got.status == 0
    assert got.stdout == (trec_eval_source / expected).read_bytes()


def test_the_oracle_binary_passes_its_own_quicktest(trec_eval_binary, trec_eval_source):
    """The built binary is the reference: it prints the expected files itself."""
    for args, expected in COMMANDS[:3]:
        got = run_oracle(trec_eval_binary, args, trec_eval_source)
        assert got.stdout == (trec_eval_source / expected).read_bytes()


def test_the_run_from_standard_input(trec_eval_source, monkeypatch):
    monkeypatch.chdir(trec_eval_source)
    run = (trec_eval_source / "test" / "results.test").read_bytes()
    got = run_verity(["-q", "test/qrels.test", "-"], stdin=run)
    assert got.status == 0
    expected = run_verity(["-q", "test/qrels.test", "test/results.test"])
    assert got.stdout == expected.stdout
