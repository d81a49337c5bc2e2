"""The seven non-LLM reference baselines of Trace (§5, Appendix A Table 8 and
Appendix F), each ranking the candidate pool and answering with verbatim review quotes.

- Popularity: stars × ln(1 + number of reviews); ignores the conversation.
- TF-IDF: cosine TF-IDF of all user turns against item documents (lexical.py).
- Aspect: query aspect weights × mean keyword aspect sentiment of the reviews (aspects.py).
- Dense: all-MiniLM-L6-v2 cosine between the user turns and name + categories + top-3 reviews
  (200 characters each); rejected items' embeddings are subtracted from the query with weight
  0.5 (embeddings.py).
- Spatial: 0.7 × TF-IDF (scaled to the pool's best) + 0.3 × exp(−distance to the anchor / 1 km),
  the anchor being the last place the user named, else the city centroid (geo.py).
- Hybrid-RRF: reciprocal rank fusion, Σ 1 / (60 + rank), of TF-IDF, Aspect, Dense and a
  structured ranker (stars, then lower price); 3-way when no embedding model is available.
- Itinerary: TF-IDF's first item, then the rest of the pool in nearest-neighbour route order;
  the response adds a short walk through the 500 m proximity graph with distance annotations.

Every ranker that reads the conversation moves items the user rejected to the end of its list
(the paper's Dense baseline does this explicitly; a recommender repeating a rejected item is
not answering the user). Ties are broken by the pool's order, so results are deterministic.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence

from evaluation.lib.rankers.aspects import aspect_score, aspect_weights, item_aspect_sentiment
from evaluation.lib.rankers.context import Catalogue, TurnContext
from evaluation.lib.rankers.embeddings import (
    EmbeddingsUnavailable,
    SentenceEncoder,
    shared_encoder,
)
from evaluation.lib.rankers.geo import (
    Gazetteer,
    distance_km,
    nearest_neighbour_order,
    proximity_neighbours,
    walking_distance_label,
)
from evaluation.lib.rankers.lexical import TfidfIndex
from evaluation.lib.rankers.responses import recommendation

RRF_K = 60
SPATIAL_TEXT_WEIGHT = 0.7
SPATIAL_SCALE_KM = 1.0
DENSE_REJECT_WEIGHT = 0.5
DENSE_REVIEWS = 3
PREPARE_CHUNK = 128  # texts embedded between two progress reports
DENSE_REVIEW_CHARS = 200
ROUTE_STOPS = 2


def order_by_score(pool: Sequence[str], scores: Mapping[str, float]) -> list[str]:
    """Pool ids by descending score; ties keep the pool's order."""
    position = {item_id: i for i, item_id in enumerate(pool)}
    return sorted(pool, key=lambda item_id: (-scores.get(item_id, 0.0), position[item_id]))


def demote(ranked: Sequence[str], rejected: Sequence[str]) -> list[str]:
    """`ranked` with the rejected items moved to the end (in their ranked order)."""
    banned = set(rejected)
    return [i for i in ranked if i not in banned] + [i for i in ranked if i in banned]


class Baseline(ABC):
    """Ranks a turn's pool and answers it; subclasses define `scores` (and may refine `rank`)."""

    key = ""
    name = ""
    family = ""
    description = ""
    reads_conversation = True
    # runs a sentence-embedding model on every text: minutes on a busy CPU, so `load_demo`
    # leaves it to the worker (evaluation.services.reference_rankers.baselines_enqueue)
    needs_encoder = False

    def __init__(self, catalogue: Catalogue, **options):
        self.catalogue = catalogue

    def prepare(self, contexts: Sequence[TurnContext],
                progress: Callable[[int, int], None] | None = None) -> None:
        """Batch work before answering (e.g. embedding every text once), reporting PROGRESS
        (done, total) as it goes; none by default."""
        return None

    @abstractmethod
    def scores(self, context: TurnContext) -> dict[str, float]:
        """A score per pool item for this turn (higher ranks first)."""

    def rank(self, context: TurnContext) -> list[str]:
        ranked = order_by_score(context.pool, self.scores(context))
        return demote(ranked, context.rejected_item_ids) if self.reads_conversation else ranked

    def respond(self, context: TurnContext, ranked: Sequence[str]) -> tuple[str, list[dict]]:
        query = context.user_text if self.reads_conversation else ""
        return recommendation(context, ranked, self.catalogue, query=query)

    def answer(self, context: TurnContext) -> dict:
        """One `turn` submission line (formats.md §2)."""
        ranked = self.rank(context)
        response, citations = self.respond(context, ranked)
        return {"dialogue_id": context.dialogue_id, "turn_index": context.turn_index,
                "response": response, "ranked_item_ids": ranked, "citations": citations}


