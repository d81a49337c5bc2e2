"""The bootstrap from per-dialogue sums (a run spread over workers) against the one from unit
values: the same mean, the same CI bounds (the same draws), the same sample std."""

import numpy as np
import pytest

from evaluation.lib.stats.bootstrap import cluster_bootstrap_mean
from evaluation.lib.stats.cluster_sums import (
    ResampleCache,
    cluster_bootstrap_mean_from_sums,
    sample_std,
)


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
    expected = cluster_bootstrap_mean(values, clusters, n_resamples=500, seed=7)
    got = cluster_bootstrap_mean_from_sums(*reduce(values, clusters), n_resamples=500, seed=7,
                                           cache=ResampleCache(500, 7))
    assert got.value == pytest.approx(expected.value, rel=1e-12)
    assert got.ci_low == pytest.approx(expected.ci_low, rel=1e-12)
    assert got.ci_high == pytest.approx(expected.ci_high, rel=1e-12)
    assert got.n == expected.n and got.method == expected.method
    assert sample_std(float(values.sum()), float((values ** 2).sum()), len(values)) == \
        pytest.approx(float(np.std(values, ddof=1)), rel=1e-9)


def test_by_hand_and_edge_cases():
    # Two dialogues: (1, 0) and (1,): mean 2/3 over three units; every CI bound is a replicate
    # mean of some draw, so it lies in [0.5, 1].
    estimate = cluster_bootstrap_mean_from_sums(["b", "a"], [1.0, 1.0], [1, 2])
    assert estimate.value == pytest.approx(2 / 3)
    assert 0.5 <= estimate.ci_low <= estimate.value <= estimate.ci_high <= 1.0
    assert cluster_bootstrap_mean_from_sums([], [], []).value is None
    assert cluster_bootstrap_mean_from_sums(["a"], [0.0], [0]).value is None
    assert sample_std(1.0, 1.0, 1) is None
    assert sample_std(2.0, 2.0, 2) == 0.0  # equal values, no negative variance from rounding
    assert sample_std(1.0, 1.0, 2) == pytest.approx(np.std([0, 1], ddof=1))
