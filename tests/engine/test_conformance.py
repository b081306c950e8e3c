"""Conformance with trec_eval 10's own test files (../shared/conformance/trec_eval).

The expected outputs are rounded to 4 decimals, so values are compared to 5e-5. The
folder is not copied into the repository; the tests skip, saying why, when it is absent
(set VERITY_SHARED to the folder holding ``conformance/``).
"""

from __future__ import annotations

import pytest

from tests.shared_data import need_shared, shared_dir
from verity_eval import EvalParams, evaluate, read_qrels, read_run

CONF = shared_dir() / "conformance" / "trec_eval"


@pytest.fixture(autouse=True)
def _conformance_data() -> None:
    need_shared(CONF, "trec_eval conformance data")


KS = (1, 5, 10, 20, 100, 1000)
# trec_eval name -> ours. unj_k (unjudged among the first k / k, where unjudged = absent
# from the qrels or graded -1) is checked through Judged@k + unj_k = min(k, retrieved) / k.
NAMES = {"map": "AP", "recip_rank": "RR"}
NAMES.update({f"recall_{k}": f"R@{k}" for k in KS})
NAMES.update({f"P_{k}": f"P@{k}" for k in (1, 5, 10)})
NAMES.update({f"success_{k}": f"AnyHit@{k}" for k in (1, 5, 10)})
NAMES.update({f"ndcg_cut_{k}": f"nDCG@{k}" for k in (5, 10, 20)})


def _expected(name: str) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in (CONF / name).read_text().splitlines():
        measure, qid, value = line.split()
        out.setdefault(qid, {})[measure] = float(value)
    return out


CASES = [
    # file, qrels, run, params, compare unj?
    ("out.core.q", "qrels.test", "results.test", {}, True),
    ("out.core.ql2", "qrels.rel_level", "results.test", {"rel_level": 2}, True),
    ("out.core.qJ", "qrels.test", "results.test", {"unjudged": "judged-only"}, False),
    # -c: trec_eval averages over every qrels query, a missing one scoring 0. Query 302 is
    # absent from results.trunc: for us it is a scorable query with an empty ranking, so
    # our macro equals trec_eval's -c average here.
    ("out.core.qc.trunc", "qrels.test", "results.trunc", {}, True),
]


@pytest.mark.parametrize(
    ("expected", "qrels", "run", "params", "unj"), CASES, ids=[c[0] for c in CASES]
)
def test_per_query_and_average(
    expected: str, qrels: str, run: str, params: dict, unj: bool
) -> None:
    want = _expected(expected)
    result = evaluate(read_qrels(CONF / qrels), read_run(CONF / run), EvalParams(ks=KS, **params))
    assert result.status == "ok"
    for qid, row in want.items():
        for trec_name, ours in NAMES.items():
            got = result.per_query[qid][ours] if qid != "all" else result.aggregates[ours]["macro"]
            assert got == pytest.approx(row[trec_name], abs=5e-5), (qid, trec_name)
        if qid != "all":
            assert result.per_query[qid]["relevant"] == row["num_rel"]
            assert result.per_query[qid]["hits@1000"] == row["num_rel_ret"]
            assert result.per_query[qid]["retrieved"] == row["num_ret"]
            if unj:
                for k in (5, 10, 20):
                    filled = min(k, row["num_ret"]) / k
                    assert filled - result.per_query[qid][f"Judged@{k}"] == pytest.approx(
                        row[f"unj_{k}"], abs=5e-5
                    )
    assert result.counts["scorable"] == want["all"]["num_q"]


def test_empty_ranking_counted_for_truncated_run() -> None:
    result = evaluate(
        read_qrels(CONF / "qrels.test"), read_run(CONF / "results.trunc"), EvalParams(ks=(10,))
    )
    assert result.counts["empty_ranking"] == 1
    assert result.per_query["302"]["retrieved"] == 0


def test_qrels_comments_are_skipped_but_hash_in_docid_is_data() -> None:
    plain = read_qrels(CONF / "qrels.test").to_mapping()
    commented = read_qrels(CONF / "qrels.test.with-comments").to_mapping()
    # The commented copy renames one docid CR93E-1860 -> CR#93E-1860 (a '#' inside an id)
    # and adds three comment lines; nothing else differs.
    assert commented["301"].pop("CR#93E-1860") == plain["301"].pop("CR93E-1860")
    assert commented == plain


def test_extra_trailing_fields_are_ignored() -> None:
    run = read_run(CONF / "results.trunc")
    assert len(run) == 584
    assert run.qids == ("301", "303")
