"""Recall@k, Hit@k, MRR, multi-reference recall and candidate pools."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation.lib.metrics.accuracy import (
    build_city_type_index,
    closed_pool,
    hit_at_k,
    items_outside_pool,
    multi_reference_recall_at_k,
    open_pool,
    out_of_pool_rate,
    recall_at_k,
    reciprocal_rank,
    turn_accuracy,
)
from evaluation.lib.metrics.types import ItemInfo

RANKED = ["a", "b", "c", "d", "e"]


def test_recall_counts_the_share_of_gold_items_in_the_top_k():
    gold = ["b", "e"]
    assert recall_at_k(RANKED, gold, 1) == 0.0
    assert recall_at_k(RANKED, gold, 3) == 0.5
    assert recall_at_k(RANKED, gold, 5) == 1.0
    assert recall_at_k(RANKED, gold, 10) == 1.0


def test_hit_is_one_as_soon_as_any_gold_item_is_in_the_top_k():
    assert hit_at_k(RANKED, ["c"], 1) == 0.0
    assert hit_at_k(RANKED, ["c"], 3) == 1.0


def test_mrr_uses_the_first_gold_item_and_is_zero_when_absent():
    assert reciprocal_rank(RANKED, ["d", "b"]) == pytest.approx(1 / 2)
    assert reciprocal_rank(RANKED, ["z"]) == 0.0
    assert reciprocal_rank([], ["z"]) == 0.0


def test_turn_without_gold_is_not_scored():
    assert recall_at_k(RANKED, [], 1) is None
    assert hit_at_k(RANKED, [], 1) is None
    assert reciprocal_rank(RANKED, []) is None
    assert multi_reference_recall_at_k(RANKED, [], ["a"], 1) is None
    assert turn_accuracy(RANKED, [], ["a"]) == {}


def test_multi_reference_recall_counts_an_alternative_as_a_hit():
    # Gold "c" is third; alternative "a" is first, so MR-Recall@1 = 1 while Recall@1 = 0.
    assert recall_at_k(RANKED, ["c"], 1) == 0.0
    assert multi_reference_recall_at_k(RANKED, ["c"], ["a"], 1) == 1.0
    assert multi_reference_recall_at_k(RANKED, ["c"], [], 1) == 0.0


def test_turn_accuracy_gives_all_values_in_one_pass():
    values = turn_accuracy(["x", "g2", "alt", "g1"], ["g1", "g2"], ["alt"], (1, 3))
    assert values == {
        "recall@1": 0.0,
        "hit@1": 0.0,
        "mr_recall@1": 0.0,
        "recall@3": 0.5,
        "hit@3": 1.0,
        "mr_recall@3": 1.0,
        "mrr": 0.5,
    }


def test_duplicate_ranked_items_are_not_counted_twice():
    assert recall_at_k(["g", "g", "g"], ["g", "h"], 3) == 0.5
    assert turn_accuracy(["g", "g", "g"], ["g", "h"], [], (3,))["recall@3"] == 0.5


item_ids = st.sampled_from([f"i{n}" for n in range(12)])


@given(
    ranked=st.lists(item_ids, max_size=15),
    gold=st.lists(item_ids, min_size=1, max_size=4),
    alternatives=st.lists(item_ids, max_size=4),
)
def test_accuracy_values_are_bounded_monotone_and_match_the_single_metric_functions(
    ranked, gold, alternatives
):
    ks = (1, 3, 5, 10)
    fast = turn_accuracy(ranked, gold, alternatives, ks)
    previous_recall = 0.0
    for k in ks:
        recall = recall_at_k(ranked, gold, k)
        assert 0.0 <= recall <= 1.0
        assert recall >= previous_recall
        previous_recall = recall
        assert fast[f"recall@{k}"] == pytest.approx(recall)
        assert fast[f"hit@{k}"] == hit_at_k(ranked, gold, k)
        mr = multi_reference_recall_at_k(ranked, gold, alternatives, k)
        assert fast[f"mr_recall@{k}"] == mr
        assert mr >= hit_at_k(ranked, gold, k)
    assert fast["mrr"] == pytest.approx(reciprocal_rank(ranked, gold))
    assert 0.0 <= fast["mrr"] <= 1.0


CATALOGUE = {
    item.id: item
    for item in [
        ItemInfo("r1", "restaurant", "Tampa"),
        ItemInfo("r2", "restaurant", "Tampa"),
        ItemInfo("r3", "restaurant", "Tampa"),
        ItemInfo("h1", "hotel", "Tampa"),
        ItemInfo("r9", "restaurant", "Reno"),
    ]
}


def test_closed_pool_is_the_candidate_list_without_duplicates():
    assert closed_pool(["r1", "r2", "r1"]) == ("r1", "r2")


def test_open_pool_holds_every_item_of_the_same_city_and_type_candidates_first():
    assert open_pool(["r2"], CATALOGUE) == ("r2", "r1", "r3")


def test_open_pool_covers_each_city_type_of_mixed_candidates():
    index = build_city_type_index(CATALOGUE.values())
    assert set(open_pool(["r1", "h1"], CATALOGUE, index)) == {"r1", "r2", "r3", "h1"}


def test_unknown_candidate_stays_in_the_open_pool_but_adds_no_group():
    assert open_pool(["ghost"], CATALOGUE) == ("ghost",)


def test_items_outside_the_pool_are_listed_in_rank_order():
    pool = closed_pool(["r1", "r2"])
    assert items_outside_pool(["r9", "r1", "h1"], pool) == ["r9", "h1"]
    assert out_of_pool_rate(["r9", "r1", "h1", "r2"], pool) == 0.5
    assert out_of_pool_rate([], pool) is None
