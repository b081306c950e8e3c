"""Paired comparison: the statistics against independent computations, Holm against a
hand calculation, the degenerate cases, and the refusals.

The oracles are written here and share nothing with ``scoring/comparison.py`` (which calls
scipy): the randomization p-value is an exact enumeration of all 2^n sign flips in plain
numpy (equal to the code's when it says "exact", within Monte Carlo error when it
resamples); the bootstrap interval is a percentile bootstrap, and its BCa correction
(Efron & Tibshirani 1993, 14.3), drawn from this file's own generator, to be met within
Monte Carlo error; the t statistic and d_z by their formulas; Holm's adjustment worked
out on paper.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats

import verity_eval as engine
from judgments.models import Item, Query
from judgments.services import freeze_snapshot, record_judgment
from scoring import comparison
from scoring.models import Evaluation, Run
from scoring.reports import ComparisonRefused, compare_evaluations, comparison_refusals
from scoring.services import import_run, score_run_stage
from tests.scoring.report_helpers import (
    RECALL_EXAMPLE,
    demo_runs,
    import_and_score,
    load_demo_collection,
)

SEED = 12345
#: The oracle's own generator (numpy's PCG64, seeded apart from the code's seed).
ORACLE_SEED = 20260101
ORACLE_RESAMPLES = 40_000
CODE_RESAMPLES = 10_000


def sign_flip_sums(d: np.ndarray) -> np.ndarray:
    """Sum of s_i * d_i for every one of the 2^n sign vectors s (doubling, plain numpy)."""
    sums = np.zeros(1)
    for x in d:
        sums = np.concatenate([sums + x, sums - x])
    return sums


def exact_sign_flip_p(a, b) -> float:
    """P(|mean*| >= |mean|) over all 2^n sign flips of the paired differences; sums that
    differ from the observed one by float noise only (1e-9) count as equal."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    sums = sign_flip_sums(d)
    return float(np.mean(np.abs(sums) >= abs(d.sum()) - 1e-9))


def randomization_tolerance(p: float) -> float:
    """Five standard errors of a two-sided p from CODE_RESAMPLES sign-flip resamples
    (each tail estimated, then doubled), plus the (count + 1)/(B + 1) correction."""
    tail = min(max(p / 2, 1 / CODE_RESAMPLES), 0.5)
    return 5 * 2 * math.sqrt(tail * (1 - tail) / CODE_RESAMPLES) + 2 / (CODE_RESAMPLES + 1)


def bootstrap_by_hand(arrays, statistic, method: str) -> tuple[np.ndarray, np.ndarray]:
    """(resampled statistics, the two levels of the 95 % interval): a paired bootstrap,
    queries resampled in pairs by a generator of its own; ``percentile`` levels 2.5 % and 97.5 %,
    or ``BCa`` levels, with z0 from the observed value's mid-rank among the resamples
    and the jackknife acceleration."""
    arrays = [np.asarray(x, dtype=float) for x in arrays]
    n = arrays[0].size
    idx = np.random.default_rng(ORACLE_SEED).integers(0, n, size=(ORACLE_RESAMPLES, n))
    boot = statistic(*(x[idx] for x in arrays))
    levels = np.array([0.025, 0.975])
    if method == "BCa":
        theta = statistic(*(x[None, :] for x in arrays))[0]
        below = (np.sum(boot < theta) + np.sum(boot <= theta)) / 2 / boot.size
        z0 = NormalDist().inv_cdf(below)
        keep = ~np.eye(n, dtype=bool)
        jack = statistic(*(np.broadcast_to(x, (n, n))[keep].reshape(n, n - 1) for x in arrays))
        u = jack.mean() - jack
        acc = np.sum(u**3) / (6 * np.sum(u**2) ** 1.5)
        z = [NormalDist().inv_cdf(q) for q in levels]
        levels = np.array([NormalDist().cdf(z0 + (z0 + zq) / (1 - acc * (z0 + zq))) for zq in z])
    return boot, levels


