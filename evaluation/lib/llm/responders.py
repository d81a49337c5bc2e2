"""LLM baselines that answer Trace-style reference contexts (protocol ``turn``).

Trace, Appendix F "Baseline Implementation Details":

- LLM Zero-Shot: the dialogue so far and formatted candidate cards go to the LLM with a short
  action instruction; it returns a ranking of the candidates and the next system response.
- RAG-Citation: the top review sentences (Jaccard similarity to the user's words) are given as
  numbered evidence; the response must quote at least one span of ten or more tokens verbatim
  from that evidence, with up to two retries when the quote check fails.

Both produce ``turn`` submission lines (formats spec §2): ``{dialogue_id, turn_index, response,
ranked_item_ids, citations: [{label, review_id, quote}]}``. The Trace paper falls back to a
popularity ranking when the LLM fails; Concord instead records the failure, so a run's numbers
are never silently made by another system.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.lib.llm.answer_format import AnswerFormat
from evaluation.lib.llm.gateway import LLMGateway, ModelConfig, UsageMeter
from evaluation.lib.llm.judging import (
    DEFAULT_MAX_REASKS,
    Parsed,
    ask_until_parsed,
    json_answer,
)
from evaluation.lib.metrics.quotes import extract_labels

MIN_QUOTE_TOKENS = 10


@dataclass(frozen=True)
class CandidateItem:
    id: str
    name: str
    type: str | None = None
    city: str | None = None
    price_level: int | None = None
    stars: float | None = None
    categories: tuple[str, ...] = ()
    description: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CandidateItem:
        return cls(
            id=str(data["id"]),
            name=str(data.get("name", data["id"])),
            type=data.get("type"),
            city=data.get("city"),
            price_level=data.get("price_level"),
            stars=data.get("stars"),
            categories=tuple(data.get("categories") or ()),
            description=data.get("description"),
        )

    def card(self) -> str:
        facts = [f"id: {self.id}", f"name: {self.name}"]
        if self.type:
            facts.append(f"type: {self.type}")
        if self.city:
            facts.append(f"city: {self.city}")
        if self.price_level:
            facts.append(f"price: {'$' * int(self.price_level)}")
        if self.stars is not None:
            facts.append(f"stars: {self.stars}")
        if self.categories:
            facts.append(f"categories: {', '.join(self.categories)}")
        if self.description:
            facts.append(f"about: {self.description}")
        return "- " + "; ".join(facts)


@dataclass(frozen=True)
class DialogueContext:
    dialogue_id: str
    turn_index: int  # index of the system turn to produce
    turns: tuple[tuple[str, str], ...]  # (role, text) before that turn
    candidates: tuple[CandidateItem, ...]
    action: str | None = None  # the reference action, e.g. "recommend" or "compare"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DialogueContext:
        return cls(
            dialogue_id=str(data["dialogue_id"]),
            turn_index=int(data["turn_index"]),
            turns=tuple((str(t["role"]), str(t["text"])) for t in data["turns"]),
            candidates=tuple(CandidateItem.from_dict(c) for c in data["candidates"]),
            action=data.get("action"),
        )

    def user_text(self) -> str:
        return " ".join(text for role, text in self.turns if role == "user")


@dataclass(frozen=True)
class EvidenceSentence:
    label: str  # "R1", "R2", ...
    review_id: str
    item_id: str
    text: str
    item_name: str | None = None
    stars: float | None = None


@dataclass(frozen=True)
class BaselineOutcome:
    line: dict[str, Any] | None  # the submission line, None on failure
    failure: str | None
    attempts: int
    raw_answers: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.failure is None


_ACTION_INSTRUCTIONS = {
    "recommend": "Recommend the best-matching place(s) for the user.",
    "compare": "Compare the most promising places for the user.",
}

_JSON_FORMAT = (
    "Reply with a JSON object only, no other text:\n"
    '{"ranked_item_ids": [<every candidate id, best match first>], '
    '"response": "<your next message to the user>"}'
)


def _dialogue_text(context: DialogueContext) -> str:
    return "\n".join(f"{role}: {text}" for role, text in context.turns) or "(no turns yet)"


def zero_shot_messages(context: DialogueContext) -> list[dict[str, str]]:
    instruction = _ACTION_INSTRUCTIONS.get(context.action or "", "Write the next system turn.")
    prompt = (
        "You are a travel assistant helping a user choose places to visit.\n\n"
        f"Dialogue so far:\n{_dialogue_text(context)}\n\n"
        "Candidate places:\n" + "\n".join(c.card() for c in context.candidates) + "\n\n"
        f"{instruction}\n\n{_JSON_FORMAT}"
    )
    return [{"role": "user", "content": prompt}]


@dataclass(frozen=True)
class _Answer:
    ranked_item_ids: tuple[str, ...]
    response: str


RESPONSE_MAX_CHARS = 2000


def ranked_answer_format(candidate_ids: Sequence[str]) -> AnswerFormat:
    """The baselines' answer as data, per call (its candidates are the call's): one compact
    JSON object, a ranking drawn from the candidate ids (an enum) and the next message."""
    ids = list(dict.fromkeys(str(i) for i in candidate_ids))
    return AnswerFormat(name="ranked_answer", json_schema={
        "type": "object", "additionalProperties": False,
        "required": ["ranked_item_ids", "response"],
        "properties": {
            "ranked_item_ids": {"type": "array", "minItems": 1, "maxItems": max(1, len(ids)),
                                "items": {"type": "string", "enum": ids}},
            "response": {"type": "string", "minLength": 1, "maxLength": RESPONSE_MAX_CHARS}}})


def parse_ranked_answer(text: str, candidate_ids: Sequence[str],
                        answer_format: AnswerFormat | None = None) -> Parsed[_Answer]:
    """JSON with a ranking of known candidate ids and a non-empty response (read through
    ANSWER_FORMAT when the whole answer is that JSON, else found in the text)."""
    parsed = json_answer(text, answer_format)
    if not parsed.ok or parsed.value is None:
        return Parsed(problem=parsed.problem)
    ranked = parsed.value.get("ranked_item_ids")
    response = parsed.value.get("response")
    if not isinstance(response, str) or not response.strip():
        return Parsed(problem='"response" is missing or empty')
    if not isinstance(ranked, list):
        return Parsed(problem='"ranked_item_ids" is not a list')
    known = set(candidate_ids)
    # Unknown ids are dropped (the model may invent some); an empty ranking is unusable.
    ids = tuple(dict.fromkeys(str(i) for i in ranked if str(i) in known))
    if not ids:
        return Parsed(problem='"ranked_item_ids" contains no candidate id')
    return Parsed(_Answer(ids, response.strip()))


def _reask(problem: str) -> str:
    return f"Your reply could not be used: {problem}. {_JSON_FORMAT}"


def zero_shot_turn(
    context: DialogueContext | Mapping[str, Any],
    *,
    gateway: LLMGateway,
    config: ModelConfig,
    max_reasks: int = DEFAULT_MAX_REASKS,
    meter: UsageMeter | None = None,
) -> BaselineOutcome:
    context = (
        context if isinstance(context, DialogueContext) else DialogueContext.from_dict(context)
    )
    ids = [c.id for c in context.candidates]
    answer_format = ranked_answer_format(ids)

    def parse(text: str) -> Parsed[_Answer]:
        answer = parse_ranked_answer(text, ids, answer_format)
        if answer.value is not None:
            labels = sorted({m.label for m in extract_labels(answer.value.response)})
            if labels:
                # A submission's labels must map to reviews, and this baseline was given none.
                return Parsed(
                    problem=f"the response uses citation labels ({', '.join(labels)}) but no "
                    "review was given to cite; write no square-bracketed labels"
                )
        return answer

    outcome = ask_until_parsed(
        gateway,
        config,
        zero_shot_messages(context),
        parse,
        _reask,
        max_reasks=max_reasks,
        meter=meter,
        answer_format=answer_format,
    )
    if outcome.value is None:
        return BaselineOutcome(None, outcome.failure, outcome.attempts, outcome.raw_answers)
    line = _submission_line(context, outcome.value, citations=[])
    return BaselineOutcome(line, None, outcome.attempts, outcome.raw_answers)


def _submission_line(
    context: DialogueContext, answer: _Answer, citations: list[dict[str, str]]
) -> dict[str, Any]:
    return {
        "dialogue_id": context.dialogue_id,
        "turn_index": context.turn_index,
        "response": answer.response,
        "ranked_item_ids": list(answer.ranked_item_ids),
        "citations": citations,
    }


# --------------------------------------------------------------------------------------------
# RAG-Citation
# --------------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9']+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def retrieve_evidence(
    query: str,
    reviews: Sequence[Mapping[str, Any]],
    *,
    items: Mapping[str, CandidateItem] | None = None,
    k: int = 10,
) -> list[EvidenceSentence]:
    """Top-k review sentences by Jaccard similarity to ``query``, labelled R1..Rk.

    ``reviews`` are ``{id, item_id, text, stars?}`` dicts (benchmark ``reviews.jsonl``). Ties are
    broken by review id and sentence position so the evidence, and hence the prompt and its
    cache key, is deterministic.
    """
    query_words = _words(query)
    scored = []
    for review in reviews:
        for position, sentence in enumerate(_SENTENCE_END.split(str(review["text"]))):
            sentence_words = _words(sentence)
            if not sentence_words or not query_words:
                continue
            union = query_words | sentence_words
            score = len(query_words & sentence_words) / len(union)
            scored.append((-score, str(review["id"]), position, sentence.strip(), review))
    scored.sort(key=lambda entry: entry[:3])
    evidence = []
    for rank, (_, review_id, _, sentence, review) in enumerate(scored[:k], start=1):
        item_id = str(review["item_id"])
        item = (items or {}).get(item_id)
        evidence.append(
            EvidenceSentence(
                label=f"R{rank}",
                review_id=review_id,
                item_id=item_id,
                text=sentence,
                item_name=item.name if item else None,
                stars=review.get("stars"),
            )
        )
    return evidence


def rag_citation_messages(
    context: DialogueContext, evidence: Sequence[EvidenceSentence]
) -> list[dict[str, str]]:
    lines = []
    for e in evidence:
        about = e.item_name or e.item_id
        stars = f", {e.stars} stars" if e.stars is not None else ""
        lines.append(f"[{e.label}] ({about}{stars}) {e.text}")
    instruction = _ACTION_INSTRUCTIONS.get(context.action or "", "Write the next system turn.")
    prompt = (
        "You are a travel assistant helping a user choose places to visit. Support what you say "
        "with the review evidence below.\n\n"
        f"Dialogue so far:\n{_dialogue_text(context)}\n\n"
        "Candidate places:\n" + "\n".join(c.card() for c in context.candidates) + "\n\n"
        "Review evidence:\n" + "\n".join(lines) + "\n\n"
        f"{instruction} Your response must quote at least one passage of at least "
        f"{MIN_QUOTE_TOKENS} words copied exactly from the evidence (no paraphrase), inside "
        'double quotes and followed by its label, like "..." [R1].\n\n'
        f"{_JSON_FORMAT}"
    )
    return [{"role": "user", "content": prompt}]


_QUOTE = re.compile(r"[\"\u201c]([^\"\u201c\u201d]+)[\"\u201d](?:\s*\[([A-Za-z]*\d+)\])?")


def _normalize_quote(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'")
    return " ".join(text.split()).lower()


def cited_quotes(
    response: str, evidence: Sequence[EvidenceSentence]
) -> tuple[list[dict[str, str]], int]:
    """The citations of ``response`` and how many verbatim quotes of ≥ 10 tokens it has.

    Citations are the quoted spans followed by a label that names provided evidence. A quote is
    verbatim when, after folding whitespace, case and curly apostrophes, it is a substring of the
    evidence sentence its label names.
    """
    by_label = {e.label: e for e in evidence}
    citations = []
    verbatim_long = 0
    for match in _QUOTE.finditer(response):
        quote, label = match.group(1).strip(), match.group(2)
        source = by_label.get(label or "")
        if source is None:
            continue
        citations.append({"label": label, "review_id": source.review_id, "quote": quote})
        if len(quote.split()) >= MIN_QUOTE_TOKENS and _normalize_quote(quote) in _normalize_quote(
            source.text
        ):
            verbatim_long += 1
    return citations, verbatim_long


def label_citations(
    response: str, evidence: Sequence[EvidenceSentence], citations: Sequence[dict[str, str]]
) -> tuple[list[dict[str, str]], list[str]]:
    """``citations`` plus an entry for every other label of ``response`` that names evidence
    (e.g. ``as one guest says [R3]``), and the labels that name no evidence sentence.

    Every label of a submitted response must map to a review (formats spec §2), which is what
    lets the grounding metrics check it.
    """
    by_label = {e.label: e for e in evidence}
    cited = list(citations)
    mapped = {c["label"] for c in cited}
    unknown: list[str] = []
    for mention in extract_labels(response):
        if mention.label in mapped or mention.label in unknown:
            continue
        source = by_label.get(mention.label)
        if source is None:
            unknown.append(mention.label)
            continue
        cited.append({"label": mention.label, "review_id": source.review_id})
        mapped.add(mention.label)
    return cited, unknown


def rag_citation_turn(
    context: DialogueContext | Mapping[str, Any],
    evidence: Sequence[EvidenceSentence],
    *,
    gateway: LLMGateway,
    config: ModelConfig,
    max_retries: int = 2,
    meter: UsageMeter | None = None,
) -> BaselineOutcome:
    """One RAG-Citation turn; a bad format or a failed quote check is retried ``max_retries``×."""
    context = (
        context if isinstance(context, DialogueContext) else DialogueContext.from_dict(context)
    )
    ids = [c.id for c in context.candidates]
    answer_format = ranked_answer_format(ids)

    def parse(text: str) -> Parsed[tuple[_Answer, list[dict[str, str]]]]:
        answer = parse_ranked_answer(text, ids, answer_format)
        if answer.value is None:
            return Parsed(problem=answer.problem)
        citations, verbatim_long = cited_quotes(answer.value.response, evidence)
        if verbatim_long == 0:
            return Parsed(
                problem=f"the response has no quote of at least {MIN_QUOTE_TOKENS} words copied "
                "exactly from a labelled evidence sentence, followed by that label"
            )
        citations, unknown = label_citations(answer.value.response, evidence, citations)
        if unknown:
            return Parsed(
                problem=f"the response cites labels that name no evidence sentence: "
                f"{', '.join(unknown)}"
            )
        return Parsed((answer.value, citations))

    outcome = ask_until_parsed(
        gateway,
        config,
        rag_citation_messages(context, evidence),
        parse,
        _reask,
        max_reasks=max_retries,
        meter=meter,
        answer_format=answer_format,
    )
    if outcome.value is None:
        return BaselineOutcome(None, outcome.failure, outcome.attempts, outcome.raw_answers)
    answer, citations = outcome.value
    line = _submission_line(context, answer, citations)
    return BaselineOutcome(line, None, outcome.attempts, outcome.raw_answers)


def submission_jsonl(outcomes: Sequence[BaselineOutcome]) -> str:
    """The successful lines as ``submission.jsonl`` text (failures are reported separately)."""
    return "".join(json.dumps(o.line, ensure_ascii=False) + "\n" for o in outcomes if o.line)
