"""Sparse lexical retrieval for the TF-IDF baseline (Trace, Appendix F "TFIDFBaseline").

An item's document is its name, categories, description and all its review texts. Weights use
logarithmic term frequency, 1 + ln(tf), and smoothed inverse document frequency,
ln((1 + N) / (1 + df)) + 1, after removing 80 English stop words; the score is the cosine of
the query vector (all user turns so far) and the document vector. One index is built per
(city, item type), the scope a Trace candidate pool is drawn from, and cached for the run.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping

_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

# 80 function words that carry no preference.
STOP_WORDS = frozenset("""
a about after all also am an and any are as at be because been but by can could did do does
for from had has have he her here his how i i'd i'm if in into is it it's its just like me
more my no of on one or our she so some than that the their them then there they this to
too up us was we were what when which who will with would you your
""".split())


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens without stop words."""
    return [token for token in _WORD_RE.findall(text.lower()) if token not in STOP_WORDS]


def _log_tf(counts: Counter) -> dict[str, float]:
    return {term: 1.0 + math.log(count) for term, count in counts.items()}


def _normalized(vector: dict[str, float]) -> dict[str, float]:
    norm = math.sqrt(sum(weight * weight for weight in vector.values()))
    return {term: weight / norm for term, weight in vector.items()} if norm else {}


class TfidfIndex:
    """Cosine TF-IDF over a fixed set of documents."""

    def __init__(self, documents: Mapping[str, str]):
        counts = {doc_id: Counter(tokenize(text)) for doc_id, text in documents.items()}
        df: Counter = Counter()
        for terms in counts.values():
            df.update(terms.keys())
        n = len(documents)
        self.idf = {term: math.log((1 + n) / (1 + freq)) + 1.0 for term, freq in df.items()}
        self.vectors = {
            doc_id: _normalized({t: w * self.idf[t] for t, w in _log_tf(terms).items()})
            for doc_id, terms in counts.items()
        }

    def query_vector(self, text: str) -> dict[str, float]:
        terms = Counter(t for t in tokenize(text) if t in self.idf)
        return _normalized({t: w * self.idf[t] for t, w in _log_tf(terms).items()})

    def scores(self, text: str, doc_ids: Iterable[str]) -> dict[str, float]:
        query = self.query_vector(text)
        out = {}
        for doc_id in doc_ids:
            vector = self.vectors.get(doc_id, {})
            out[doc_id] = sum(weight * vector.get(term, 0.0) for term, weight in query.items())
        return out
