"""The project's one bootstrap (spec: statistics.md "Comparing systems"; metrics.md §A
"Statistics reported with every table"; Trace appendix L, Tables 20–21).

Turns inside one dialogue are correlated, so leaderboard uncertainty comes from resampling whole
dialogues (clusters) with replacement, B = 1000 times with a fixed seed, and reading the 2.5 and
97.5 percentiles of the replicate means (percentile method, numpy's linear interpolation).

- ``cluster_bootstrap_mean``: CI of the mean of unit values grouped by dialogue.
- ``paired_cluster_bootstrap_difference``: CI of mean(A) − mean(B) over the dialogues both systems
  answered, using the same dialogue draws for both; significant when the CI excludes 0.
- ``rank_systems`` / ``rank_systems_by_metric``: every system's mean with CI and a tie-aware rank,
  1 + the number of systems significantly better, for a whole leaderboard at once (vectorized).
- ``percentile_bootstrap``: the generic unit (or cluster) bootstrap of any statistic callable, used
  for CIs of Krippendorff's alpha and of correlations.

The dialogue draws depend only on the seed and on the sorted set of dialogue ids, so every system
evaluated on the same dialogues sees the same resamples: the comparison is paired by construction.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evaluation.lib.stats.results import Estimate, RankedSystem, finite_or_none

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 42
DEFAULT_CONFIDENCE = 0.95


# --- shared helpers -----------------------------------------------------------------------


def encode_labels(labels: Sequence[Hashable]) -> tuple[np.ndarray, list]:
    """Integer codes for ``labels`` and the sorted list of distinct labels they index."""
    array = np.asarray(labels)
    if array.dtype.kind in "iufUS" and array.ndim == 1:
        uniques, codes = np.unique(array, return_inverse=True)
        return codes.astype(np.int64), uniques.tolist()
    # Mixed or object labels: sort by (type name, repr) so the order is still deterministic.
    distinct = sorted(set(labels), key=lambda label: (type(label).__name__, repr(label)))
    index = {label: position for position, label in enumerate(distinct)}
    return np.fromiter((index[label] for label in labels), np.int64, len(labels)), distinct


def resample_counts(n_clusters: int, *, n_resamples: int, seed: int) -> np.ndarray:
    """How often each cluster is drawn in each replicate: an ``(n_resamples, n_clusters)`` array.

    Each row is one bootstrap sample of ``n_clusters`` clusters drawn with replacement.
    """
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_clusters, size=(n_resamples, n_clusters))
    offsets = np.arange(n_resamples)[:, None] * n_clusters
    counts = np.bincount((draws + offsets).ravel(), minlength=n_resamples * n_clusters)
    return counts.reshape(n_resamples, n_clusters)


def percentiles(samples: np.ndarray, quantiles: Sequence[float], axis: int = 0) -> np.ndarray:
    """Linear-interpolation percentiles like ``np.quantile(samples, quantiles, axis=axis)``.

    Uses partial sorting along a contiguous last axis, which is several times faster than
    ``np.quantile`` for the few percentiles a CI needs.
    """
    samples = np.asarray(samples, dtype=float)
    if np.isnan(samples).any():
        with warnings.catch_warnings():  # an all-NaN column is simply NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanquantile(samples, quantiles, axis=axis)
    samples = np.ascontiguousarray(np.moveaxis(samples, axis, -1))
    size = samples.shape[-1]
    positions = np.asarray(quantiles, dtype=float) * (size - 1)
    below = np.floor(positions).astype(int)
    above = np.minimum(below + 1, size - 1)
    part = np.partition(samples, np.unique(np.concatenate([below, above])), axis=-1)
    low_values, high_values = part[..., below], part[..., above]
    result = low_values + (high_values - low_values) * (positions - below)
    return np.moveaxis(result, -1, 0)


def percentile_interval(
    samples: Sequence[float] | np.ndarray, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[float | None, float | None]:
    """The central ``confidence`` interval of the finite ``samples`` ((None, None) if none)."""
    finite = np.asarray(samples, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        return None, None
    tail = (1.0 - confidence) / 2.0
    low, high = percentiles(finite, [tail, 1.0 - tail])
    return finite_or_none(low), finite_or_none(high)


def _bootstrap_params(n_resamples: int, seed: int, confidence: float, **extra) -> dict:
    return {"n_resamples": n_resamples, "seed": seed, "confidence": confidence, **extra}


# --- (a) cluster bootstrap of a mean -------------------------------------------------------


def _finite_rows(values: Sequence[float], clusters: Sequence[Hashable]):
    array = np.asarray(values, dtype=float)
    if len(array) != len(clusters):
        raise ValueError("values and clusters must have the same length")
    keep = np.isfinite(array)
    kept_clusters = [cluster for cluster, ok in zip(clusters, keep, strict=True) if ok]
    return array[keep], kept_clusters


def cluster_sums(values: np.ndarray, cluster_codes: np.ndarray, n_clusters: int):
    """Per-cluster sums and unit counts."""
    sums = np.bincount(cluster_codes, weights=values, minlength=n_clusters)
    counts = np.bincount(cluster_codes, minlength=n_clusters).astype(float)
    return sums, counts


def cluster_replicate_means(sums: np.ndarray, counts: np.ndarray, weights: np.ndarray):
    """Unit-weighted mean of each replicate: Σ w·sums / Σ w·counts (NaN when a replicate is empty).

    ``sums`` and ``counts`` have clusters on their last axis; ``weights`` is (B, clusters).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights @ sums.T) / (weights @ counts.T)


