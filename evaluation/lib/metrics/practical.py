"""Practical-value metrics for Trace (§3, Appendix A Table 7 and Appendix E).

Dialogue-level diagnostics over the items a system recommended in one dialogue (the suite uses
each evaluated turn's top-ranked item, de-duplicated, in dialogue order):
- spatial coherence: share of item pairs within D km (haversine; D = 2, sensitivity 1–5 km);
- route efficiency: length of the nearest-neighbour path through the items, in km (lower is
  better);
- price alignment: share of priced items within the budget the user stated (keyword rules);
  dialogues without a stated budget are excluded;
- itinerary diversity: distinct item types / 3 (restaurant, hotel, attraction), capped at 1.
Functions return None when a dialogue has nothing to measure (e.g. fewer than two located
items), so it is left out of the mean instead of counting as 0 or 1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from evaluation.lib.metrics.types import ItemInfo

EARTH_RADIUS_KM = 6371.0088
DEFAULT_SPATIAL_KM = 2.0
SPATIAL_SENSITIVITY_KM = (1.0, 2.0, 3.0, 4.0, 5.0)
ITINERARY_TYPE_COUNT = 3

# Budget keywords → highest acceptable price level ($ = 1 … $$$$ = 4). Order does not matter:
# the user's most recent budget statement wins, because refinements usually tighten it.
_BUDGET_RULES: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"\b(?:budget|cheap|cheaper|affordable|inexpensive|low[\s-]cost)\b", re.I), 2),
    (re.compile(r"\b(?:moderate|moderately|mid[\s-]?range|mid[\s-]priced)\b", re.I), 3),
    (re.compile(r"\b(?:luxury|luxurious|upscale|high[\s-]end|splurge)\b", re.I), 4),
)


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in km between two (lat, lon) points in degrees."""
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    d_phi = phi2 - phi1
    d_lambda = math.radians(lon2 - lon1)
    a = math.sin(d_phi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(d_lambda / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


def _located(items: Iterable[ItemInfo]) -> list[ItemInfo]:
    """Distinct items that have coordinates, in first-seen order."""
    seen: dict[str, ItemInfo] = {}
    for item in items:
        if item.lat is not None and item.lon is not None and item.id not in seen:
            seen[item.id] = item
    return list(seen.values())


def _distance(a: ItemInfo, b: ItemInfo) -> float:
    return haversine_km(a.lat, a.lon, b.lat, b.lon)  # type: ignore[arg-type]


def pair_distances_km(items: Sequence[ItemInfo]) -> list[float]:
    """Distances between every pair of distinct located items (compute once, threshold often)."""
    located = _located(items)
    return [_distance(a, b) for i, a in enumerate(located) for b in located[i + 1 :]]


def spatial_coherence_from_distances(distances: Sequence[float], max_km: float) -> float | None:
    """Share of the given pair distances that are at most ``max_km``; None without pairs."""
    if not distances:
        return None
    return sum(distance <= max_km for distance in distances) / len(distances)


def spatial_coherence(
    items: Sequence[ItemInfo], max_km: float = DEFAULT_SPATIAL_KM
) -> float | None:
    """Share of pairs of distinct located items at most ``max_km`` apart; None for < 2 items."""
    return spatial_coherence_from_distances(pair_distances_km(items), max_km)


def route_length_km(items: Sequence[ItemInfo]) -> float | None:
    """Route efficiency: km walked visiting every located item, starting at the first one
    recommended and always going to the nearest unvisited item. 0 for one item, None for none."""
    remaining = _located(items)
    if not remaining:
        return None
    current = remaining.pop(0)
    total = 0.0
    while remaining:
        nearest = min(range(len(remaining)), key=lambda i: _distance(current, remaining[i]))
        total += _distance(current, remaining[nearest])
        current = remaining.pop(nearest)
    return total


def stated_budget_ceiling(user_texts: Iterable[str]) -> int | None:
    """Highest acceptable price level from the user's words, or None if no budget was stated.

    budget/cheap/affordable → 2 ($$), moderate → 3 ($$$), luxury/upscale → 4 (any). The last
    budget keyword the user wrote decides.
    """
    ceiling: int | None = None
    for text in user_texts:
        mentions = [
            (match.start(), level)
            for pattern, level in _BUDGET_RULES
            for match in pattern.finditer(text)
        ]
        if mentions:
            ceiling = max(mentions)[1]
    return ceiling


def price_alignment(items: Sequence[ItemInfo], ceiling: int | None) -> float | None:
    """Share of distinct recommended items with a price level ≤ ``ceiling``.

    None when no budget was stated (the paper excludes those dialogues) or no item has a price.
    """
    if ceiling is None:
        return None
    priced = {item.id: item.price_level for item in items if item.price_level is not None}
    if not priced:
        return None
    return sum(level <= ceiling for level in priced.values()) / len(priced)


def itinerary_diversity(
    items: Sequence[ItemInfo], type_count: int = ITINERARY_TYPE_COUNT
) -> float | None:
    """Distinct item types recommended / ``type_count`` (3), capped at 1; None without items."""
    if not items:
        return None
    return min(1.0, len({item.type for item in items}) / type_count)
