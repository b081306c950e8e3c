"""Reads of the judges app: which judge a name means, which pairs to propose for, the
current proposals, and the pairs that calibrate a judge against people."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import Count, QuerySet

from judgments.extensions import qrels_scorer
from judgments.models import (
    Assessment,
    Collection,
    Item,
    Judgment,
    Query,
    QueryStatus,
    ReviewTask,
    TaskStatus,
)

from .models import (
    BASELINE_NAME,
    DecisionOutcome,
    JudgeConfig,
    Proposal,
    ProposalDecision,
    ProposalState,
    Provider,
)
from .providers import PairText

#: Written into the note of a judgment made by accepting a proposal in the queue; such
#: labels are the model's own and are left out of its calibration.
ACCEPTED_MARK = "accepted proposal #"

Pair = tuple[int, int]


def judge_named(collection: Collection, name: str) -> JudgeConfig:
    """The collection's judge called ``name``. ``local-baseline`` exists in every
    collection without a row (an unsaved default); ``JudgeConfig.DoesNotExist`` names the
    judges there are otherwise."""
    found = JudgeConfig.objects.filter(collection=collection, name=name).first()
    if found is not None:
        return found
    if name == BASELINE_NAME:
        return JudgeConfig(
            collection=collection,
            name=BASELINE_NAME,
            provider=Provider.LOCAL,
            concurrency=1,
            retries=0,
            prompt_version="baseline-v1",
        )
    raise JudgeConfig.DoesNotExist(
        f"no judge '{name}' in collection '{collection.slug}'; its judges are: "
        + ", ".join(judge_names(collection))
    )


def judge_names(collection: Collection) -> list[str]:
    names = set(JudgeConfig.objects.filter(collection=collection).values_list("name", flat=True))
    return sorted(names | {BASELINE_NAME})


def open_pairs(collection: Collection) -> list[Pair]:
    """The pooled unjudged pairs (open review tasks), in the queue's serving order."""
    return list(
        ReviewTask.objects.filter(
            collection=collection, status__in=[TaskStatus.PENDING, TaskStatus.CLAIMED]
        )
        .order_by("-priority", "pk")
        .values_list("query_id", "item_id")
    )


def judged_pairs(collection: Collection) -> list[Pair]:
    return list(
        Judgment.objects.filter(query__collection=collection)
        .order_by("query_id", "item_id")
        .values_list("query_id", "item_id")
    )


def pair_texts(pairs: Iterable[Pair]) -> list[PairText]:
    """What a judge reads of each pair: the query's text, the item's title and text."""
    pairs = list(pairs)
    queries = Query.objects.in_bulk({q for q, _ in pairs})
    items = Item.objects.in_bulk({i for _, i in pairs})
    out = []
    for q, i in pairs:
        item = items[i]
        passage = f"{item.title}\n{item.text}".strip() if item.title else item.text
        out.append(PairText(query_pk=q, item_pk=i, query=queries[q].text, passage=passage))
    return out


def proposals_of(collection: Collection, judge: str | None = None) -> QuerySet[Proposal]:
    found = Proposal.objects.filter(collection=collection).select_related("query", "item")
    return found.filter(judge=judge) if judge else found


def current_proposals(collection: Collection, judge: str) -> dict[Pair, Proposal]:
    """The latest successful proposal of ``judge`` for each pair it graded."""
    latest: dict[Pair, Proposal] = {}
    rows = (
        proposals_of(collection, judge).filter(state=ProposalState.OK).order_by("created_at", "pk")
    )
    for p in rows:
        latest[(p.query_id, p.item_id)] = p
    return latest


def human_pairs(collection: Collection) -> set[Pair]:
    """Every pair a person judged or assessed (with several assessors per item, a pair
    awaiting its other assessors or an adjudicator is assessed already)."""
    judged = Judgment.objects.filter(query__collection=collection).values_list(
        "query_id", "item_id"
    )
    assessed = Assessment.objects.filter(collection=collection).values_list("query_id", "item_id")
    return set(judged.iterator(chunk_size=20000)) | set(assessed.iterator(chunk_size=20000))


def no_answer_queries(collection: Collection) -> set[int]:
    return set(
        Query.objects.filter(collection=collection, status=QueryStatus.NO_ANSWER).values_list(
            "pk", flat=True
        )
    )


def human_labels(collection: Collection) -> dict[Pair, Judgment]:
    """The resolved human label of each judged pair (the one current judgment)."""
    rows = Judgment.objects.filter(query__collection=collection).select_related("query", "item")
    return {(j.query_id, j.item_id): j for j in rows}


def accepted_in_queue(collection: Collection, judge: str) -> set[tuple[Pair, int]]:
    """(pair, judgment version) of every grade that accepted one of ``judge``'s
    proposals in the review queue."""
    return {
        ((q, i), v)
        for q, i, v in ProposalDecision.objects.filter(
            proposal__collection=collection,
            proposal__judge=judge,
            outcome=DecisionOutcome.ACCEPTED,
        ).values_list("proposal__query_id", "proposal__item_id", "judgment_version")
    }