class Popularity(Baseline):
    key, name, family = "popularity", "Popularity", "heuristic"
    description = "Stars × ln(1 + review count), no dialogue context; fixed templates."
    reads_conversation = False

    def scores(self, context):
        items, reviews = self.catalogue.items, self.catalogue.reviews
        return {i: (items[i].stars or 0.0) * math.log1p(len(reviews.get(i, ())))
                for i in context.pool}


class TfIdf(Baseline):
    key, name, family = "tfidf", "TF-IDF", "retrieval"
    description = ("Cosine TF-IDF (log tf, smoothed idf, 80 stop words) of the user turns against "
                   "name, categories, description and reviews, indexed per city and type.")

    def __init__(self, catalogue, **options):
        super().__init__(catalogue)
        self._indexes: dict[tuple, TfidfIndex] = {}

    def document(self, item_id: str) -> str:
        item = self.catalogue.items[item_id]
        reviews = " ".join(r.text for r in self.catalogue.reviews.get(item_id, ()))
        return " ".join([item.name, *item.categories, item.description, reviews])

    def index(self, item_id: str) -> TfidfIndex:
        key = self.catalogue.group_of(item_id)
        if key not in self._indexes:
            self._indexes[key] = TfidfIndex({i: self.document(i)
                                             for i in self.catalogue.group(key)})
        return self._indexes[key]

    def scores(self, context):
        groups: dict[tuple, list[str]] = {}
        for item_id in context.pool:  # one group in the closed pool, a few in the open one
            groups.setdefault(self.catalogue.group_of(item_id), []).append(item_id)
        out: dict[str, float] = {}
        for ids in groups.values():
            out.update(self.index(ids[0]).scores(context.user_text, ids))
        return out


class Aspect(Baseline):
    key, name, family = "aspect", "Aspect", "retrieval"
    description = ("Keyword aspect sentiment (food, service, ambiance, value, location) weighted "
                   "by the aspects the user mentions.")

    def __init__(self, catalogue, **options):
        super().__init__(catalogue)
        self._sentiment: dict[str, dict[str, float]] = {}

    def sentiment(self, item_id: str) -> dict[str, float]:
        if item_id not in self._sentiment:
            texts = [r.text for r in self.catalogue.reviews.get(item_id, ())]
            self._sentiment[item_id] = item_aspect_sentiment(texts)
        return self._sentiment[item_id]

    def scores(self, context):
        weights = aspect_weights(context.user_text)
        return {i: aspect_score(weights, self.sentiment(i)) for i in context.pool}


class Dense(Baseline):
    key, name, family = "dense", "Dense", "dense"
    needs_encoder = True
    description = ("all-MiniLM-L6-v2 embeddings of the user turns vs name + categories + top-3 "
                   "reviews; rejected items subtracted from the query (weight 0.5).")

    def __init__(self, catalogue, *, encoder: SentenceEncoder | None = None, **options):
        super().__init__(catalogue)
        self.encoder = encoder or shared_encoder()

    def document(self, item_id: str) -> str:
        item = self.catalogue.items[item_id]
        reviews = sorted(self.catalogue.reviews.get(item_id, ()), key=lambda r: -(r.stars or 0))
        snippets = [r.text[:DENSE_REVIEW_CHARS] for r in reviews[:DENSE_REVIEWS]]
        return ". ".join([item.name, ", ".join(item.categories), *snippets])

    def prepare(self, contexts, progress=None):
        """Every document and user turn embedded once (the encoder caches them), in chunks of
        PREPARE_CHUNK texts, so a long embedding reports progress (a worker's job would
        otherwise look dead while it runs)."""
        item_ids = dict.fromkeys(i for c in contexts for i in c.pool)
        texts = [self.document(i) for i in item_ids] + [c.user_text for c in contexts]
        for start in range(0, len(texts), PREPARE_CHUNK):
            self.encoder.encode(texts[start:start + PREPARE_CHUNK])
            if progress:
                progress(min(start + PREPARE_CHUNK, len(texts)), len(texts))

    def scores(self, context):
        query = self.encoder.encode([context.user_text])[0]
        rejected = [i for i in context.rejected_item_ids if i in self.catalogue.items]
        if rejected:
            negative = self.encoder.encode([self.document(i) for i in rejected]).mean(axis=0)
            query = query - DENSE_REJECT_WEIGHT * negative
        docs = self.encoder.encode([self.document(i) for i in context.pool])
        return dict(zip(context.pool, (docs @ query).tolist(), strict=True))