def mean_diff(x, y, axis=-1):
    return np.mean(x - y, axis=axis)


#: How far (in probability) the code's interval ends may sit from the oracle's levels:
#: about six standard errors of a 2.5 % quantile from 10,000 resamples. A 90 % interval
#: (levels 5 % / 95 %) instead of 95 % is 2.5 points away.
LEVEL_SLACK = 0.01


def assert_interval_within_monte_carlo_error(got: dict, arrays, statistic) -> None:
    """Each end of the code's interval lies between this file's bootstrap quantiles at
    its level ± LEVEL_SLACK: Monte Carlo error, measured in rank, so that it holds on the
    lattice that per-query values of 0 and 1 make as well as on smooth data."""
    assert got["ci_method"] in ("BCa", "percentile")
    boot, levels = bootstrap_by_hand(arrays, statistic, got["ci_method"])
    for end, level in zip((got["ci_low"], got["ci_high"]), levels, strict=True):
        lo, hi = np.percentile(
            boot, [100 * max(level - LEVEL_SLACK, 0), 100 * min(level + LEVEL_SLACK, 1)]
        )
        assert lo - 1e-12 <= end <= hi + 1e-12, (got["ci_method"], level, end, lo, hi)


# -- Holm -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "adjusted"),
    [
        # sorted: 0.005·4 = 0.02; 0.01·3 = 0.03; 0.03·2 = 0.06; 0.04·1 = 0.04 → max(0.06, 0.04)
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
        # undefined p-values are left out of the family: m = 2
        ([None, 0.2, 0.6], [None, 0.4, 0.6]),
        # capped at 1, and monotone: 0.5·2 = 1.0; 0.6·1 = 0.6 → max(1.0, 0.6)
        ([0.5, 0.6], [1.0, 1.0]),
        ([0.01], [0.01]),
        ([], []),
        # ties keep equal adjusted values: 0.02·3 = 0.06 for both, then 0.5·1 → 0.5
        ([0.02, 0.5, 0.02], [0.06, 0.5, 0.06]),
    ],
    ids=["four", "with-undefined", "capped", "single", "empty", "ties"],
)
def test_holm_matches_a_hand_calculation(raw, adjusted):
    got = comparison.holm(raw)

    assert len(got) == len(adjusted)
    for g, want in zip(got, adjusted, strict=True):
        assert (g is None and want is None) or g == pytest.approx(want, abs=1e-12)


# -- one measure: values against independent computations ----------------------------------


def test_paired_comparison_agrees_with_independent_computations():
    rng = np.random.default_rng(7)
    a = rng.random(18)
    b = np.clip(a - 0.05 + rng.normal(0, 0.1, 18), 0, 1)

    got = comparison.paired_comparison(a, b, seed=SEED)

    d = a - b
    sd = float(np.std(d, ddof=1))
    t = d.mean() / (sd / math.sqrt(len(d)))
    # 2^18 > 10,000: the code resamples; the exact p is 2^18 flips away.
    exact = exact_sign_flip_p(a, b)
    assert got["p_exact"] is False and got["p_resamples"] == CODE_RESAMPLES
    assert got["p"] == pytest.approx(exact, abs=randomization_tolerance(exact))
    assert_interval_within_monte_carlo_error(got, (a, b), mean_diff)
    assert got["t"] == pytest.approx(t, rel=1e-12)
    assert got["p_t"] == pytest.approx(2 * stats.t.sf(abs(t), len(d) - 1), rel=1e-9)
    assert got["d_z"] == pytest.approx(d.mean() / sd, rel=1e-12)
    assert got["mean_diff"] == pytest.approx(d.mean())
    assert (got["wins"], got["ties"], got["losses"]) == (
        int((d > 0).sum()),
        int((d == 0).sum()),
        int((d < 0).sum()),
    )


