"""Geography for the Spatial and Itinerary baselines (Trace, Appendix F
"SpatialBaseline", "ItineraryBaseline").

- Anchor detection: the last place the user mentions by name — a neighbourhood (items'
  `attributes.neighborhood`) or an item of the catalogue — else the centroid of the pool's city.
- Proximity graph: items within 500 m are connected, except two items of the same type.
- Nearest-neighbour route: from a start item, always walk to the closest unvisited item
  (the greedy TSP heuristic the paper's Itinerary baseline uses).
Distances are haversine kilometres (`evaluation.lib.metrics.practical.haversine_km`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from evaluation.lib.metrics.practical import haversine_km
from evaluation.lib.rankers.context import Catalogue, Item

PROXIMITY_KM = 0.5


def distance_km(a: Item, b: Item) -> float:
    return haversine_km(a.lat, a.lon, b.lat, b.lon)  # type: ignore[arg-type]


class Gazetteer:
    """Place names a user may mention, with coordinates, per city."""

    def __init__(self, catalogue: Catalogue):
        places: dict[tuple[str | None, str], list[tuple[float, float]]] = {}
        for item in catalogue.items.values():
            if not item.located:
                continue
            names = [item.name]
            neighborhood = item.attributes.get("neighborhood") if item.attributes else None
            if isinstance(neighborhood, str):
                names.append(neighborhood)
            for name in names:
                places.setdefault((item.city, name.lower()), []).append((item.lat, item.lon))
        self.places = {key: (sum(p[0] for p in points) / len(points),
                             sum(p[1] for p in points) / len(points))
                       for key, points in places.items()}
        self._patterns: dict[str | None, re.Pattern | None] = {}
        self.centroids = {}
        for city in {item.city for item in catalogue.items.values()}:
            located = [i for i in catalogue.items.values() if i.city == city and i.located]
            if located:
                self.centroids[city] = (sum(i.lat for i in located) / len(located),
                                        sum(i.lon for i in located) / len(located))

    def _pattern(self, city: str | None) -> re.Pattern | None:
        if city not in self._patterns:
            names = sorted((name for c, name in self.places if c == city), key=len, reverse=True)
            self._patterns[city] = (re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
                                    if names else None)
        return self._patterns[city]

    def anchor(self, text: str, city: str | None) -> tuple[float, float] | None:
        """Coordinates of the last place named in `text`, else the city's centroid."""
        pattern = self._pattern(city)
        mentions = pattern.findall(text.lower()) if pattern else []
        if mentions:
            return self.places[(city, mentions[-1])]
        return self.centroids.get(city)


def proximity_neighbours(item: Item, candidates: Iterable[Item],
                         max_km: float = PROXIMITY_KM) -> list[tuple[Item, float]]:
    """Items joined to `item` in the proximity graph, nearest first."""
    if not item.located:
        return []
    linked = [(other, distance_km(item, other)) for other in candidates
              if other.located and other.id != item.id and other.type != item.type]
    return sorted((pair for pair in linked if pair[1] <= max_km), key=lambda pair: pair[1])


def nearest_neighbour_order(start: Item, others: Sequence[Item]) -> list[Item]:
    """`others` in greedy nearest-neighbour visiting order from `start`; unlocated items last."""
    remaining = [item for item in others if item.located]
    route, current = [], start
    while remaining and current.located:
        nearest = min(remaining, key=lambda item: (distance_km(current, item), item.id))
        remaining.remove(nearest)
        route.append(nearest)
        current = nearest
    return route + remaining + [item for item in others if not item.located]


def walking_distance_label(km: float) -> str:
    """`350 m` below one kilometre, `1.4 km` above (the paper's distance annotations)."""
    return f"{round(km * 1000 / 10) * 10:.0f} m" if km < 1 else f"{km:.1f} km"
