"""Spatial coherence, route efficiency, price alignment and itinerary diversity."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation.lib.metrics.practical import (
    haversine_km,
    itinerary_diversity,
    pair_distances_km,
    price_alignment,
    route_length_km,
    spatial_coherence,
    stated_budget_ceiling,
)
from evaluation.lib.metrics.types import ItemInfo

KM_PER_DEGREE = 111.19508  # 2πR/360 with R = 6371.0088 km, along the equator


def at(item_id, lon, item_type="restaurant", price=None):
    return ItemInfo(item_id, item_type, "Equator", 0.0, lon, price)


A = at("a", 0.0)
B = at("b", 0.009)  # ≈ 1.0 km east of A
C = at("c", 0.09)  # ≈ 10.0 km east of A


def test_haversine_gives_about_111_km_per_degree_on_the_equator():
    assert haversine_km(0, 0, 0, 1) == pytest.approx(KM_PER_DEGREE, rel=1e-6)
    assert haversine_km(10, 20, 10, 20) == 0.0


def test_spatial_coherence_is_the_share_of_pairs_within_the_radius():
    # Pairs: AB ≈ 1.0 km, AC ≈ 10.0 km, BC ≈ 9.0 km -> 1 of 3 within 2 km.
    assert spatial_coherence([A, B, C]) == pytest.approx(1 / 3)
    assert spatial_coherence([A, B, C], max_km=1.0) == 0.0
    assert spatial_coherence([A, B, C], max_km=9.5) == pytest.approx(2 / 3)


def test_spatial_coherence_needs_two_located_items():
    unlocated = ItemInfo("x", "hotel")
    assert spatial_coherence([A]) is None
    assert spatial_coherence([A, unlocated]) is None
    assert spatial_coherence([A, A]) is None  # the same item twice is one place


def test_route_follows_nearest_neighbour_from_the_first_recommendation():
    # From A the nearest is B (1.0 km), then C (9.0 km): 0.09 degrees in total.
    assert route_length_km([A, C, B]) == pytest.approx(0.09 * KM_PER_DEGREE, rel=1e-6)
    # Starting at C: B (9.0 km) then A (1.0 km) -> the same length here.
    assert route_length_km([C, A, B]) == pytest.approx(0.09 * KM_PER_DEGREE, rel=1e-6)


def test_route_of_one_item_is_zero_and_of_none_is_undefined():
    assert route_length_km([A]) == 0.0
    assert route_length_km([]) is None


def test_budget_keywords_map_to_price_ceilings():
    assert stated_budget_ceiling(["Somewhere cheap please"]) == 2
    assert stated_budget_ceiling(["We are on a budget."]) == 2
    assert stated_budget_ceiling(["Something affordable"]) == 2
    assert stated_budget_ceiling(["moderate prices are fine"]) == 3
    assert stated_budget_ceiling(["It's our anniversary, upscale is fine"]) == 4
    assert stated_budget_ceiling(["Luxury all the way"]) == 4


def test_latest_budget_statement_wins():
    assert stated_budget_ceiling(["Something upscale", "Too pricey, make it cheap"]) == 2
    assert stated_budget_ceiling(["cheap or maybe upscale"]) == 4


def test_dialogue_without_a_stated_budget_is_excluded():
    assert stated_budget_ceiling(["Find me a good seafood place"]) is None
    assert price_alignment([at("a", 0, price=1)], None) is None


def test_price_alignment_is_the_share_of_priced_items_within_budget():
    items = [at("a", 0, price=1), at("b", 0, price=2), at("c", 0, price=3), at("d", 0)]
    assert price_alignment(items, 2) == pytest.approx(2 / 3)  # d has no price: not counted
    assert price_alignment(items, 3) == 1.0
    assert price_alignment([at("d", 0)], 2) is None


def test_itinerary_diversity_counts_distinct_types_out_of_three():
    assert itinerary_diversity([A, B]) == pytest.approx(1 / 3)
    mixed = [A, at("h", 0, "hotel"), at("m", 0, "attraction")]
    assert itinerary_diversity(mixed) == 1.0
    assert itinerary_diversity([*mixed, at("x", 0, "bar")]) == 1.0
    assert itinerary_diversity([]) is None


coordinates = st.tuples(st.floats(-60, 60), st.floats(-170, 170))


@given(st.lists(coordinates, min_size=2, max_size=6, unique=True), st.floats(0.5, 5.0))
def test_spatial_values_are_bounded_and_consistent(points, radius):
    items = [ItemInfo(f"i{n}", "hotel", None, lat, lon) for n, (lat, lon) in enumerate(points)]
    coherence = spatial_coherence(items, radius)
    assert 0.0 <= coherence <= 1.0
    assert spatial_coherence(items, radius + 1.0) >= coherence
    distances = pair_distances_km(items)
    assert len(distances) == len(items) * (len(items) - 1) // 2
    # A nearest-neighbour path is never shorter than its longest hop from the start.
    assert route_length_km(items) >= 0.0
