"""The oracle: trec_eval 10.0 built from ``../shared/reference/trec_eval-10.0`` (gcc and
make, about ten seconds, once: the binary is kept in pytest's cache directory), and a way
to run ``verity-trec-eval`` in this process with bytes in and bytes out.

Without ``../shared`` the tests that need the oracle skip, saying why; under
``VERITY_REQUIRE_SHARED=1`` they fail instead.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.shared_data import need_shared, shared_dir
from verity_eval.trec_eval import cli


@dataclass(frozen=True)
class Outcome:
    status: int
    stdout: bytes
    stderr: str


@pytest.fixture(scope="session")
def trec_eval_source() -> Path:
    return need_shared(shared_dir() / "reference" / "trec_eval-10.0", "trec_eval 10.0's source")


@pytest.fixture(scope="session")
def trec_eval_binary(
    trec_eval_source: Path, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The C program, built once per source (keyed by a hash of its .c and .h files)."""
    digest = hashlib.sha256()
    for path in sorted(trec_eval_source.glob("*.[ch]")):
        digest.update(path.name.encode() + path.read_bytes())
    name = f"trec_eval-{digest.hexdigest()[:16]}"
    cache = getattr(request.config, "cache", None)  # absent under -p no:cacheprovider
    build = Path(cache.mkdir(name)) if cache is not None else tmp_path_factory.mktemp(name)
    binary = build / "trec_eval"
    if not binary.exists():
        if shutil.which("make") is None or shutil.which("gcc") is None:
            pytest.fail("building trec_eval needs gcc and make")
        source = build / "src"
        shutil.rmtree(source, ignore_errors=True)
        shutil.copytree(trec_eval_source, source)
        done = subprocess.run(["make", "trec_eval"], cwd=source, capture_output=True, text=True)
        if done.returncode != 0:
            pytest.fail(f"building trec_eval failed:\n{done.stderr[-2000:]}")
        shutil.copy2(source / "trec_eval", binary)
    return binary


def run_oracle(binary: Path, args: list[str], cwd: Path, stdin: bytes | None = None) -> Outcome:
    done = subprocess.run(
        [str(binary), *args], cwd=cwd, input=stdin, capture_output=True, timeout=60
    )
    return Outcome(done.returncode, done.stdout, done.stderr.decode("latin-1"))


def run_verity(args: list[str], stdin: bytes | None = None) -> Outcome:
    """``verity-trec-eval`` in this process (no interpreter start per case)."""
    out, err = io.BytesIO(), io.BytesIO()
    wrappers = (
        io.TextIOWrapper(out, encoding="latin-1"),
        io.TextIOWrapper(err, encoding="latin-1"),
        io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="latin-1"),
    )
    saved = sys.stdout, sys.stderr, sys.stdin
    sys.stdout, sys.stderr, sys.stdin = wrappers
    try:
        status = cli.main(list(args))
    finally:
        sys.stdout, sys.stderr, sys.stdin = saved
        for wrapper in wrappers:
            wrapper.flush()
            wrapper.detach()
    return Outcome(status, out.getvalue(), err.getvalue().decode("latin-1"))