def calibration_pairs(
    collection: Collection, judge: str
) -> tuple[list[tuple[str, str, int, int]], int]:
    """(qid, item id, model grade, human grade) for every pair that both the judge and
    people graded, and how many were left out because the label is the judge's own
    proposal accepted in the queue (its note names the proposal, or a decision recorded
    it, and nobody has changed the judgment since)."""
    humans = human_labels(collection)
    accepted = accepted_in_queue(collection, judge)
    pairs, own = [], 0
    for key, proposal in current_proposals(collection, judge).items():
        label = humans.get(key)
        if label is None:
            continue
        if ACCEPTED_MARK in label.note or (key, label.version) in accepted:
            own += 1
            continue
        pairs.append((label.query.external_id, label.item.external_id, proposal.grade, label.grade))
    return pairs, own


def decisions_of(collection: Collection, judge: str) -> dict[str, Any]:
    """How reviewers answered the judge's proposals shown in the queue: accepted (its
    grade given) or overridden (another grade), and the share accepted (``null`` with
    no decision)."""
    counts = dict(
        ProposalDecision.objects.filter(proposal__collection=collection, proposal__judge=judge)
        .values_list("outcome")
        .annotate(n=Count("pk"))
        .values_list("outcome", "n")
    )
    accepted = counts.get(DecisionOutcome.ACCEPTED, 0)
    overridden = counts.get(DecisionOutcome.OVERRIDDEN, 0)
    total = accepted + overridden
    out: dict[str, Any] = {
        "accepted": accepted,
        "overridden": overridden,
        "acceptance_rate": accepted / total if total else None,
    }
    if not total:
        out["reason"] = "no reviewer has graded a pair beside this judge's proposal yet"
    return out


def _qrels_by_qid(
    rows: Iterable[tuple[int, int, int]], qids: dict[int, str], items: dict[int, str]
) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for q, i, grade in rows:
        if q in qids:
            out.setdefault(qids[q], {})[items[i]] = grade
    return out


def orderings_of(collection: Collection, judge: str) -> dict[str, Any]:
    """The collection's runs scored with people's labels and with the judge's alone, on
    the same queries (status relevant, with a relevant grade under both), and Kendall's
    tau between the two orderings (``calibration.run_orderings``)."""
    from . import calibration

    scorer = qrels_scorer()
    if scorer is None:
        return {"kendall_tau": None, "reason": "the scoring app is not installed: no runs"}
    qids = dict(
        Query.objects.filter(collection=collection, status=QueryStatus.RELEVANT).values_list(
            "pk", "external_id"
        )
    )
    judged = Judgment.objects.filter(query__collection=collection).values_list(
        "query_id", "item_id", "grade"
    )
    proposed = [(q, i, int(p.grade)) for (q, i), p in current_proposals(collection, judge).items()]  # type: ignore[arg-type]
    wanted = {i for _, i, _ in proposed} | {i for _, i, _ in judged}
    items = dict(Item.objects.filter(pk__in=wanted).values_list("pk", "external_id"))
    human = _qrels_by_qid(judged, qids, items)
    model = _qrels_by_qid(proposed, qids, items)
    rel = collection.relevant_grade
    both = {q for q, g in human.items() if max(g.values()) >= rel} & {
        q for q, g in model.items() if max(g.values()) >= rel
    }
    scored = scorer(
        collection, {"human": {q: human[q] for q in both}, "model": {q: model[q] for q in both}}
    )
    runs = [
        (r["run"], r["scores"]["human"], r["scores"]["model"])
        for r in scored["runs"]
        if r["scores"]["human"] is not None and r["scores"]["model"] is not None
    ]
    return {
        "measure": scored["measure"],
        "aggregation": scored["aggregation"],
        "stage": scored["stage"],
        "unjudged": scored["unjudged"],
        "queries": len(both),
        "queries_rule": "status relevant, and a relevant grade under people's labels and "
        "under the judge's; the judge's labels are its current proposals alone",
        "scores": scored["runs"],
        **calibration.run_orderings(runs),
    }


def proposal_for_review(collection: Collection, query_pk: int, item_pk: int) -> Proposal | None:
    """The proposal the review queue shows for a pair: the latest successful one of a
    judge shown in the queue; none when the collection assesses blind (several
    assessors per item) or no judge is shown."""
    if getattr(collection, "assessors_per_item", 1) > 1:
        return None
    hidden = set(
        JudgeConfig.objects.filter(collection=collection, show_in_queue=False).values_list(
            "name", flat=True
        )
    )
    rows = Proposal.objects.filter(
        collection=collection, query_id=query_pk, item_id=item_pk, state=ProposalState.OK
    ).exclude(judge__in=hidden)
    return rows.order_by("-created_at", "-pk").first()


def calibration_of(
    collection: Collection, judge: str, *, resamples: int | None = None, seed: int = 0
) -> dict[str, object]:
    """The judge's calibration report against the collection's resolved human labels."""
    from . import calibration

    pairs, own = calibration_pairs(collection, judge)
    report = calibration.calibrate(
        pairs,
        grades=collection.grades,
        resamples=calibration.RESAMPLES if resamples is None else resamples,
        seed=seed,
    )
    return {
        "collection": collection.slug,
        "judge": judge,
        **report,
        "left_out_accepted": own,
        "human_labels": "the current (resolved) judgment of each pair",
        "decisions": decisions_of(collection, judge),
        "run_orderings": orderings_of(collection, judge),
    }
