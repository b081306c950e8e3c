"""Fixtures for the API tests: one small world with every kind of object, and clients.

``api_world`` is the founding text's example (``recall-example``) with two snapshots, two
runs, two evaluations, a unit mapping, an open review task and one extra judgment since
the last snapshot; plus a second collection, ``elsewhere``, whose admin is ``stranger``.
Every person has an API token; ``api_client(role)`` is an APIClient sending it.

Roles: ``anonymous`` (no credentials), ``stranger`` (admin of the other collection only),
``reviewer``, ``evaluator``, ``admin`` (memberships in ``recall-example``), ``superuser``
(no membership: admin everywhere). Two jobs of ``evaluator`` in ``recall-example``: a
failed freeze (``job``) and a finished qrels export with its file (``export_job``).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.core.management import call_command
from rest_framework.test import APIClient

import verity_eval as engine
from jobs.models import Job, JobKind, JobState
from judgments.models import Collection, Item, Judgment, Query, ReviewTask, Snapshot
from judgments.services import (
    create_api_token,
    freeze_snapshot,
    record_judgment,
    set_membership,
)
from scoring.models import Evaluation, Run, UnitMapping
from scoring.services import import_run, import_unit_mapping, score_run_stage
from tests.factories import make_collection, make_item, make_query

REPO = Path(__file__).resolve().parents[2]
RECALL_EXAMPLE = REPO / "fixtures" / "recall-example"
ROLES = ("anonymous", "stranger", "reviewer", "evaluator", "admin", "superuser")

# The founding text's rankings with x and d swapped for query B: a second, comparable run.
OTHER_RUN = b"""A Q0 a 1 4.0 other
A Q0 x 2 3.0 other
A Q0 b 3 2.0 other
A Q0 c 4 1.0 other
B Q0 d 1 2.0 other
B Q0 x 2 1.0 other
C Q0 x 1 2.0 other
C Q0 y 2 1.0 other
"""


@dataclass
class World:
    collection: Collection
    elsewhere: Collection
    users: dict[str, Any]
    tokens: dict[str, str]
    v1: Snapshot
    v2: Snapshot
    run: Run
    other_run: Run
    evaluation: Evaluation
    other_evaluation: Evaluation
    mapping: UnitMapping
    task: ReviewTask
    judgment: Judgment  # (A, x) grade 0: safe to regrade or remove
    job: Job  # evaluator's, failed: retryable
    export_job: Job  # evaluator's, done, with its file
    foreign: dict[str, Any] = field(default_factory=dict)  # objects of `elsewhere`

    @property
    def slug(self) -> str:
        return self.collection.slug


def import_bundle(path: Path) -> Collection:
    call_command("import_collection", str(path), stdout=io.StringIO(), stderr=io.StringIO())
    return Collection.objects.get(slug="recall-example")


@pytest.fixture
def api_world(db, tmp_path, job_dir) -> World:
    User = get_user_model()
    users = {
        "stranger": User.objects.create_user("stranger"),
        "reviewer": User.objects.create_user("reviewer"),
        "evaluator": User.objects.create_user("evaluator"),
        "admin": User.objects.create_user("admin"),
        "superuser": User.objects.create_superuser("root"),
        "newbie": User.objects.create_user("newbie"),  # no membership anywhere
    }
    collection = import_bundle(RECALL_EXAMPLE / "bundle.jsonl")
    for role in ("reviewer", "evaluator", "admin"):
        set_membership(collection=collection, user=users[role], role=role)
    tokens = {
        name: create_api_token(user=user).key for name, user in users.items() if name != "newbie"
    }

    v1, _ = freeze_snapshot(collection=collection, by=users["evaluator"], note="v1")
    run = import_run(
        collection=collection, path=RECALL_EXAMPLE / "run.trec", name="example"
    ).run  # queues (C, y) as a review task
    other_path = tmp_path / "other.trec"
    other_path.write_bytes(OTHER_RUN)
    other_run = import_run(collection=collection, path=other_path, name="other").run
    v2, _ = freeze_snapshot(collection=collection, by=users["evaluator"], note="v2")
    params = engine.EvalParams(ks=(2,), rel_level=1)
    stage, other_stage = run.stages.get(), other_run.stages.get()
    evaluation, _ = score_run_stage(run=run, stage=stage, snapshot=v1, params=params)
    other_evaluation, _ = score_run_stage(
        run=other_run, stage=other_stage, snapshot=v1, params=params
    )
    mapping_path = tmp_path / "chunks.tsv"
    mapping_path.write_text("a#1\ta\na#2\ta\n", encoding="utf-8")
    mapping, _ = import_unit_mapping(collection=collection, path=mapping_path)
    # A change since v2, so that a freeze makes v3.
    record_judgment(
        query=Query.objects.get(collection=collection, external_id="B"),
        item=Item.objects.get(collection=collection, external_id="y"),
        grade=0,
        reviewer=users["reviewer"],
        expected_version=None,
    )
    judgment = Judgment.objects.get(
        query__collection=collection, query__external_id="A", item__external_id="x"
    )
    task = ReviewTask.objects.get(
        collection=collection, query__external_id="C", item__external_id="y"
    )

    elsewhere = make_collection(slug="elsewhere", name="Elsewhere")
    set_membership(collection=elsewhere, user=users["stranger"], role="admin")
    q = make_query(elsewhere, external_id="E1")
    i = make_item(elsewhere, external_id="e-doc")
    foreign_judgment = record_judgment(
        query=q, item=i, grade=1, reviewer=users["stranger"], expected_version=None
    )
    foreign = {"query": q, "item": i, "judgment": foreign_judgment}
    job = Job.objects.create(
        kind=JobKind.SNAPSHOT_FREEZE,
        state=JobState.FAILED,
        collection=collection,
        created_by=users["evaluator"],
        label="Freeze",
        task_path="judgments.tasks.freeze_task",
        error="The worker running this job stopped answering.",
    )
    export_job = Job.objects.create(
        kind=JobKind.QRELS_EXPORT,
        state=JobState.DONE,
        collection=collection,
        created_by=users["evaluator"],
        label="Export",
        task_path="judgments.tasks.qrels_export_task",
    )
    name = storages["jobs"].save(f"outputs/{export_job.key}/v1.qrels", ContentFile(b"A 0 a 1\n"))
    export_job.result = {"file": name, "content_type": "text/plain; charset=utf-8"}
    export_job.save()

    return World(
        collection=collection,
        elsewhere=elsewhere,
        users=users,
        tokens=tokens,
        v1=v1,
        v2=v2,
        run=run,
        other_run=other_run,
        evaluation=evaluation,
        other_evaluation=other_evaluation,
        mapping=mapping,
        task=task,
        judgment=judgment,
        job=job,
        export_job=export_job,
        foreign=foreign,
    )


@pytest.fixture
def api_client(api_world) -> Callable[[str], APIClient]:
    """``api_client(role)``: a client sending that role's token (none for anonymous)."""

    def make(role: str) -> APIClient:
        client = APIClient()
        if role != "anonymous":
            client.credentials(HTTP_AUTHORIZATION=f"Token {api_world.tokens[role]}")
        return client

    return make