def generated_pairs(n_cases: int):
    """Paired per-query values like the engine's: ratios k/m with m <= 6 (ties, zeros and
    float noise in their sums included), n from 1 to 13 (2^13 = 8,192 <= 10,000)."""
    rng = np.random.default_rng(99)
    for case in range(n_cases):
        n = 1 + case % 13
        m = rng.integers(1, 7, size=n)
        a = rng.integers(0, m + 1) / m
        b = np.where(rng.random(n) < 0.3, a, rng.integers(0, m + 1) / m)
        yield case, a, b


@pytest.mark.parametrize(("case", "a", "b"), list(generated_pairs(39)), ids=lambda v: "")
def test_exact_randomization_p_equals_the_enumeration_of_every_sign_flip(case, a, b):
    got = comparison.paired_comparison(a, b, seed=SEED)

    assert got["p"] == pytest.approx(exact_sign_flip_p(a, b), abs=1e-12)
    if not np.allclose(a, b, rtol=0, atol=comparison.TIE):
        assert got["p_exact"] is True


@pytest.mark.parametrize("n", [14, 16])
def test_resampled_randomization_p_is_within_monte_carlo_error_of_the_exact_one(n):
    rng = np.random.default_rng(n)
    for _ in range(3):
        a = rng.integers(0, 4, size=n) / 3
        b = np.clip(a - rng.integers(-1, 3, size=n) / 3, 0, 1)
        got = comparison.paired_comparison(a, b, seed=SEED)
        exact = exact_sign_flip_p(a, b)
        assert got["p_exact"] is False
        assert got["p"] == pytest.approx(exact, abs=randomization_tolerance(exact)), (a, b)


def test_small_samples_get_the_exact_sign_flip_test():
    # n = 6: 2^6 = 64 sign assignments ≤ 10,000, so scipy enumerates them all.
    a = np.array([0.9, 0.8, 0.5, 0.7, 0.4, 0.6])
    b = np.array([0.5, 0.8, 0.2, 0.6, 0.6, 0.1])
    d = a - b
    observed = abs(d.mean())
    flips = np.array(list(itertools.product((1, -1), repeat=len(d))))
    extreme = np.abs((flips * d).mean(axis=1)) >= observed - 1e-12
    by_hand = extreme.sum() / len(flips)

    got = comparison.paired_comparison(a, b, seed=SEED)

    assert got["p_exact"] is True and got["p_resamples"] == 64
    assert got["p"] == pytest.approx(by_hand, abs=1e-12)
    assert got["ties"] == 1 and got["wins"] == 4 and got["losses"] == 1


def test_all_differences_zero_is_p_one_interval_zero_and_no_effect_size():
    got = comparison.paired_comparison([0.5, 1.0, 0.0, 0.25], [0.5, 1.0, 0.0, 0.25], seed=SEED)

    assert got["p"] == 1.0 and got["p_t"] == 1.0
    assert (got["ci_low"], got["ci_high"]) == (0.0, 0.0)
    assert got["mean_diff"] == 0.0
    assert got["t"] is None and got["d_z"] is None
    assert (got["wins"], got["ties"], got["losses"]) == (0, 4, 0)
    assert any("every difference is zero" in n for n in got["notes"])


def test_equal_nonzero_differences_have_no_t_or_effect_size():
    got = comparison.paired_comparison([1.0, 1.0, 1.0, 1.0], [0.5, 0.5, 0.5, 0.5], seed=SEED)

    assert (got["ci_low"], got["ci_high"]) == (0.5, 0.5)
    assert got["t"] is None and got["p_t"] is None and got["d_z"] is None
    # exact: only the two all-same-sign assignments of 16 reach |mean| = 0.5
    assert got["p_exact"] is True and got["p"] == pytest.approx(2 / 16)
    assert any("sd of the differences is 0" in n for n in got["notes"])


