"""Cases a differential fuzzer (random small qrels and runs, against the built trec_eval
10.0) found, minimised, byte for byte: hexadecimal scores (C's atof reads them), and a
line starting with a blank after the first in a run read from standard input or in qrels
without a final newline (trec_eval skips the blank; the query id is the word after); and
lines pyarrow, splitting on one delimiter, reads otherwise than trec_eval, which splits on
any run of blanks: two delimiters in a row or one ending a line (an empty field, where
trec_eval sees a field missing and refuses the line), a tab inside a field split on
spaces, a carriage return inside a line; an empty run on standard input (read as no line, where
an empty file is refused)."""

from __future__ import annotations

import pytest

from tests.trec_eval.conftest import run_oracle, run_verity

CASES = {
    "hex scores": (
        b"301 0 clueweb09-en0000-00-00001 1\n",
        b"301\tQ0\tclueweb09-en0000-00-00001\t3\t+1\trun1\n"
        b"301\tQ0\tBg\t8\t0x10\trun0\n"
        b"301\tQ0\tC\t9\t-0x1.8p1\trun0\n"
        b"301\tQ0\tD\t9\t0x.8\trun0\n",
    ),
    "hex score overflowing": (
        b"1 0 A 1\n",
        b"1 Q0 A 1 1 r\n1 Q0 B 2 0x1p99999 r\n1 Q0 C 3 -0x1p99999 r\n",
    ),
    "run line starting with a blank": (
        b"Q 0 a-b 2\nQ 0 L 1\n",
        b"Q\tQ0\tA\t3\t1e-300\trun0\n Q\tQ0\tL\t4\t4.9e-324\trun1\n",
    ),
    "qrels line starting with a blank, no final newline": (
        b"301\t0\tD01\t2\n 1\t0\tX\t-1\n1\t0\tD01\t2",
        b"1 Q0 D01 3 0 run1\n1 Q0 X 3 0 run1\n",
    ),
}
for name, line in {
    "empty docno": b"q Q0  2 1 r",
    "empty rank": b"q Q0 B  1 r",
    "empty run id": b"q Q0 B 2 1 ",
    "empty iter": b"q  B 2 1 r",
    "tab inside a space-split field": b"q Q0 B\tX 2 1 r",
    "carriage return inside a line": b"q Q0 B 2 1 r\rq Q0 C 3 5 r",
}.items():
    for last in (b"q Q0 C 3 0 r\n", b""):
        CASES[f"{name}{', last line' if not last else ''}"] = (
            b"q 0 A 1\nq 0 B 1\n",
            b"q Q0 A 1 2 r\n" + line + b"\n" + last,
        )
CASES["empty run"] = (b"10 0 A 0\n2 0 B 1\n", b"")
CASES["qrels fields apart by a space and a tab"] = (
    b"q2 \t0  bb\t1\nq2 0 A 1\n",
    b"q2 Q0 bb 3 1 run0\nq2 Q0 A 4 2 run0\n",
)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
@pytest.mark.parametrize(
    "flags", [["-q"], ["-q", "-c", "-m", "all_trec"], ["-m", "map"]], ids=["q", "all", "map"]
)
def test_fuzzed_cases_match_trec_eval(name, stdin, flags, tmp_path, trec_eval_binary):
    qrels_bytes, run_bytes = CASES[name]
    if name == "empty run" and "all_trec" in flags:
        pytest.skip("with no run line trec_eval prints uninitialised memory as the run id")
    qrels = tmp_path / "qrels"
    qrels.write_bytes(qrels_bytes)
    run = tmp_path / "run"
    run.write_bytes(run_bytes)
    args = [*flags, str(qrels), "-" if stdin else str(run)]
    data = run_bytes if stdin else None
    expected = run_oracle(trec_eval_binary, args, tmp_path, stdin=data)
    got = run_verity(args, stdin=data)
    assert (got.status, got.stdout, got.stderr) == (
        expected.status,
        expected.stdout,
        expected.stderr,
    )
