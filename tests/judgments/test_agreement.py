"""Agreement: two assessors' TREC qrels imported into one collection; ``manage.py
agreement --json`` against the krippendorff package and scikit-learn's cohen_kappa_score
called directly on the same files (the oracle), to 1e-9."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from judgments.agreement import MIN_SHARED_UNITS, agreement
from judgments.models import Assessment, Collection, Judgment
from judgments.services import freeze_snapshot, update_collection_settings

pytestmark = pytest.mark.django_db

GRADES = [0, 1, 2, 3]
QUERIES = ["q1", "q2", "q3", "q4"]


def _qrels(rows: dict[tuple[str, str], int]) -> str:
    return "".join(f"{q} 0 {d} {g}\n" for (q, d), g in sorted(rows.items()))


@pytest.fixture
def two_assessors(write_file):
    """alice grades 12 documents of q1..q3 and 3 of q4; bob regrades most of them, some
    differently, skips a few, and grades two documents alice never saw."""
    rng = random.Random(12)
    alice, bob = {}, {}
    for q in QUERIES:
        for n in range(3 if q == "q4" else 12):
            alice[(q, f"{q}-d{n}")] = rng.choice(GRADES)
    for unit, grade in alice.items():
        roll = rng.random()
        if roll < 0.1:
            continue  # bob skipped it: not shared
        bob[unit] = grade if roll < 0.6 else rng.choice(GRADES)
    bob[("q1", "q1-extra-1")] = 3
    bob[("q2", "q2-extra-1")] = 0
    topics = write_file("topics.tsv", "".join(f"{q}\tquery {q}\n" for q in QUERIES))
    return (
        alice,
        bob,
        write_file("alice.qrels", _qrels(alice)),
        write_file("bob.qrels", _qrels(bob)),
        topics,
    )


def _import_both(run_command, alice_file, bob_file, topics) -> None:
    run_command(
        "import_trec",
        "ag",
        "--qrels",
        str(alice_file),
        "--topics",
        str(topics),
        "--scale",
        "0:no,1:related,2:relevant,3:perfect",
        "--relevant-grade",
        "2",
        "--assessor",
        "alice",
    )
    run_command(
        "import_collection",
        "--collection",
        "ag",
        "--qrels",
        str(bob_file),
        "--assessor",
        "bob",
        "--create-missing-items",
    )


def _oracle(alice: dict, bob: dict, units: list) -> dict[str, float]:
    """The figures straight from the packages, on the files' grades."""
    import krippendorff
    from sklearn.metrics import cohen_kappa_score

    data = np.array([[who.get(u, np.nan) for u in units] for who in (alice, bob)], dtype=float)
    shared = sorted(set(alice) & set(bob))
    a, b = [alice[u] for u in shared], [bob[u] for u in shared]
    return {
        "ordinal": krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=GRADES
        ),
        "nominal": krippendorff.alpha(
            reliability_data=data, level_of_measurement="nominal", value_domain=GRADES
        ),
        "kappa": cohen_kappa_score(a, b),
        "kappa_quadratic": cohen_kappa_score(a, b, weights="quadratic"),
        "agreement": sum(x == y for x, y in zip(a, b, strict=True)) / len(shared),
        "n": len(shared),
    }


def test_agreement_json_equals_the_packages_on_imported_qrels(run_command, two_assessors):
    alice, bob, alice_file, bob_file, topics = two_assessors
    _import_both(run_command, alice_file, bob_file, topics)
    assert Assessment.objects.filter(assessor_name="alice").count() == len(alice)
    assert Assessment.objects.filter(assessor_name="bob").count() == len(bob)
    # One assessor per item, policy single: alice's grades, imported first, are the labels.
    resolved = {
        (q, i): g
        for q, i, g in Judgment.objects.values_list(
            "query__external_id", "item__external_id", "grade"
        )
    }
    assert resolved == {**{u: g for u, g in bob.items() if u not in alice}, **alice}

    out, _ = run_command("agreement", "ag", "--json")
    got = json.loads(out)
    units = sorted(set(alice) | set(bob))
    want = _oracle(alice, bob, units)
    assert got["assessors"] == ["alice", "bob"]
    assert got["units"] == want["n"]
    assert got["alpha"]["ordinal"] == pytest.approx(want["ordinal"], abs=1e-9)
    assert got["alpha"]["nominal"] == pytest.approx(want["nominal"], abs=1e-9)
    (pair,) = got["pairs"]
    assert (pair["a"], pair["b"], pair["n"]) == ("alice", "bob", want["n"])
    for key in ("kappa", "kappa_quadratic", "agreement"):
        assert pair[key] == pytest.approx(want[key], abs=1e-9), key
    assert 0 < pair["agreement"] < 1  # the data disagrees somewhere: not a trivial case

    for q in ("q1", "q2", "q3"):
        q_units = [u for u in units if u[0] == q]
        import krippendorff

        data = np.array(
            [[who.get(u, np.nan) for u in q_units] for who in (alice, bob)], dtype=float
        )
        expected = krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=GRADES
        )
        assert got["per_query"][q]["alpha_ordinal"] == pytest.approx(expected, abs=1e-9)
    # q4 shares at most 3 units: undefined, with the reason, never a number.
    q4 = got["per_query"]["q4"]
    assert q4["alpha_ordinal"] is None
    assert f"at least {MIN_SHARED_UNITS} are needed" in q4["undefined"]

    counts = np.array(got["confusion"]["counts"])
    assert (counts == counts.T).all() and counts.sum() == 2 * want["n"]
    shared = sorted(set(alice) & set(bob))
    assert counts[3][3] == 2 * sum(1 for u in shared if alice[u] == bob[u] == 3)

    vs = {r["assessor"]: r for r in got["vs_resolved"]}
    assert vs["alice"]["agreement"] == 1.0  # her grades are the labels
    assert vs["bob"]["n"] == len(bob)