def test_no_pairs_and_one_pair():
    none = comparison.paired_comparison([], [], seed=SEED)
    one = comparison.paired_comparison([1.0], [0.0], seed=SEED)

    assert none["n"] == 0 and none["mean_diff"] is None and none["p"] is None
    assert one["mean_diff"] == 1.0 and one["ci_low"] is None and one["d_z"] is None
    assert one["p"] == 1.0  # both sign assignments are as extreme as the observed one
    assert any("one pair" in n for n in one["notes"])


def test_pooled_difference_is_a_ratio_of_sums_with_a_paired_bootstrap():
    ha, ga = [1, 1, 0, 2, 3, 0, 1], [3, 1, 1, 2, 4, 2, 1]
    hb, gb = [0, 1, 0, 1, 2, 1, 0], [3, 1, 1, 2, 4, 2, 1]

    got = comparison.pooled_difference(ha, ga, hb, gb, seed=SEED)

    def statistic(ha, ga, hb, gb):
        return ha.sum(axis=-1) / ga.sum(axis=-1) - hb.sum(axis=-1) / gb.sum(axis=-1)

    # By hand: a = 8/14, b = 5/14.
    assert got["pooled_a"] == pytest.approx(8 / 14) and got["pooled_b"] == pytest.approx(5 / 14)
    assert got["diff"] == pytest.approx(3 / 14)
    assert_interval_within_monte_carlo_error(got, (ha, ga, hb, gb), statistic)


# -- two runs over the demo collection -------------------------------------------------------


@pytest.fixture(scope="module")
def demo_run_files(tmp_path_factory):
    return demo_runs(tmp_path_factory.mktemp("demo-runs"))


@pytest.fixture
def score_demo(db, demo_run_files):
    """Import the demo collection, freeze v1, import and score the named runs at k 5, 10."""

    def load(*names: str) -> dict[str, Evaluation]:
        collection, _ = load_demo_collection()
        for name in names:
            import_and_score(collection, demo_run_files[name], name, "--k", "5,10", "--snapshot", 1)
        return {e.run.name: e for e in Evaluation.objects.filter(collection=collection)}

    return load


def rows_of(evaluation: Evaluation) -> dict[str, dict]:
    return {
        q: v for q, v in evaluation.rows.values_list("query_id", "values") if "excluded" not in v
    }


@pytest.mark.parametrize(("name_a", "name_b"), [("fulltext", "titles"), ("fulltext", "overlap")])
def test_demo_comparison_agrees_with_an_independent_computation(score_demo, name_a, name_b):
    evaluations = score_demo(name_a, name_b)
    a, b = evaluations[name_a], evaluations[name_b]

    result = compare_evaluations(a, b, seed=SEED)

    rows_a, rows_b = rows_of(a), rows_of(b)
    assert result["mode"] == "runs" and result["queries"]["paired"] == 20 == len(rows_a)
    assert result["seed"] == SEED
    tested = [e["key"] for e in result["measures"]]
    assert "R@10" in tested and "AP" in tested and "Judged@10" not in tested
    assert "Ceiling@10" not in tested
    raw = []
    for entry in result["measures"]:
        m = entry["measure"]
        qids = sorted(q for q in rows_a if m in rows_a[q] and m in rows_b[q])
        va = np.array([rows_a[q][m] for q in qids])
        vb = np.array([rows_b[q][m] for q in qids])
        d = va - vb
        assert entry["n"] == len(qids)
        assert entry["mean_diff"] == pytest.approx(d.mean(), abs=1e-15)
        raw.append(entry["p"])
        if np.ptp(d) == 0:  # degenerate: every difference equal, decided explicitly
            assert entry["d_z"] is None and entry["t"] is None
            assert (entry["ci_low"], entry["ci_high"]) == (d[0], d[0]), m
            if d[0] == 0:
                assert entry["p"] == 1.0, m
            continue
        # 2^20 sign flips: the code resamples 10,000 of them; the oracle counts them all.
        exact = exact_sign_flip_p(va, vb)
        assert entry["p"] == pytest.approx(exact, abs=randomization_tolerance(exact)), m
        assert_interval_within_monte_carlo_error(entry, (va, vb), mean_diff)
        sd = d.std(ddof=1)
        t = d.mean() / (sd / math.sqrt(len(d)))
        assert entry["t"] == pytest.approx(t, rel=1e-9, abs=1e-12), m
        assert entry["p_t"] == pytest.approx(2 * stats.t.sf(abs(t), len(d) - 1), rel=1e-6)
        assert entry["d_z"] == pytest.approx(d.mean() / sd, rel=1e-9, abs=1e-12), m
        assert (entry["wins"], entry["ties"], entry["losses"]) == (
            int((d > 1e-12).sum()),
            int((abs(d) <= 1e-12).sum()),
            int((d < -1e-12).sum()),
        )
    # Holm, by its definition: each p times (m - rank), then the running maximum.
    order = sorted(range(len(raw)), key=lambda i: raw[i])
    expected, running = [0.0] * len(raw), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(raw) - rank) * raw[i]))
        expected[i] = running
    assert [e["p_holm"] for e in result["measures"]] == pytest.approx(expected)


