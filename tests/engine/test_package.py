"""The engine package's own code: names resolved on first use (PEP 562), and the command
line's end when its reader goes away. Both are also checked from outside (a fresh
interpreter in tests/test_startup.py; ``| head`` in tests/scoring/test_cli_edges.py);
these check them in the test process, where a mutation tool can see them."""

from __future__ import annotations

import os
import stat
import sys

import pytest

import verity_eval as engine
from verity_eval import cli, evaluate, readers, tables

evaluate_module = sys.modules["verity_eval.evaluate"]
LAZY = {
    "EvalResult": evaluate_module,
    "evaluate": evaluate_module,
    "exclusion_reason": evaluate_module,
    "Statuses": readers,
    "read_mapping": readers,
    "read_qrels": readers,
    "read_run": readers,
    "read_run_stages": readers,
    "read_statuses": readers,
    "Qrels": tables,
    "Run": tables,
}


@pytest.mark.parametrize("name", sorted(LAZY))
def test_a_lazy_name_is_the_submodules_object_and_is_kept(monkeypatch, name):
    monkeypatch.delitem(engine.__dict__, name, raising=False)

    value = engine.__getattr__(name)

    assert value is getattr(LAZY[name], name)
    assert engine.__dict__[name] is value  # bound on the package: asked once


def test_the_package_attribute_evaluate_stays_the_function():
    assert engine.evaluate is evaluate  # the function, not the submodule of that name
    assert callable(engine.evaluate) and engine.evaluate.__module__ == "verity_eval.evaluate"


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError) as missing:
        engine.__getattr__("read_tea_leaves")

    assert str(missing.value) == "module 'verity_eval' has no attribute 'read_tea_leaves'"


def test_a_closed_pipe_ends_the_command_with_141_and_stdout_on_dev_null(monkeypatch, tmp_path):
    def closed_pipe() -> int:
        raise BrokenPipeError

    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))  # main() adds a finder
    out = open(tmp_path / "stdout", "w")  # noqa: SIM115  (its descriptor is replaced)
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(cli, "run_cli", closed_pipe)
    try:
        with pytest.raises(SystemExit) as ended:
            cli.main()
        now = os.fstat(out.fileno())
    finally:
        out.close()

    assert ended.value.code == 141  # 128 + SIGPIPE, as a shell reports `… | head`
    null = os.stat(os.devnull)
    assert stat.S_ISCHR(now.st_mode) and now.st_rdev == null.st_rdev  # later writes vanish


def test_main_exits_with_the_commands_status(monkeypatch):
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setattr(cli, "run_cli", lambda: 3)

    with pytest.raises(SystemExit) as ended:
        cli.main()

    assert ended.value.code == 3
