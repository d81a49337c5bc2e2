"""The dialogues two systems share, found in place when both list the same ascending labels (a
leaderboard's stored tables), are exactly what intersecting the labels gives."""

import numpy as np
import pytest

from evaluation.lib.stats import clustered
from evaluation.lib.stats.clustered import shared_cluster_sums


@pytest.mark.parametrize("seed", range(5))
def test_in_place_and_intersected_give_the_same_shared_sums(seed):
    rng = np.random.default_rng(seed)
    labels = np.array(sorted(f"d{i:04d}" for i in rng.choice(5000, 300, replace=False)))
    sums_a, sums_b = rng.normal(size=300), rng.normal(size=300)
    counts_a = rng.integers(0, 4, 300).astype(float)  # 0: no value on that dialogue
    counts_b = rng.integers(0, 4, 300).astype(float)
    assert clustered._same_ascending_labels(labels, labels.copy())
    in_place = shared_cluster_sums(labels, sums_a, counts_a, labels.copy(), sums_b, counts_b)
    order = rng.permutation(300)  # B's labels shuffled: not the same order, so intersected
    assert not clustered._same_ascending_labels(labels, labels[order])
    intersected = shared_cluster_sums(labels, sums_a, counts_a,
                                      labels[order], sums_b[order], counts_b[order])
    assert in_place[0] == intersected[0] and in_place[3] == intersected[3]
    assert np.array_equal(in_place[1], intersected[1])
    assert np.array_equal(in_place[2], intersected[2])
    assert in_place[3]["clusters_only_a"] > 0 and in_place[3]["clusters_only_b"] > 0


def test_labels_out_of_order_or_repeated_are_never_taken_in_place():
    assert not clustered._same_ascending_labels(np.array(["b", "a"]), np.array(["b", "a"]))
    assert not clustered._same_ascending_labels(np.array(["a", "a"]), np.array(["a", "a"]))
    assert not clustered._same_ascending_labels(np.array([1, 2]), np.array([1, 2]))