def test_demo_comparison_of_clearly_different_runs_is_significant(score_demo):
    demo_evaluations = score_demo("fulltext", "titles")
    result = compare_evaluations(
        demo_evaluations["fulltext"], demo_evaluations["titles"], seed=SEED
    )

    by_key = {e["key"]: e for e in result["measures"]}
    assert by_key["R@10"]["mean_diff"] > 0 and by_key["R@10"]["p_holm"] < 0.05
    assert by_key["R@10"]["ci_low"] > 0
    # The pooled difference uses each side's Σ hits / Σ |G| over the same queries.
    pooled = result["pooled"]["R@10"]
    ra, rb = rows_of(demo_evaluations["fulltext"]), rows_of(demo_evaluations["titles"])
    assert pooled["pooled_a"] == pytest.approx(
        sum(v["hits@10"] for v in ra.values()) / sum(v["relevant"] for v in ra.values())
    )
    assert pooled["pooled_a"] == pytest.approx(
        demo_evaluations["fulltext"].aggregates["R@10"]["pooled"]
    )
    assert pooled["pooled_b"] == pytest.approx(
        sum(v["hits@10"] for v in rb.values()) / sum(v["relevant"] for v in rb.values())
    )
    # The tag breakdown covers every paired query under each of its tags.
    tags = dict(Query.objects.filter(collection__slug="demo-handbook").values_list(
        "external_id", "tags"))  # fmt: skip
    assert set(result["tags"]) == {t for q in ra for t in tags[q]}
    for tag, per in result["tags"].items():
        members = [q for q in ra if tag in tags[q]]
        assert per["_n"] == len(members), tag
        d = [ra[q]["R@10"] - rb[q]["R@10"] for q in members]
        assert per["R@10"]["mean_diff"] == pytest.approx(sum(d) / len(d)), tag


def test_same_seed_same_numbers_other_seed_other_resamples(score_demo):
    demo_evaluations = score_demo("fulltext", "overlap")
    a, b = demo_evaluations["fulltext"], demo_evaluations["overlap"]

    first = compare_evaluations(a, b, seed=SEED)
    again = compare_evaluations(a, b, seed=SEED)
    other = compare_evaluations(a, b, seed=SEED + 1)

    assert first["measures"] == again["measures"]
    assert [e["mean_diff"] for e in other["measures"]] == [
        e["mean_diff"] for e in first["measures"]
    ]
    assert [e["ci_low"] for e in other["measures"]] != [e["ci_low"] for e in first["measures"]]


# -- refusals ---------------------------------------------------------------------------------


@pytest.fixture
def example_runs(recall_v1):
    """The founding example's run twice (two names) and a copy with C answered, scored
    at k = 2 on v1."""
    collection = recall_v1.collection
    path = RECALL_EXAMPLE / "run.trec"
    one = import_run(collection=collection, path=path, name="one").run
    two = import_run(collection=collection, path=path, name="two").run
    return collection, recall_v1, one, two


