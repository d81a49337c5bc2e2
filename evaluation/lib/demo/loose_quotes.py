"""The demo's entrant whose quotes are not always faithful ("Demo entrant: loose quoter").

Every reference baseline copies review sentences character for character, so on the demo the
grounding axis (GS, Trace §3) reads 1.000 for every system and tells them apart by nothing. This
entrant answers like a baseline (its lines are a baseline's), then loosens some of its quotes the
way LLM systems do (Trace §6.2: paraphrased and misattributed quotes), so the demo's board, its
grounding metrics and the citation check of its annotators have something to tell apart:

- ``reworded`` (probability ``reword``): one word of the quote dropped and two neighbouring words
  swapped: still close to the review (fuzzy grounding at threshold 80 often passes it, an exact
  reader does not);
- ``misattributed`` (probability ``misattribute``): the quote replaced by a sentence of a review
  of another item in the catalogue, still labelled with the original review (grounding fails).

The rest stay verbatim. Each citation's ``quote`` is changed with the response text, so the line
claims what it shows. Pure and seeded: the same lines, reviews and seed give the same answers.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from evaluation.lib.rankers.context import Review
from evaluation.lib.rankers.responses import MIN_QUOTE_WORDS, review_sentences

VERBATIM, REWORDED, MISATTRIBUTED = "verbatim", "reworded", "misattributed"
SYSTEM_NAME = "Demo entrant: loose quoter"
DESCRIPTION = ("A demo entrant: the TF-IDF baseline's answers with about a third of the quotes "
               "reworded or taken from another place's reviews (evaluation/lib/demo/"
               "loose_quotes.py), so the demo's grounding metrics have something to tell apart.")


def quotable_sentences(reviews: Sequence[Mapping]) -> list[str]:
    """Every sentence a baseline could quote, of the bundle's REVIEWS (records with id,
    item_id, text), in review order."""
    return [sentence for record in reviews for sentence in review_sentences(
        Review(str(record["id"]), str(record["item_id"]), record.get("text") or ""))]


def reword(quote: str, rng: random.Random) -> str:
    """QUOTE with one inner word dropped and two neighbouring words swapped."""
    words = quote.split()
    if len(words) < MIN_QUOTE_WORDS:
        return quote
    del words[rng.randrange(1, len(words) - 1)]
    k = rng.randrange(0, len(words) - 1)
    words[k], words[k + 1] = words[k + 1], words[k]
    return " ".join(words)


def loosen(lines: Sequence[Mapping], sentences: Sequence[str], *, seed: int = 42,
           reword_rate: float = 0.2, misattribute_rate: float = 0.15
           ) -> tuple[list[dict], dict[str, int]]:
    """LINES (turn submission lines, formats.md §2) with some quotes loosened, and how many
    quotes of each kind. SENTENCES: quotable review sentences of the catalogue to misattribute
    from (a sentence equal to the original quote is never chosen)."""
    rng = random.Random(f"loose-quotes:{seed}")
    counts = {VERBATIM: 0, REWORDED: 0, MISATTRIBUTED: 0}
    out = []
    for line in lines:
        text, citations = line["response"], []
        for citation in line.get("citations", []):
            quote = citation.get("quote", "")
            draw = rng.random()
            kind, new = VERBATIM, quote
            if quote and f'"{quote}"' in text:
                if draw < misattribute_rate and sentences:
                    new = rng.choice(sentences)
                    kind = MISATTRIBUTED if new != quote else VERBATIM
                elif draw < misattribute_rate + reword_rate:
                    new = reword(quote, rng)
                    kind = REWORDED if new != quote else VERBATIM
            if new != quote:
                text = text.replace(f'"{quote}"', f'"{new}"', 1)
            counts[kind] += 1
            citations.append({**citation, "quote": new})
        out.append({**line, "response": text, "citations": citations})
    return out, counts