def test_the_snapshot_keeps_the_assessments_so_agreement_is_reproducible(
    run_command, two_assessors
):
    alice, bob, alice_file, bob_file, topics = two_assessors
    _import_both(run_command, alice_file, bob_file, topics)
    collection = Collection.objects.get(slug="ag")
    update_collection_settings(collection=collection, assessors_per_item=2)
    snapshot, _ = freeze_snapshot(collection=collection, by=None)
    assert snapshot.n_assessments == len(alice) + len(bob)
    live = json.loads(run_command("agreement", "ag", "--json")[0])
    Assessment.objects.filter(assessor_name="bob").update(grade=0)  # later changes …
    frozen = json.loads(run_command("agreement", "ag", "--snapshot", "1", "--json")[0])
    assert frozen["snapshot"] == 1
    assert {k: v for k, v in frozen.items() if k != "snapshot"} == {
        k: v for k, v in live.items() if k != "snapshot"
    }  # … do not reach the frozen figures


@pytest.mark.parametrize(
    ("ratings", "reason"),
    [
        ({("q", f"d{n}"): {"a": 1} for n in range(9)}, "0 units graded by two or more"),
        (
            {("q", f"d{n}"): {"a": 1, "b": 2} for n in range(3)},
            "3 units graded by two or more assessors; at least 5",
        ),
        ({("q", f"d{n}"): {"a": 2, "b": 2} for n in range(6)}, "every assessment"),
    ],
    ids=["one-assessor", "too-few-shared", "no-variation"],
)
def test_too_little_overlap_is_undefined_with_its_reason_never_0_or_1(ratings, reason):
    got = agreement(ratings, grades=GRADES)
    assert got["alpha"]["ordinal"] is None and got["alpha"]["nominal"] is None
    assert reason in got["alpha"]["undefined"]["ordinal"]
    for pair in got["pairs"]:
        if pair["n"] < MIN_SHARED_UNITS:
            assert pair["kappa"] is None and pair["agreement"] is None
            assert "shared units" in pair["undefined"]
        else:  # identical constant grades: kappa is 0/0, raw agreement is defined
            assert pair["kappa"] is None and pair["agreement"] == 1.0
            assert "0/0" in pair["undefined"]


def test_one_assessors_qrels_export_by_command_and_api(run_command, two_assessors, client):
    alice, bob, alice_file, bob_file, topics = two_assessors
    _import_both(run_command, alice_file, bob_file, topics)
    collection = Collection.objects.get(slug="ag")
    default_before = run_command("export_qrels", "ag")[0]
    assert default_before == _qrels(  # the resolved labels: alice first, bob's extras
        {**{u: g for u, g in bob.items() if u not in alice}, **alice}
    )
    assert run_command("export_qrels", "ag", "--assessor", "bob")[0] == _qrels(bob)
    with pytest.raises(Exception, match="no assessments by 'carol'; its assessors: alice, bob"):
        run_command("export_qrels", "ag", "--assessor", "carol")

    update_collection_settings(collection=collection, assessors_per_item=2)
    freeze_snapshot(collection=collection, by=None)
    assert run_command("export_qrels", "ag", "--snapshot", "1", "--assessor", "alice")[0] == _qrels(
        alice
    )
    assert run_command("export_qrels", "ag", "--snapshot", "1")[0] == default_before

    from django.contrib.auth import get_user_model

    from judgments.services import set_membership

    eve = get_user_model().objects.create_user(username="eve")
    set_membership(collection=collection, user=eve, role="evaluator")
    client.force_login(eve)
    api = "/api/collections/ag"
    response = client.get(f"{api}/snapshots/1/qrels?assessor=bob")
    assert response.status_code == 200
    assert b"".join(response.streaming_content).decode() == _qrels(bob)
    assert client.get(f"{api}/snapshots/1/qrels?assessor=carol").status_code == 404
    # In JSONL: the canonical form's lines that name bob, and only those.
    response = client.get(f"{api}/snapshots/1/qrels?assessor=bob&format=jsonl")
    assert response.status_code == 200 and response["Content-Type"] == "application/jsonl"
    mine = b"".join(response.streaming_content).decode().splitlines()
    whole = b"".join(client.get(f"{api}/snapshots/1/qrels?format=jsonl").streaming_content)
    assert mine == [
        line
        for line in whole.decode().splitlines()
        if line.startswith('["assessment"') and '"bob",' in line
    ]
    fields = [json.loads(line) for line in mine]
    assert sorted((q, i, g) for _, q, i, _, g in fields) == sorted(
        (q, i, g) for (q, i), g in bob.items()
    )
    assert client.get(f"{api}/snapshots/1/qrels?assessor=carol&format=jsonl").status_code == 404
    agreement_json = client.get(f"{api}/agreement/?snapshot=1").json()
    assert agreement_json["assessors"] == ["alice", "bob"]
    assert agreement_json == json.loads(
        run_command("agreement", "ag", "--snapshot", "1", "--json")[0]
    )
    page = client.get("/c/ag/agreement/")
    assert page.status_code == 200
    assert "alice / bob" in page.content.decode()