def score(run: Run, snapshot, **params):
    params.setdefault("ks", (2,))
    params.setdefault("rel_level", 1)
    mapping = params.pop("mapping", None)
    stage = run.stages.get()
    evaluation, _ = score_run_stage(
        run=run, stage=stage, snapshot=snapshot, params=engine.EvalParams(**params), mapping=mapping
    )
    return evaluation


@pytest.mark.parametrize(
    ("params_b", "reason"),
    [
        ({"ks": (3,)}, "the cutoffs differ: a has 2, b has 3"),
        ({"unjudged": "bounds"}, "the unjudged policy differs: a has nonrel, b has bounds"),
        ({"unjudged": "judged-only"}, "the unjudged policy differs"),
    ],
    ids=["ks", "bounds", "judged-only"],
)
def test_different_parameters_are_refused_with_the_reason(example_runs, params_b, reason):
    _, v1, one, two = example_runs
    a, b = score(one, v1), score(two, v1, **params_b)

    with pytest.raises(ComparisonRefused) as refused:
        compare_evaluations(a, b)

    assert any(reason in r for r in refused.value.reasons), refused.value.reasons


def test_rel_level_and_mapping_are_refused(example_runs, write_file):
    collection, v1, one, two = example_runs
    from scoring.services import import_unit_mapping

    mapping, _ = import_unit_mapping(collection=collection, path=write_file("m.tsv", "x\tx2\n"))
    a = score(one, v1)
    b = score(two, v1, rel_level=2, mapping=mapping)

    reasons = comparison_refusals(a, b)

    assert reasons[:2] == [
        "the relevance threshold differs: a has 1, b has 2; score both with the same",
        "the unit mapping differs: a uses no mapping, b uses mapping v1; the units (and so "
        "the denominators) are not the same",
    ]


def test_different_snapshot_and_run_is_refused(example_runs):
    collection, v1, one, two = example_runs
    q = Query.objects.get(collection=collection, external_id="C")
    record_judgment(
        query=q,
        item=Item.objects.get(collection=collection, external_id="y"),
        grade=1,
        reviewer=None,
        expected_version=None,
    )
    v2, _ = freeze_snapshot(collection=collection, by=None)
    a, b = score(one, v1), score(two, v2)

    reasons = comparison_refusals(a, b)

    assert reasons == [
        "both the snapshot (v1 vs v2) and the run ('one' vs 'two') differ, so a difference "
        "could come from either; score both runs on one snapshot, or compare one run on two "
        "snapshots"
    ]


def test_different_stage_is_refused(recall_v1, tmp_path):
    from tests.scoring.report_helpers import three_stage_run

    collection = recall_v1.collection
    run = import_run(collection=collection, path=three_stage_run(tmp_path), name="pipe").run
    params = engine.EvalParams(ks=(2,), rel_level=1)
    a, _ = score_run_stage(
        run=run, stage=run.stages.get(name="candidates"), snapshot=recall_v1, params=params
    )
    b, _ = score_run_stage(
        run=run, stage=run.stages.get(name="context"), snapshot=recall_v1, params=params
    )

    reasons = comparison_refusals(a, b)

    assert reasons == [
        "the stage differs: a scores 'candidates', b scores 'context'; compare the same stage "
        "(use the diagnosis page to compare stages of one run)"
    ]


def test_the_same_evaluation_is_refused(example_runs):
    _, v1, one, _ = example_runs
    a = score(one, v1)

    assert comparison_refusals(a, a) == [
        f"a and b are the same evaluation ({a.pk}); choose two different ones"
    ]


def test_two_uploads_of_one_file_compare_as_all_ties(example_runs):
    _, v1, one, two = example_runs

    result = compare_evaluations(score(one, v1), score(two, v1), seed=SEED)

    assert "R@2" in {e["measure"] for e in result["measures"]}
    for entry in result["measures"]:
        assert entry["mean_diff"] == 0.0 and entry["p"] == 1.0 and entry["p_holm"] == 1.0
        assert (entry["ci_low"], entry["ci_high"]) == (0.0, 0.0) and entry["d_z"] is None


