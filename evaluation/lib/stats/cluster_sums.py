"""The cluster interval of a mean from per-dialogue sums, as a run spread over workers stores it.

A run scored in chunks (docs/operations.md, "Runs over several workers") never holds all its
unit values in one process: its final task reads, per metric and dialogue, the sum of the
values, their count and the sum of their squares (one grouped query). That is everything
:func:`~evaluation.lib.stats.clustered.cluster_mean` uses — its jackknife-t interval needs only
each dialogue's sum and count — so the estimate and the CI are the same as from the unit values
(tested against it), and the standard deviation follows from the sums of squares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from evaluation.lib.stats.clustered import DEFAULT_CONFIDENCE, MEAN_METHOD, mean_intervals
from evaluation.lib.stats.results import Estimate

METHOD = MEAN_METHOD


def cluster_mean_from_sums(
    clusters: Sequence[str],
    sums: Sequence[float],
    counts: Sequence[int],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    bounds: tuple[float | None, float | None] | None = None,
) -> Estimate:
    """Unit-weighted mean with its jackknife-t cluster CI from per-cluster SUMS and COUNTS.

    CLUSTERS are the dialogue ids (any order). Clusters with no unit are ignored. ``bounds``:
    the metric's range, to cut the interval to.
    """
    params = {"confidence": confidence, "interval": "jackknife_t"}
    order = sorted((c, s, n) for c, s, n in zip(clusters, sums, counts, strict=True) if n > 0)
    if not order:
        return Estimate.undefined("no unit has a value", method=METHOD, params=params)
    sum_array = np.fromiter((row[1] for row in order), float, len(order))
    count_array = np.fromiter((row[2] for row in order), float, len(order))
    means, low, high, _ = mean_intervals(
        sum_array[None, :], count_array[None, :], confidence=confidence, bounds=bounds
    )
    units = int(count_array.sum())
    if len(order) < 2:
        params["ci_note"] = "one dialogue: no interval"
    return Estimate(float(means[0]), low[0], high[0],
                    n={"units": units, "clusters": len(order)}, method=METHOD, params=params)


def sample_std(total: float, squares: float, n: int) -> float | None:
    """Sample standard deviation (ddof = 1) of N values from their sum and sum of squares."""
    if n < 2:
        return None
    variance = (squares - total * total / n) / (n - 1)
    return math.sqrt(max(variance, 0.0))  # rounding can leave a tiny negative for equal values
