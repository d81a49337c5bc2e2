"""The cluster interval from per-dialogue sums (a run spread over workers) against the one from
unit values: the same mean, the same CI bounds, the same sample std."""

import math

import numpy as np
import pytest

from evaluation.lib.stats.cluster_sums import (
    cluster_mean_from_sums,
    cluster_sums,
    merge_cluster_sums,
    sample_std,
)
from evaluation.lib.stats.clustered import cluster_mean


def reduce(values, clusters):
    sums, counts = {}, {}
    for value, cluster in zip(values, clusters, strict=True):
        sums[cluster] = sums.get(cluster, 0.0) + value
        counts[cluster] = counts.get(cluster, 0) + 1
    names = list(sums)[::-1]  # any order: the function sorts
    return names, [sums[n] for n in names], [counts[n] for n in names]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_same_estimate_and_ci_as_from_unit_values(seed):
    rng = np.random.default_rng(seed)
    clusters = [f"dlg-{rng.integers(0, 300):04d}" for _ in range(2000)]
    values = rng.random(2000) * rng.integers(1, 5, 2000)
    expected = cluster_mean(values, clusters)
    got = cluster_mean_from_sums(*reduce(values, clusters))
    assert got.value == pytest.approx(expected.value, rel=1e-12)
    assert got.ci_low == pytest.approx(expected.ci_low, rel=1e-12)
    assert got.ci_high == pytest.approx(expected.ci_high, rel=1e-12)
    assert got.n == expected.n and got.method == expected.method
    assert sample_std(float(values.sum()), float((values ** 2).sum()), len(values)) == \
        pytest.approx(float(np.std(values, ddof=1)), rel=1e-9)


def test_by_hand_and_edge_cases():
    # Two dialogues: a = (1, 0) and b = (1,): mean 2/3 over three units. Without a: 1; without
    # b: 1/2; jackknife SE = sqrt(1/2 · (0.25² + 0.25²)) = 0.25, df 1 (two dialogues). Bounded
    # to [0, 1]: on the logit scale, logit(2/3) = ln 2 ± t × 0.25 / (2/3 · 1/3).
    estimate = cluster_mean_from_sums(["b", "a"], [1.0, 1.0], [1, 2], bounds=(0.0, 1.0))
    assert estimate.value == pytest.approx(2 / 3)
    half = 12.706204736174707 * 0.25
    spread = half / (2 / 9)
    expit = lambda z: 1 / (1 + math.exp(-z))  # noqa: E731
    assert estimate.ci_low == pytest.approx(expit(math.log(2) - spread), rel=1e-9)
    assert estimate.ci_high == pytest.approx(expit(math.log(2) + spread), rel=1e-9)
    assert estimate.method == "cluster_t_logit_mean"
    assert cluster_mean_from_sums(["b", "a"], [1.0, 1.0], [1, 2]).ci_low == pytest.approx(
        2 / 3 - half)
    assert cluster_mean_from_sums([], [], []).value is None
    assert cluster_mean_from_sums(["a"], [0.0], [0]).value is None
    assert sample_std(1.0, 1.0, 1) is None
    assert sample_std(2.0, 2.0, 2) == 0.0  # equal values, no negative variance from rounding
    assert sample_std(1.0, 1.0, 2) == pytest.approx(np.std([0, 1], ddof=1))


def test_cluster_sums_by_hand_skip_undefined_values():
    values = [("mrr", "d1", 1.0), ("mrr", "d1", 0.5), ("mrr", "d2", None), ("mrr", "d2", 0.25),
              ("recall", "d1", None)]
    assert cluster_sums(values) == {"mrr": (["d1", "d2"], [1.5, 0.25], [2, 1], 1.3125)}


def test_merging_chunks_adds_a_dialogue_met_twice_and_keeps_the_others():
    a = {"mrr": (["d1", "d2"], [1.5, 0.25], [2, 1], 1.3125)}
    b = {"mrr": (["d2", "d3"], [0.75, 0.0], [1, 2], 0.5625), "cd": (["d3"], [0.1], [1], 0.01)}
    merged = merge_cluster_sums([a, b])
    assert merged["mrr"] == (["d1", "d2", "d3"], [1.5, 1.0, 0.0], [2, 2, 2], 1.875)
    assert merged["cd"] == (["d3"], [0.1], [1], 0.01)
    assert merge_cluster_sums([]) == {}


@pytest.mark.parametrize("seed", [0, 1])
def test_ascending_id_arrays_are_taken_as_they_are_with_the_same_estimate(seed):
    rng = np.random.default_rng(seed)
    ids = np.array(sorted(f"d{i:04d}" for i in rng.choice(9000, 400, replace=False)))
    sums, counts = rng.normal(size=400), rng.integers(0, 5, 400).astype(float)
    as_they_are = cluster_mean_from_sums(ids, sums, counts, bounds=(-10.0, 10.0))
    order = rng.permutation(400)
    sorted_here = cluster_mean_from_sums(ids[order].tolist(), sums[order], counts[order],
                                         bounds=(-10.0, 10.0))
    assert (as_they_are.value, as_they_are.ci_low, as_they_are.ci_high, as_they_are.n) == \
        (sorted_here.value, sorted_here.ci_low, sorted_here.ci_high, sorted_here.n)