def test_one_run_on_two_snapshots_is_attributed_to_the_label_changes(example_runs):
    collection, v1, one, _ = example_runs
    q = Query.objects.get(collection=collection, external_id="C")
    record_judgment(
        query=q,
        item=Item.objects.get(collection=collection, external_id="y"),
        grade=1,
        reviewer=None,
        expected_version=None,
    )
    v2, _ = freeze_snapshot(collection=collection, by=None)

    result = compare_evaluations(score(one, v1), score(one, v2), seed=SEED)

    assert result["mode"] == "labels"
    diff = result["snapshot_diff"]
    assert diff["from"] == 1 and diff["to"] == 2
    assert diff["added"] == {"count": 1, "rows": [["C", "y", 1]]}
    assert diff["removed"]["count"] == diff["regraded"]["count"] == 0
    recall = next(e for e in result["measures"] if e["key"] == "R@2")
    # By hand: A and B unchanged; C's relevant set grows to {e, y}, and y is at rank 2,
    # so C's R@2 goes from 0 (v1) to 1/2 (v2): a - b = (0 + 0 - 1/2) / 3.
    assert recall["mean_diff"] == pytest.approx(-1 / 6)
    assert (recall["wins"], recall["ties"], recall["losses"]) == (0, 2, 1)
    ceiling = next(d for d in result["descriptive"] if d["measure"] == "Ceiling@2")
    assert ceiling["mean_diff"] == 0.0  # C: min(2,1)/1 = 1 → min(2,2)/2 = 1


# -- manage.py compare_runs ----------------------------------------------------------------------


def test_compare_runs_scores_both_and_prints_the_same_numbers(example_runs, run_command):
    from django.core.management.base import CommandError

    collection, _, _, _ = example_runs

    out, _ = run_command("compare_runs", collection.slug, "one", "two", "--k", "2", "--seed", 5)
    as_json = json.loads(
        run_command("compare_runs", collection.slug, "one", "two", "--k", "2", "--seed", 5,
                    "--json")[0]
    )  # fmt: skip
    as_csv = run_command("compare_runs", collection.slug, "one", "two", "--k", "2", "--csv")[0]
    by_ids = json.loads(
        run_command("compare_runs", collection.slug, "--evaluations",
                    as_json["a"]["id"], as_json["b"]["id"], "--seed", 5, "--json")[0]
    )  # fmt: skip

    assert Evaluation.objects.count() == 2  # scored once each, then reused
    assert "paired queries: 3 (a - b per query)" in out
    assert re.search(r"^R@2 +3 +44\.44% +44\.44% +0\.00 pp .* 1\.0000 +1\.0000 .*0/3/0$", out, re.M)
    a, b = Evaluation.objects.order_by("pk")
    assert as_json == by_ids == compare_evaluations(a, b, seed=5)
    assert as_csv.splitlines()[0].startswith("measure,n,mean_a,mean_b,mean_diff,ci_low")
    with pytest.raises(CommandError, match="give the same run twice"):
        run_command("compare_runs", collection.slug, "one", "two", "--snapshot-b", 1)


def test_compare_runs_refuses_with_every_reason(example_runs, run_command):
    from django.core.management.base import CommandError

    collection, v1, one, two = example_runs
    a, b = score(one, v1), score(two, v1, ks=(3,), unjudged="bounds")

    with pytest.raises(CommandError) as refused:
        run_command("compare_runs", collection.slug, "--evaluations", a.pk, b.pk)

    message = str(refused.value)
    assert message.startswith("these evaluations cannot be compared:")
    assert "  - the cutoffs differ: a has 2, b has 3; score both with the same" in message
    assert "  - the unjudged policy differs: a has nonrel, b has bounds" in message
