"""'Settled' is certain for P@k (issue 28, item 3): whenever ``sign_bounds`` says the
sign of mean(a - b) is settled, every labeling of the unjudged items (one label per pair,
the same for both runs) keeps that sign. P@k depends only on the labels of a run's own
first k items, so the bounds policy's two labelings are its true extremes per run, and
taking a shared item as relevant for one run and not the other only widens the range.

Checked by brute force over every labeling, on small random rankings. No database."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from scoring import comparison
from verity_eval import EvalParams, evaluate

K = 3
DOCS = [f"d{i}" for i in range(7)]
QUERIES = ["q1", "q2"]


@st.composite
def cases(draw):
    qrels, run_a, run_b = {}, {}, {}
    for q in QUERIES:
        judged = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=5))
        grades = draw(st.lists(st.integers(0, 1), min_size=len(judged), max_size=len(judged)))
        qrels[q] = dict(zip(judged, grades, strict=True))
        qrels[q][judged[0]] = 1  # every query scorable
        run_a[q] = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=4))
        run_b[q] = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=4))
    return qrels, run_a, run_b


def per_query(qrels, run, unjudged):
    params = EvalParams(ks=(K,), measures=(f"P@{K}",), rel_level=1, unjudged=unjudged)
    return evaluate(qrels, run, params).per_query


@settings(max_examples=150, deadline=None)
@given(cases())
def test_settled_means_no_labeling_changes_the_sign(case):
    qrels, run_a, run_b = case
    m = f"P@{K}"
    a, b = per_query(qrels, run_a, "bounds"), per_query(qrels, run_b, "bounds")
    got = comparison.sign_bounds(
        [a[q][m]["low"] for q in QUERIES],
        [a[q][m]["high"] for q in QUERIES],
        [b[q][m]["low"] for q in QUERIES],
        [b[q][m]["high"] for q in QUERIES],
    )
    holes = sorted(
        {(q, d) for run in (run_a, run_b) for q in QUERIES for d in run[q][:K]}
        - {(q, d) for q in QUERIES for d in qrels[q]}
    )
    means = []
    for labels in itertools.product((0, 1), repeat=len(holes)):
        full = {q: dict(g) for q, g in qrels.items()}
        for (q, d), grade in zip(holes, labels, strict=True):
            full[q][d] = grade
        x, y = per_query(full, run_a, "nonrel"), per_query(full, run_b, "nonrel")
        means.append(sum(x[q][m] - y[q][m] for q in QUERIES) / len(QUERIES))
    # every labeling lies within the range
    assert got["low"] - 1e-12 <= min(means) and max(means) <= got["high"] + 1e-12
    if got["verdict"] == "a":
        assert min(means) > 0
    elif got["verdict"] == "b":
        assert max(means) < 0
    elif got["verdict"] == "tie":
        assert all(abs(v) <= 1e-12 for v in means)
