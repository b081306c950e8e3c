"""Dump every machine-readable output of Verity on the demo, for before/after comparisons.

    .venv/bin/python scripts/golden_outputs.py OUTDIR

Builds a throw-away SQLite database under OUTDIR (the demo with its own runs and
evaluations; two more TREC runs and a three-stage JSONL run, g-*, for the handbook; the
founding run for ``recall-example``; one snapshot each, evaluations under every unjudged
policy), then writes the OpenAPI schema and, for each evaluation, diagnosis and comparison, the JSON
and CSV that the pages and the API answer. Times and database ids are masked, so two
dumps of the same code compare equal byte for byte:

    git stash; scripts/golden_outputs.py /tmp/before; git stash pop
    scripts/golden_outputs.py /tmp/after && diff -r /tmp/before /tmp/after

A refactoring that changes no behaviour leaves the diff empty.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TIME = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def _ranked(seed: str, items: list[str], depth: int) -> list[str]:
    """A deterministic pseudo-ranking of ``items`` for ``seed``."""
    key = lambda item: hashlib.sha256(f"{seed}/{item}".encode()).hexdigest()  # noqa: E731
    return sorted(items, key=key)[:depth]


def write_runs(out: Path, qrels: dict[str, list[str]], items: list[str]) -> dict[str, Path]:
    """Two TREC runs and a three-stage JSONL run over the handbook's queries."""
    paths = {}
    for name, bias in (("lexical", 3), ("dense", 1)):
        lines = []
        for qid in sorted(qrels):
            # Put some of the judged items on top so that the scores are not all zero.
            ranking = qrels[qid][:bias] + _ranked(name + qid, items, 20)
            seen: list[str] = []
            for item in ranking:
                if item not in seen:
                    seen.append(item)
            for rank, item in enumerate(seen[:20], start=1):
                lines.append(f"{qid} Q0 {item} {rank} {100 - rank}.5 {name}\n")
        paths[name] = out / f"{name}.trec"
        paths[name].write_text("".join(lines), encoding="utf-8")
    records = []
    for qid in sorted(qrels):
        candidates = list(dict.fromkeys(qrels[qid][:2] + _ranked("cand" + qid, items, 30)))
        reranked = _ranked("rerank" + qid, candidates, 10)
        records.append(
            {
                "query": qid,
                "stages": {
                    "candidates": candidates[:30],
                    "reranked": reranked,
                    "context": reranked[:5],
                },
            }
        )
    paths["pipeline"] = out / "pipeline.jsonl"
    paths["pipeline"].write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return paths


def main(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    work = out / "_work"
    work.mkdir()
    os.environ["VERITY_VAR_DIR"] = str(work)
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from judgments.models import Judgment

    quiet = open(os.devnull, "w")  # noqa: SIM115
    call_command("migrate", verbosity=0)
    call_command("load_demo", stdout=quiet)

    slug = "demo-handbook"
    qrels: dict[str, list[str]] = {}
    for qid, item in (
        Judgment.objects.filter(query__collection__slug=slug, grade__gte=1)
        .order_by("query__external_id", "-grade", "item__external_id")
        .values_list("query__external_id", "item__external_id")
    ):
        qrels.setdefault(qid, []).append(item)
    items = sorted(
        Judgment.objects.filter(query__collection__slug=slug)
        .values_list("item__external_id", flat=True)
        .distinct()
    )
    runs = write_runs(work, qrels, items)
    for name, path in runs.items():
        # Prefixed: the demo has runs named lexical and pipeline of its own.
        call_command("import_run", slug, str(path), name=f"g-{name}", quiet=True, stdout=quiet)
    call_command(
        "import_run",
        "recall-example",
        str(ROOT / "fixtures/recall-example/run.trec"),
        name="founding",
        quiet=True,
        stdout=quiet,
    )
    for s in (slug, "recall-example"):
        call_command("freeze_snapshot", s, note="golden", stdout=quiet)

    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(get_user_model().objects.get(username="evaluator"))

    def save(name: str, data: bytes) -> None:
        (out / name).write_bytes(TIME.sub(b"<time>", data))

    def get(url: str) -> bytes:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code, response.content[:300])
        return b"".join(response.streaming_content) if response.streaming else response.content

    save("openapi.json", get("/api/schema/?format=json"))

    for s, run, stage in (
        (slug, "g-lexical", None),
        (slug, "g-dense", None),
        (slug, "g-pipeline", "candidates"),
        (slug, "g-pipeline", "reranked"),
        (slug, "g-pipeline", "context"),
        ("recall-example", "founding", None),
    ):
        for policy in ("nonrel", "judged-only", "bounds"):
            kwargs = {"k": (2, 5, 10), "unjudged": policy, "json": True, "stdout": quiet}
            if stage:
                kwargs["stage"] = stage
            call_command("score", s, run, **kwargs)

    from scoring.models import Evaluation

    for n, evaluation in enumerate(Evaluation.objects.order_by("pk")):
        s = evaluation.stage.run.collection.slug
        label = f"eval{n:02d}"
        for fmt in ("json", "csv"):
            save(f"{label}.report.{fmt}", get(f"/c/{s}/evaluations/{evaluation.pk}/?format={fmt}"))
        save(f"{label}.api.json", get(f"/api/collections/{s}/evaluations/{evaluation.pk}/"))
    for run in ("g-lexical", "g-dense", "g-pipeline"):
        for fmt in ("json", "csv"):
            save(
                f"diagnosis.{run}.{fmt}", get(f"/c/{slug}/runs/{run}/diagnosis/?format={fmt}&k=10")
            )
    ids = {
        (e.run.name, e.params["unjudged"]): e.pk
        for e in Evaluation.objects.select_related("run").filter(
            run__name__in=("g-lexical", "g-dense"), params__ks=[2, 5, 10]
        )
    }
    for policy in ("nonrel", "bounds"):
        a, b = ids[("g-lexical", policy)], ids[("g-dense", policy)]
        for fmt in ("json", "csv"):
            save(f"compare.{policy}.{fmt}", get(f"/c/{slug}/compare/?a={a}&b={b}&format={fmt}"))
    shutil.rmtree(work)
    masked = sorted(p.name for p in out.iterdir())
    print(f"{len(masked)} files in {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
