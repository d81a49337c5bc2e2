"""The generic percentile bootstrap (alpha's CI) and its resampling helpers."""

import numpy as np

from evaluation.lib.stats.bootstrap import (
    percentile_bootstrap,
    percentile_interval,
    resample_counts,
)


def test_resample_counts_draw_as_many_clusters_as_there_are_and_depend_on_the_seed():
    counts = resample_counts(7, n_resamples=50, seed=3)
    assert counts.shape == (50, 7)
    assert (counts.sum(axis=1) == 7).all()
    assert (counts == resample_counts(7, n_resamples=50, seed=3)).all()
    assert not (counts == resample_counts(7, n_resamples=50, seed=4)).all()


def test_percentile_bootstrap_skips_undefined_resamples():
    data = np.array([1.0, 2.0, 3.0, 4.0])

    def mean_unless_first_unit_drawn(indices):
        return None if 0 in indices else float(data[indices].mean())

    interval = percentile_bootstrap(mean_unless_first_unit_drawn, 4, n_resamples=200)
    assert 0 < interval.valid_resamples < 200
    assert 2.0 <= interval.low <= interval.high <= 4.0


def test_percentile_bootstrap_can_resample_clusters():
    seen_sizes = set()

    def size(indices):
        seen_sizes.add(len(indices))
        return float(len(indices))

    percentile_bootstrap(size, 3, clusters=["a", "a", "b"], n_resamples=50)
    assert seen_sizes <= {2, 3, 4}


def test_percentile_interval_matches_numpy_and_handles_empty_samples():
    samples = np.random.default_rng(1).normal(size=999)
    low, high = percentile_interval(samples, 0.9)
    assert (low, high) == tuple(np.quantile(samples, [0.05, 0.95]))
    assert percentile_interval([], 0.95) == (None, None)
