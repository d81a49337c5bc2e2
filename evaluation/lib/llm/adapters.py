"""Plain-data adapters between Concord's formats and the LLM judges and baselines.

- ``judged_turns``: the Trace LLM judge's input (Appendix J) for every recommend/compare
  turn a ``turn`` submission answered: the reference dialogue before the turn (the context the
  system answered), the submitted response and the reviews its labels cite.
- ``reference_log``: a benchmark dialogue as a ``log`` (formats spec §2), the reference system's
  conversation, used to measure CoRE's token cost on the demo benchmark.
- ``baseline_context`` / ``baseline_evidence``: what the LLM Zero-Shot and RAG-Citation baselines
  (Trace, Appendix F) see for a turn: the conversation so far and the candidate cards, and the
  review sentences of the candidates most similar to the user's words.

Pure Python: no Django import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evaluation.lib.llm.conversation import ConversationLog
from evaluation.lib.llm.responders import (
    CandidateItem,
    DialogueContext,
    EvidenceSentence,
    retrieve_evidence,
)
from evaluation.lib.llm.trace_judge import CitedReview, JudgedTurn
from evaluation.lib.metrics.types import RECOMMENDATION_ACTIONS
from evaluation.lib.rankers.context import Catalogue, TurnContext


def log_cluster(log: ConversationLog) -> str:
    """The bootstrap cluster of a log: its dialogue when it names one, else the log itself."""
    return log.dialogue_id or log.log_id


def judged_turns(
    dialogues: Iterable[Mapping[str, Any]],
    submitted: Mapping[tuple[str, int], Mapping[str, Any]],
    *,
    reviews: Mapping[str, Mapping[str, Any]],
    item_names: Mapping[str, str],
    splits: Sequence[str] | None = None,
) -> tuple[list[tuple[str, str, JudgedTurn]], list[str]]:
    """(unit id, dialogue id, judge input) per answered recommend/compare turn, and the unit ids
    of such turns the submission did not answer."""
    judged, missing = [], []
    for record in dialogues:
        if splits and record["split"] not in splits:
            continue
        for turn in record["turns"]:
            if turn["role"] != "system" or turn["action"] not in RECOMMENDATION_ACTIONS:
                continue
            unit_id = f"{record['id']}#{turn['index']}"
            answer = submitted.get((record["id"], turn["index"]))
            if answer is None:
                missing.append(unit_id)
                continue
            context = tuple((t["role"], t["text"]) for t in record["turns"]
                            if t["index"] < turn["index"])
            judged.append((unit_id, record["id"], JudgedTurn(
                dialogue_id=record["id"], turn_index=turn["index"], context=context,
                response=answer["response"],
                cited_reviews=_cited(answer.get("citations") or (), reviews, item_names),
            )))
    return judged, missing


def _cited(citations, reviews, item_names) -> tuple[CitedReview, ...]:
    cited = []
    for citation in citations:
        review = reviews.get(citation["review_id"])
        if review is not None:
            cited.append(CitedReview(label=citation["label"], review_id=review["id"],
                                     text=review["text"],
                                     item_name=item_names.get(review["item_id"])))
    return tuple(cited)


def reference_log(record: Mapping[str, Any]) -> dict[str, Any]:
    """A benchmark dialogue as a ``log``: its turns, the items each system turn names, and the
    dialogue's target items as ground truth. Every turn is rated (no history part)."""
    turns = []
    for turn in record["turns"]:
        entry: dict[str, Any] = {"role": turn["role"], "text": turn["text"]}
        if turn["role"] == "system" and turn.get("referenced_item_ids"):
            entry["recommended_item_ids"] = list(turn["referenced_item_ids"])
        turns.append(entry)
    return {"log_id": record["id"], "dialogue_id": record["id"], "turns": turns,
            "ground_truth_item_ids": list(record.get("target_item_ids") or ())}


def baseline_context(context: TurnContext, catalogue: Catalogue) -> DialogueContext:
    """The LLM baselines' view of a turn: the conversation so far and the candidate cards."""
    return DialogueContext(
        dialogue_id=context.dialogue_id, turn_index=context.turn_index,
        turns=tuple((turn.role, turn.text) for turn in context.history),
        candidates=tuple(_card(catalogue, item_id) for item_id in context.pool),
        action=context.action,
    )


def _card(catalogue: Catalogue, item_id: str) -> CandidateItem:
    item = catalogue.items[item_id]
    return CandidateItem(id=item.id, name=item.name, type=item.type, city=item.city,
                         price_level=item.price_level, stars=item.stars,
                         categories=item.categories, description=item.description or None)


def baseline_evidence(context: DialogueContext, catalogue: Catalogue, *,
                      k: int = 10) -> list[EvidenceSentence]:
    """RAG-Citation's evidence: the k review sentences of the candidates with the highest
    Jaccard similarity to everything the user said so far."""
    reviews = [{"id": review.id, "item_id": review.item_id, "text": review.text,
                "stars": review.stars}
               for candidate in context.candidates
               for review in catalogue.reviews.get(candidate.id, ())]
    items = {candidate.id: candidate for candidate in context.candidates}
    return retrieve_evidence(context.user_text(), reviews, items=items, k=k)
