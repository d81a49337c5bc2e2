"""The per-turn drill-down: one dialogue with a submission's answers in place of the reference
system turns, their quotes checked against the reviews they cite."""

from __future__ import annotations

from collections import defaultdict

from evaluation.lib import columns as shown
from evaluation.lib.formats.submission import iter_turn_records
from evaluation.lib.highlight import span_segments
from evaluation.lib.metrics import grounding
from evaluation.lib.metrics.quotes import scan
from evaluation.lib.metrics.suite import SUITE_NAME
from evaluation.lib.metrics.types import TURNS
from evaluation.models import Dialogue, Item, Job, Review, Run, TurnItem, UnitScore
from evaluation.selectors.run_chunks import chunk_dialogue_records

from .columns import fmt


def latest_succeeded_run(submission) -> Run | None:
    return (submission.runs.filter(job__status=Job.Status.SUCCEEDED, evaluator=SUITE_NAME)
            .select_related("job").order_by("-created_at", "-pk").first())


def dialogue_drilldown(*, submission, run: Run | None, dialogue: Dialogue) -> dict:
    """Each turn of a (non-hidden) dialogue with the system's answer in place of the reference
    system turn: its quotes marked verified or not against the reviews they cite (the GS
    matcher at the run's threshold), its ranked items with the gold marked, and its values."""
    records = chunk_dialogue_records(run=run, dialogue=dialogue) if run is not None else None
    if records is None:
        records = _submitted_records(submission, dialogue)
    answers = {int(r["turn_index"]): r for r in records}
    turns = list(dialogue.turns.order_by("index"))
    gold = defaultdict(set)
    for turn_id, item_id in (TurnItem.objects.filter(turn__dialogue=dialogue, role="gold")
                             .values_list("turn_id", "item__external_id")):
        gold[turn_id].add(item_id)
    item_ids = {i for r in answers.values() for i in r["ranked_item_ids"]}
    review_ids = {c["review_id"] for r in answers.values() for c in r.get("citations", [])}
    items = {i.external_id: i for i in Item.objects.filter(benchmark=dialogue.benchmark_id,
                                                          external_id__in=item_ids)}
    reviews = {r.external_id: r for r in Review.objects.filter(
        benchmark=dialogue.benchmark_id, external_id__in=review_ids).select_related("item")}
    scores, metrics = defaultdict(dict), shown.shown_on(SUITE_NAME, TURNS)  # from their specs
    if run is not None:
        for unit_id, metric, value in (UnitScore.objects.filter(
                run=run, dialogue_id=dialogue.external_id, metric__in=metrics)
                .values_list("unit_id", "metric", "value")):
            scores[unit_id][metric] = value
    threshold = float((run.config.get("suite", {}) if run else {}).get(
        "gs_threshold", grounding.DEFAULT_GS_THRESHOLD))
    views = []
    for turn in turns:
        answer = answers.get(turn.index)
        view = {"turn": turn, "answer": None}
        if answer is not None:
            view["answer"] = _answer_view(answer, items, reviews, gold[turn.pk], threshold,
                                          scores.get(f"{dialogue.external_id}#{turn.index}", {}),
                                          metrics)
        views.append(view)
    return {"turns": views, "threshold": threshold, "metrics": metrics}


def _submitted_records(submission, dialogue) -> list[dict]:
    with submission.file.open("rb") as handle:
        return [record for record in iter_turn_records(handle)
                if record["dialogue_id"] == dialogue.external_id]


def _answer_view(answer: dict, items, reviews, gold: set, threshold: float, scores,
                 metrics: tuple[str, ...]) -> dict:
    response = answer["response"]
    citations = answer.get("citations", [])
    sources: dict[str, list[str]] = defaultdict(list)
    for citation in citations:
        review = reviews.get(citation["review_id"])
        if review is not None:
            sources[citation["label"]].append(grounding.normalize_for_match(review.text))
    quotes, _labels = scan(response)
    verdicts = []
    for quote in quotes:
        match = grounding.match_quote(quote, sources)
        verdicts.append((quote.start, quote.end, {
            "verified": match.passes(threshold), "score": round(match.score, 1),
            "labels": ", ".join(quote.labels) or "no label"}))
    return {
        "segments": span_segments(response, verdicts),
        "quotes": [v for _, _, v in verdicts],
        "citations": [{"label": c["label"], "review": reviews.get(c["review_id"]),
                       "review_id": c["review_id"]} for c in citations],
        "ranked": [{"id": i, "item": items.get(i), "gold": i in gold}
                   for i in answer["ranked_item_ids"][:5]],
        "more_ranked": max(0, len(answer["ranked_item_ids"]) - 5),
        "scores": [(m, fmt(scores.get(m)) if m in scores else "—") for m in metrics],
    }
