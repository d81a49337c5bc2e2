"""Template responses that quote reviews verbatim with `[Rn]` labels (Trace, §5 and
Appendix F: the non-LLM baselines answer with fixed templates around review spans).

A quote is one whole sentence of a review of the recommended item, copied character for
character (minus its final punctuation), so fuzzy and exact grounding both hold. Sentences are
chosen by how many of the user's words they share (ties: shorter first, then review order);
sentences holding quote marks or brackets are never quoted, because they would confuse quote
and label extraction. Every label in the response has exactly one citation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evaluation.lib.rankers.context import Catalogue, Item, Review, TurnContext
from evaluation.lib.rankers.lexical import tokenize

MAX_QUOTE_CHARS = 110
MIN_QUOTE_WORDS = 4
_SENTENCE_RE = re.compile(r"[^.!?]+[.!?]*")
_UNQUOTABLE = re.compile(r"[\"“”\[\]]")


@dataclass(frozen=True)
class Evidence:
    review: Review
    quote: str


def review_sentences(review: Review) -> list[str]:
    """Quotable sentences of a review, verbatim, without their final punctuation."""
    out = []
    for match in _SENTENCE_RE.finditer(review.text):
        sentence = match.group(0).strip().rstrip(".!?").strip()
        words = sentence.split()
        if (len(words) >= MIN_QUOTE_WORDS and len(sentence) <= MAX_QUOTE_CHARS
                and not _UNQUOTABLE.search(sentence) and sentence in review.text):
            out.append(sentence)
    return out


def pick_evidence(reviews: Sequence[Review], query: str, count: int) -> list[Evidence]:
    """Up to `count` distinct sentences from different reviews that best match `query`."""
    wanted = set(tokenize(query))
    scored = []
    for order, review in enumerate(reviews):
        for sentence in review_sentences(review):
            overlap = len(wanted & set(tokenize(sentence)))
            scored.append((-overlap, len(sentence), order, sentence, review))
    scored.sort(key=lambda row: row[:3])
    chosen, used = [], set()
    for *_, sentence, review in scored:
        if review.id in used or sentence.lower() in used:
            continue
        chosen.append(Evidence(review, sentence))
        used.update((review.id, sentence.lower()))
        if len(chosen) == count:
            break
    return chosen


class Answer:
    """A response under construction: text pieces plus the citations of its labels."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.citations: list[dict] = []

    def cite(self, evidence: Evidence) -> str:
        label = f"R{len(self.citations) + 1}"
        self.citations.append({"label": label, "review_id": evidence.review.id,
                               "quote": evidence.quote})
        return f'"{evidence.quote}" [{label}]'

    def add(self, text: str) -> None:
        self.parts.append(text)

    def text(self) -> str:
        return " ".join(self.parts)


def _quoted_sentence(answer: Answer, evidence: list[Evidence], lead: str) -> str:
    if not evidence:
        return ""
    cited = [answer.cite(e) for e in evidence]
    if len(cited) == 1:
        return f"{lead} {cited[0]}."
    return f"{lead} {cited[0]}, and another said {cited[1]}."


def recommendation(context: TurnContext, ranked: Sequence[str], catalogue: Catalogue, *,
                   query: str, quotes: int = 2) -> tuple[str, list[dict]]:
    """`I recommend X. One visitor wrote "…" [R1], and another said "…" [R2].`

    Compare turns present the two best items, one quote each.
    """
    answer = Answer()
    if not ranked:
        answer.add("I could not find a suitable option among the candidates.")
        return answer.text(), answer.citations
    top = catalogue.items[ranked[0]]
    if context.action == "compare" and len(ranked) > 1:
        second = catalogue.items[ranked[1]]
        answer.add(f"Both {top.name} and {second.name} fit what you described.")
        for item in (top, second):
            evidence = pick_evidence(catalogue.reviews.get(item.id, []), query, 1)
            answer.add(_quoted_sentence(answer, evidence, f"For {item.name}, a visitor wrote"))
        answer.add(f"I would pick {top.name}.")
    else:
        answer.add(f"I recommend {top.name}{_where(top)}.")
        evidence = pick_evidence(catalogue.reviews.get(top.id, []), query, quotes)
        answer.add(_quoted_sentence(answer, evidence, "One visitor wrote"))
    return " ".join(p for p in answer.parts if p), answer.citations


def _where(item: Item) -> str:
    return f" in {item.city}" if item.city else ""
