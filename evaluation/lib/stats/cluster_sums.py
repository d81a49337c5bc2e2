"""The cluster bootstrap of a mean from per-dialogue sums, as a run spread over workers stores it.

A run scored in chunks (docs/operations.md, "Runs over several workers") never holds all its
unit values in one process: its final task reads, per metric and dialogue, the sum of the
values, their count and the sum of their squares (one grouped query). That is everything
:func:`~evaluation.lib.stats.bootstrap.cluster_bootstrap_mean` uses — it reduces the units to
the same per-cluster sums before resampling dialogues — so the estimate, the CI and the draws
are the same as from the unit values (tested against it), and the standard deviation follows
from the sums of squares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from evaluation.lib.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    cluster_replicate_means,
    percentile_interval,
    resample_counts,
)
from evaluation.lib.stats.results import Estimate

METHOD = "cluster_bootstrap_mean"


class ResampleCache:
    """The (B, clusters) draw counts depend only on B, the seed and the number of clusters, so
    the metrics of one run (which mostly share their dialogues) draw them once."""

    def __init__(self, n_resamples: int, seed: int) -> None:
        self.n_resamples, self.seed = n_resamples, seed
        self._weights: dict[int, np.ndarray] = {}

    def weights(self, n_clusters: int) -> np.ndarray:
        if n_clusters not in self._weights:
            self._weights[n_clusters] = resample_counts(
                n_clusters, n_resamples=self.n_resamples, seed=self.seed)
        return self._weights[n_clusters]


def cluster_bootstrap_mean_from_sums(
    clusters: Sequence[str],
    sums: Sequence[float],
    counts: Sequence[int],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    cache: ResampleCache | None = None,
) -> Estimate:
    """Unit-weighted mean with its cluster-bootstrap CI from per-cluster SUMS and COUNTS.

    CLUSTERS are the dialogue ids (any order: they are sorted here, as the unit-value version
    sorts them, so the same seed gives the same draws). Clusters with no unit are ignored.
    """
    params = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    order = sorted((c, s, n) for c, s, n in zip(clusters, sums, counts, strict=True) if n > 0)
    if not order:
        return Estimate.undefined("no unit has a value", method=METHOD, params=params)
    sum_array = np.fromiter((row[1] for row in order), float, len(order))
    count_array = np.fromiter((row[2] for row in order), float, len(order))
    if cache is None or (cache.n_resamples, cache.seed) != (n_resamples, seed):
        cache = ResampleCache(n_resamples, seed)
    replicates = cluster_replicate_means(sum_array, count_array, cache.weights(len(order)))
    low, high = percentile_interval(replicates, confidence)
    units = int(count_array.sum())
    return Estimate(float(sum_array.sum() / units), low, high,
                    n={"units": units, "clusters": len(order)}, method=METHOD, params=params)


def sample_std(total: float, squares: float, n: int) -> float | None:
    """Sample standard deviation (ddof = 1) of N values from their sum and sum of squares."""
    if n < 2:
        return None
    variance = (squares - total * total / n) / (n - 1)
    return math.sqrt(max(variance, 0.0))  # rounding can leave a tiny negative for equal values
