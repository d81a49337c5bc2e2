"""The cluster interval of a mean from per-dialogue sums, as a run spread over workers stores it.

A run scored in chunks (docs/operations.md, "Runs over several workers") never holds all its
unit values in one process: each chunk task reduces its own values, per metric and dialogue, to
the sum of the values, their count and the sum of their squares (`cluster_sums`), and the final
task merges the chunks' reductions (`merge_cluster_sums`; a chunk holds whole dialogues). That
is everything
:func:`~evaluation.lib.stats.clustered.cluster_mean` uses — its jackknife-t interval needs only
each dialogue's sum and count — so the estimate and the CI are the same as from the unit values
(tested against it), and the standard deviation follows from the sums of squares.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from evaluation.lib.stats.clustered import (
    DEFAULT_CONFIDENCE,
    MEAN_METHOD,
    ascending_string_labels,
    mean_intervals,
    mean_method,
)
from evaluation.lib.stats.results import Estimate

METHOD = MEAN_METHOD

#: Per metric: (dialogue ids, the sum of the values on each, their count, the sum of the
#: squares of all the metric's values). Lists, so that it is stored as JSON as it is.
ClusterSums = dict[str, tuple[list[str], list[float], list[int], float]]


def cluster_sums(values: Iterable[tuple[str, str, float | None]]) -> ClusterSums:
    """Reduce (metric, dialogue id, value) triples; a None value (undefined) counts nowhere.

    The same figures as the grouped query `GROUP BY metric, dialogue` over stored unit values.
    """
    return merge_cluster_sums(
        {metric: ([dialogue_id], [value], [1], value * value)}
        for metric, dialogue_id, value in values if value is not None)


def merge_cluster_sums(parts: Iterable[ClusterSums]) -> ClusterSums:
    """One reduction from several (e.g. a run's chunks); a dialogue in two parts is added up.

    A run's chunks hold disjoint dialogues, so their lists are only concatenated (the final
    task of a 10,000-dialogue run merges 530,000 entries)."""
    joined: dict[str, tuple[list, list, list, list[float]]] = {}
    for part in parts:
        for metric, (clusters, sums, counts, square_sum) in part.items():
            c, s, n, q = joined.setdefault(metric, ([], [], [], [0.0]))
            c.extend(clusters)
            s.extend(sums)
            n.extend(counts)
            q[0] += square_sum
    return {metric: (*_added_up(c, s, n), q[0]) for metric, (c, s, n, q) in joined.items()}


def _added_up(clusters: list[str], sums: list[float], counts: list[int]):
    if len(set(clusters)) == len(clusters):
        return clusters, sums, counts
    totals: dict[str, list] = {}
    for cluster, total, n in zip(clusters, sums, counts, strict=True):
        entry = totals.setdefault(cluster, [0.0, 0])
        entry[0] += total
        entry[1] += n
    return list(totals), [e[0] for e in totals.values()], [e[1] for e in totals.values()]


def cluster_mean_from_sums(
    clusters: Sequence[str],
    sums: Sequence[float],
    counts: Sequence[int],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    bounds: tuple[float | None, float | None] | None = None,
) -> Estimate:
    """Unit-weighted mean with its jackknife-t cluster CI from per-cluster SUMS and COUNTS.

    CLUSTERS are the dialogue ids (any order: the sums are taken in the ids' order, so the
    result does not depend on it). Clusters with no unit are ignored. ``bounds``: the metric's
    range (both sides finite: the logit-scale interval, method ``cluster_t_logit_mean``).
    """
    method = mean_method(bounds)
    params = {"confidence": confidence,
              "interval": "jackknife_t" if method == METHOD else "jackknife_t_logit"}
    sum_array, count_array = _in_cluster_order(clusters, sums, counts)
    if not len(count_array):
        return Estimate.undefined("no unit has a value", method=method, params=params)
    means, low, high, _ = mean_intervals(
        sum_array[None, :], count_array[None, :], confidence=confidence, bounds=bounds
    )
    units = int(count_array.sum())
    if len(count_array) < 2:
        params["ci_note"] = "one dialogue: no interval"
    return Estimate(float(means[0]), low[0], high[0],
                    n={"units": units, "clusters": len(count_array)}, method=method,
                    params=params)


def _in_cluster_order(clusters, sums, counts) -> tuple[np.ndarray, np.ndarray]:
    """The sums and counts of the clusters with a unit, ordered by cluster id. Ids given as
    a string array already in ascending order (a leaderboard's stored table) are taken as they
    are, without a sort in Python (a system page does this for every metric and tier)."""
    labels = np.asarray(clusters) if len(clusters) else np.array([], dtype=str)
    if ascending_string_labels(labels):
        count_array = np.asarray(counts, dtype=float)
        keep = count_array > 0
        return np.asarray(sums, dtype=float)[keep], count_array[keep]
    order = sorted((c, s, n) for c, s, n in zip(clusters, sums, counts, strict=True) if n > 0)
    return (np.fromiter((row[1] for row in order), float, len(order)),
            np.fromiter((row[2] for row in order), float, len(order)))


def sample_std(total: float, squares: float, n: int) -> float | None:
    """Sample standard deviation (ddof = 1) of N values from their sum and sum of squares."""
    if n < 2:
        return None
    variance = (squares - total * total / n) / (n - 1)
    return math.sqrt(max(variance, 0.0))  # rounding can leave a tiny negative for equal values