class Spatial(TfIdf):
    key, name, family = "spatial", "Spatial", "spatial"
    description = ("0.7 × TF-IDF + 0.3 × closeness to the place the user last named (else the "
                   "city centre), haversine distance.")

    def __init__(self, catalogue, **options):
        super().__init__(catalogue)
        self.gazetteer = Gazetteer(catalogue)

    def scores(self, context):
        text = super().scores(context)
        best = max(text.values(), default=0.0) or 1.0
        items = self.catalogue.items
        city = items[context.pool[0]].city if context.pool else None
        anchor = self.gazetteer.anchor(context.user_text, city)
        out = {}
        for item_id, score in text.items():
            item = items[item_id]
            closeness = 0.0
            if anchor and item.located:
                km = distance_km(item, _Point(*anchor))
                closeness = math.exp(-km / SPATIAL_SCALE_KM)
            out[item_id] = (SPATIAL_TEXT_WEIGHT * score / best
                            + (1 - SPATIAL_TEXT_WEIGHT) * closeness)
        return out


class _Point:
    """A bare coordinate for `distance_km`."""

    def __init__(self, lat: float, lon: float):
        self.lat, self.lon = lat, lon


class HybridRRF(Baseline):
    key, name, family = "hybrid-rrf", "Hybrid-RRF", "hybrid"
    needs_encoder = True
    description = ("Reciprocal rank fusion (k = 60) of TF-IDF, Aspect, Dense and stars/price; "
                   "3-way without an embedding model.")

    def __init__(self, catalogue, *, encoder: SentenceEncoder | None = None, **options):
        super().__init__(catalogue)
        self.tfidf, self.aspect = TfIdf(catalogue), Aspect(catalogue)
        self.dense: Dense | None = Dense(catalogue, encoder=encoder)

    def prepare(self, contexts, progress=None):
        try:
            self.dense.prepare(contexts, progress)
        except EmbeddingsUnavailable:
            self.dense = None

    def structured(self, context) -> dict[str, float]:
        items = self.catalogue.items
        return {i: (items[i].stars or 0.0) - 0.1 * (items[i].price_level or 2)
                for i in context.pool}

    def scores(self, context):
        signals: list[Callable] = [self.tfidf.scores, self.aspect.scores, self.structured]
        if self.dense is not None:
            signals.append(self.dense.scores)
        fused = dict.fromkeys(context.pool, 0.0)
        for signal in signals:
            for rank, item_id in enumerate(order_by_score(context.pool, signal(context)), 1):
                fused[item_id] += 1.0 / (RRF_K + rank)
        return fused


class Itinerary(TfIdf):
    key, name, family = "itinerary", "Itinerary", "planning"
    description = ("TF-IDF's best item, then the pool in nearest-neighbour route order; the answer "
                   "adds a walk through the 500 m proximity graph (other item types).")

    def rank(self, context):
        ranked = super().rank(context)
        if not ranked:
            return ranked
        items = self.catalogue.items
        top, rejected = items[ranked[0]], set(context.rejected_item_ids)
        rest = [items[i] for i in ranked[1:] if i not in rejected]
        route = [item.id for item in nearest_neighbour_order(top, rest)]
        return [top.id, *route, *[i for i in ranked[1:] if i in rejected]]

    def respond(self, context, ranked):
        response, citations = super().respond(context, ranked)
        if not ranked:
            return response, citations
        stops = self.route(ranked[0])
        if stops:
            legs = ", then ".join(f"{item.name} ({walking_distance_label(km)})"
                                  for item, km in stops)
            response += f" For a short walk from there: {legs}."
        return response, citations

    def route(self, start_id: str) -> list[tuple]:
        """Up to two stops of other types, each the nearest proximity-graph neighbour."""
        items = self.catalogue.items
        current = items[start_id]
        city_items = [i for i in items.values() if i.city == current.city]
        visited, stops = {start_id}, []
        while len(stops) < ROUTE_STOPS:
            options = [(item, km) for item, km in proximity_neighbours(current, city_items)
                       if item.id not in visited and item.type != items[start_id].type]
            if not options:
                break
            item, km = options[0]
            stops.append((item, km))
            visited.add(item.id)
            current = item
        return stops


BASELINES: dict[str, type[Baseline]] = {
    cls.key: cls for cls in (Popularity, TfIdf, Aspect, Dense, Spatial, HybridRRF, Itinerary)
}

