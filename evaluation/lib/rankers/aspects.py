"""Keyword aspect sentiment for the Aspect baseline (Trace, Appendix F
"AspectRetrievalBaseline").

Five aspect categories — food, service, ambiance, value, location — are detected by keywords.
For every review sentence that mentions an aspect, its sentiment is (positive − negative
opinion words) / (positive + negative), 0 without opinion words. An item's aspect sentiment is
the mean over all its review mentions of that aspect (0 when never mentioned). The query weight
of an aspect is its share of the aspect keywords in the user's turns (uniform when the user
names none), and an item's score is Σ_a weight_a × sentiment_a.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

ASPECT_KEYWORDS: dict[str, frozenset[str]] = {
    "food": frozenset("""food dish dishes menu meal meals taste tasty flavor flavors delicious
        breakfast brunch lunch dinner dessert coffee wine cocktails seafood vegan vegetarian
        cuisine portions sushi pasta pizza tacos noodles""".split()),
    "service": frozenset("""service staff waiter waitress server servers host friendly rude
        helpful attentive welcoming kind reception concierge""".split()),
    "ambiance": frozenset("""ambiance atmosphere quiet noisy loud cozy romantic lively calm
        decor music vibe view views intimate peaceful crowded""".split()),
    "value": frozenset("""price prices priced cheap affordable expensive pricey value budget
        money deal worth overpriced inexpensive upscale luxury bargain""".split()),
    "location": frozenset("""location located walk walking distance close near nearby central
        downtown neighborhood parking transit station convenient easy find""".split()),
}
POSITIVE = frozenset("""good great excellent amazing incredible wonderful lovely fantastic
    perfect friendly helpful delicious tasty fresh clean comfortable cozy quiet beautiful nice
    best fast easy attentive worth recommend loved enjoyed pleasant spotless charming superb
    outstanding convenient kind welcoming generous""".split())
NEGATIVE = frozenset("""bad poor terrible awful horrible rude slow dirty noisy loud bland stale
    cold overpriced disappointing mediocre worst cramped expensive pricey crowded broken
    unfriendly smelly tiny""".split())

_WORD_RE = re.compile(r"[a-z]+")
_SENTENCE_RE = re.compile(r"[^.!?]+")


def aspect_weights(text: str) -> dict[str, float]:
    """Each aspect's share of the aspect keywords in `text` (uniform when there are none)."""
    words = _WORD_RE.findall(text.lower())
    counts = {aspect: sum(word in keywords for word in words)
              for aspect, keywords in ASPECT_KEYWORDS.items()}
    total = sum(counts.values())
    if not total:
        return dict.fromkeys(ASPECT_KEYWORDS, 1.0 / len(ASPECT_KEYWORDS))
    return {aspect: count / total for aspect, count in counts.items()}


def sentence_sentiment(words: list[str]) -> float:
    positive = sum(word in POSITIVE for word in words)
    negative = sum(word in NEGATIVE for word in words)
    return (positive - negative) / (positive + negative) if positive + negative else 0.0


def item_aspect_sentiment(review_texts: Iterable[str]) -> dict[str, float]:
    """Mean sentiment of the review sentences mentioning each aspect (0 when none do)."""
    sums = dict.fromkeys(ASPECT_KEYWORDS, 0.0)
    counts = dict.fromkeys(ASPECT_KEYWORDS, 0)
    for text in review_texts:
        for sentence in _SENTENCE_RE.findall(text.lower()):
            words = _WORD_RE.findall(sentence)
            present = [a for a, keywords in ASPECT_KEYWORDS.items()
                       if any(word in keywords for word in words)]
            if not present:
                continue
            value = sentence_sentiment(words)
            for aspect in present:
                sums[aspect] += value
                counts[aspect] += 1
    return {a: sums[a] / counts[a] if counts[a] else 0.0 for a in ASPECT_KEYWORDS}


def aspect_score(weights: Mapping[str, float], sentiment: Mapping[str, float]) -> float:
    return sum(weight * sentiment.get(aspect, 0.0) for aspect, weight in weights.items())