def cluster_bootstrap_mean(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Estimate:
    """Mean of unit values with a CI from resampling clusters (dialogues) with replacement.

    Missing values (None/NaN) are left out. n counts units and clusters (dialogues).
    """
    method = "cluster_bootstrap_mean"
    params = _bootstrap_params(n_resamples, seed, confidence)
    array, kept_clusters = _finite_rows(values, clusters)
    if array.size == 0:
        return Estimate.undefined("no unit has a value", method=method, params=params)
    codes, distinct = encode_labels(kept_clusters)
    n = {"units": int(array.size), "clusters": len(distinct)}
    sums, counts = cluster_sums(array, codes, len(distinct))
    weights = resample_counts(len(distinct), n_resamples=n_resamples, seed=seed)
    replicates = cluster_replicate_means(sums, counts, weights)
    low, high = percentile_interval(replicates, confidence)
    return Estimate(float(array.mean()), low, high, n=n, method=method, params=params)


# --- (b) paired difference between two systems ------------------------------------------


def paired_cluster_bootstrap_difference(
    values_a: Sequence[float],
    clusters_a: Sequence[Hashable],
    values_b: Sequence[float],
    clusters_b: Sequence[Hashable],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Estimate:
    """mean(A) − mean(B) over the dialogues both systems have values on, with a paired CI.

    Each replicate draws dialogues with replacement once and recomputes both unit-weighted means
    on that same draw. The difference is significant when ``estimate.ci_excludes(0)``.
    """
    method = "paired_cluster_bootstrap_difference"
    params = _bootstrap_params(n_resamples, seed, confidence)
    array_a, kept_a = _finite_rows(values_a, clusters_a)
    array_b, kept_b = _finite_rows(values_b, clusters_b)
    shared = set(kept_a) & set(kept_b)
    n = {
        "shared_clusters": len(shared),
        "clusters_only_a": len(set(kept_a) - shared),
        "clusters_only_b": len(set(kept_b) - shared),
    }
    if not shared:
        return Estimate.undefined(
            "the two systems share no dialogue with values", method=method, n=n, params=params
        )
    # Same cluster order as every other function here, so the same seed gives the same draws.
    _, distinct = encode_labels(list(shared))
    index = {cluster: position for position, cluster in enumerate(distinct)}
    weights = resample_counts(len(distinct), n_resamples=n_resamples, seed=seed)
    means, replicates = [], []
    for array, kept in ((array_a, kept_a), (array_b, kept_b)):
        mask = np.fromiter((cluster in shared for cluster in kept), bool, len(kept))
        cluster_codes = np.fromiter(
            (index[cluster] for cluster in kept if cluster in shared), np.int64, int(mask.sum())
        )
        sums, counts = cluster_sums(array[mask], cluster_codes, len(distinct))
        means.append(sums.sum() / counts.sum())
        replicates.append(cluster_replicate_means(sums, counts, weights))
    n["units_a"], n["units_b"] = (int(c) for c in (len(array_a), len(array_b)))
    low, high = percentile_interval(replicates[0] - replicates[1], confidence)
    params.update(mean_a=float(means[0]), mean_b=float(means[1]))
    return Estimate(float(means[0] - means[1]), low, high, n=n, method=method, params=params)


# --- (c) tie-aware ranks for a whole leaderboard ----------------------------------------


def significantly_better_matrix(
    replicates: np.ndarray,
    *,
    higher_is_better: bool = True,
    confidence: float = DEFAULT_CONFIDENCE,
) -> np.ndarray:
    """``better[i, j]`` is True when system j is significantly better than system i.

    ``replicates`` is (B, S): one bootstrap mean per replicate and system, all systems on the same
    draws. j beats i when the percentile CI of (j − i) lies entirely on the better side of 0.
    """
    replicates = np.asarray(replicates, dtype=float)
    n_systems = replicates.shape[1]
    tail = (1.0 - confidence) / 2.0
    better = np.zeros((n_systems, n_systems), dtype=bool)
    # Pair (i, j > i) once: the CI of i − j is the mirror image of the CI of j − i. One row at a
    # time keeps memory at B × S instead of B × S × S.
    for i in range(n_systems - 1):
        differences = replicates[:, i + 1 :] - replicates[:, i : i + 1]  # j − i
        j_above_i = lower_bound_above_zero(differences, tail)
        j_below_i = lower_bound_above_zero(-differences, tail)  # upper bound below zero
        better[i, i + 1 :] = j_above_i if higher_is_better else j_below_i
        better[i + 1 :, i] = j_below_i if higher_is_better else j_above_i
    return better


def lower_bound_above_zero(samples: np.ndarray, tail: float) -> np.ndarray:
    """Per column, whether the ``tail`` percentile (as ``percentiles`` computes it) is > 0.

    Counting the non-positive samples settles almost every column without sorting: with
    k = floor(tail·(B − 1)), the percentile lies between the k-th and (k+1)-th order statistics,
    which are then the largest non-positive and the smallest positive sample.
    """
    samples = np.asarray(samples, dtype=float)
    if np.isnan(samples).any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanquantile(samples, tail, axis=0) > 0
    position = tail * (samples.shape[0] - 1)
    below = int(np.floor(position))
    fraction = position - below
    non_positive = samples <= 0
    count = non_positive.sum(axis=0)
    result = count <= below
    boundary = count == below + 1
    if boundary.any():
        edge = samples[:, boundary]
        largest_non_positive = np.where(non_positive[:, boundary], edge, -np.inf).max(axis=0)
        smallest_positive = np.where(non_positive[:, boundary], np.inf, edge).min(axis=0)
        if fraction > 0:
            value = largest_non_positive + (smallest_positive - largest_non_positive) * fraction
            result[boundary] = value > 0
    return result


def tie_aware_ranks(better: np.ndarray) -> np.ndarray:
    """Rank = 1 + number of systems significantly better (ties share a rank)."""
    return 1 + np.asarray(better, dtype=bool).sum(axis=1)


def _metric_tables(values, systems, clusters):
    system_codes, system_names = encode_labels(systems)
    cluster_codes, cluster_names = encode_labels(clusters)
    n_systems, n_clusters = len(system_names), len(cluster_names)
    cell = system_codes * n_clusters + cluster_codes
    size = n_systems * n_clusters
    tables = {}
    for metric, column in values.items():
        column = np.asarray(column, dtype=float)
        if len(column) != len(cell):
            raise ValueError(f"metric {metric!r}: values and systems differ in length")
        finite = np.isfinite(column)
        sums = np.bincount(cell[finite], weights=column[finite], minlength=size)
        counts = np.bincount(cell[finite], minlength=size).astype(float)
        shape = (n_systems, n_clusters)
        tables[metric] = (sums.reshape(shape), counts.reshape(shape))
    return system_names, n_clusters, tables


def rank_systems_by_metric(
    values: Mapping[str, Sequence[float]],
    systems: Sequence[Hashable],
    clusters: Sequence[Hashable],
    *,
    higher_is_better: Mapping[str, bool] | bool = True,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> dict[str, list[RankedSystem]]:
    """Leaderboard means, cluster-bootstrap CIs and tie-aware ranks for many metrics at once.

    ``values[metric][row]``, ``systems[row]`` and ``clusters[row]`` describe one unit (e.g. a system
    turn) in long format; None/NaN means the metric has no value for that unit. Every system and
    metric uses the same dialogue draws. When all systems answered the same dialogues this equals
    the paired bootstrap on shared dialogues; a system missing a dialogue simply has fewer units.
    """
    if len(systems) != len(clusters):
        raise ValueError("systems and clusters must have the same length")
    system_names, n_clusters, tables = _metric_tables(values, systems, clusters)
    weights = resample_counts(n_clusters, n_resamples=n_resamples, seed=seed).astype(float)
    params = _bootstrap_params(n_resamples, seed, confidence, resampled="clusters")
    leaderboards = {}
    for metric, (sums, counts) in tables.items():
        direction = (
            higher_is_better if isinstance(higher_is_better, bool) else higher_is_better[metric]
        )
        leaderboards[metric] = _rank_one_metric(
            system_names, sums, counts, weights, direction, confidence, params
        )
    return leaderboards


def _rank_one_metric(system_names, sums, counts, weights, higher_is_better, confidence, params):
    present = counts.sum(axis=1) > 0
    names = [name for name, ok in zip(system_names, present, strict=True) if ok]
    sums, counts = sums[present], counts[present]
    replicates = cluster_replicate_means(sums, counts, weights)
    better = significantly_better_matrix(
        replicates, higher_is_better=higher_is_better, confidence=confidence
    )
    ranks = tie_aware_ranks(better)
    tail = (1.0 - confidence) / 2.0
    bounds = percentiles(replicates, [tail, 1.0 - tail], axis=0) if len(names) else None
    rows = []
    for i, name in enumerate(names):
        estimate = Estimate(
            float(sums[i].sum() / counts[i].sum()),
            bounds[0, i],
            bounds[1, i],
            n={"units": int(counts[i].sum()), "clusters": int((counts[i] > 0).sum())},
            method="cluster_bootstrap_mean",
            params={**params, "higher_is_better": higher_is_better},
        )
        winners = tuple(str(names[j]) for j in np.flatnonzero(better[i]))
        rows.append(RankedSystem(str(name), estimate, int(ranks[i]), winners))
    rows.sort(
        key=lambda row: (
            row.rank,
            -row.estimate.value if higher_is_better else row.estimate.value,
            row.system,
        )
    )
    return rows


def rank_systems(
    values: Sequence[float],
    systems: Sequence[Hashable],
    clusters: Sequence[Hashable],
    *,
    higher_is_better: bool = True,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[RankedSystem]:
    """One metric's leaderboard: mean, CI and tie-aware rank per system, best first."""
    return rank_systems_by_metric(
        {"metric": values},
        systems,
        clusters,
        higher_is_better=higher_is_better,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
    )["metric"]


# --- (d) generic percentile bootstrap -------------------------------------------------------


@dataclass(frozen=True)
class BootstrapInterval:
    low: float | None
    high: float | None
    valid_resamples: int
    n_resamples: int


def percentile_bootstrap(
    statistic: Callable[[np.ndarray], float | None],
    n_units: int,
    *,
    clusters: Sequence[Hashable] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> BootstrapInterval:
    """Percentile CI of ``statistic(indices)`` over resamples of units 0..n_units−1.

    ``statistic`` receives an integer index array (units drawn with replacement) and returns a
    number, or None when it is undefined on that resample (such resamples are skipped and counted).
    With ``clusters`` (one label per unit) whole clusters are drawn and their units concatenated.
    """
    rng = np.random.default_rng(seed)
    if clusters is None:
        groups = None
        draws = rng.integers(0, n_units, size=(n_resamples, n_units)) if n_units else None
    else:
        codes, distinct = encode_labels(clusters)
        order = np.argsort(codes, kind="stable")
        groups = np.split(order, np.cumsum(np.bincount(codes, minlength=len(distinct)))[:-1])
        draws = rng.integers(0, len(distinct), size=(n_resamples, len(distinct)))
    if draws is None:
        return BootstrapInterval(None, None, 0, n_resamples)
    samples = []
    for row in draws:
        indices = row if groups is None else np.concatenate([groups[g] for g in row])
        value = finite_or_none(statistic(indices))
        if value is not None:
            samples.append(value)
    low, high = percentile_interval(samples, confidence)
    return BootstrapInterval(low, high, len(samples), n_resamples)


def attach_bootstrap_ci(
    estimate: Estimate,
    statistic: Callable[[np.ndarray], float | None],
    n_units: int,
    *,
    clusters: Sequence[Hashable] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Estimate:
    """``estimate`` plus a percentile-bootstrap CI of ``statistic`` (unchanged if undefined)."""
    if not estimate.is_defined:
        return estimate
    interval = percentile_bootstrap(
        statistic,
        n_units,
        clusters=clusters,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
    )
    return estimate.with_ci(
        interval.low,
        interval.high,
        **_bootstrap_params(
            n_resamples,
            seed,
            confidence,
            resampled="clusters" if clusters is not None else "units",
            valid_resamples=interval.valid_resamples,
        ),
    )
