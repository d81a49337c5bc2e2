"""Calibrated inference on dialogue-clustered means (spec: statistics.md "Comparing systems").

Turns of one dialogue are correlated, so the independent units are dialogues (clusters). A plain
percentile cluster bootstrap is too narrow with few dialogues (it covers ~0.89 at 10 dialogues and
its paired test rejects ~10% of true nulls), so every interval and test here is a *studentized
cluster interval*:

    estimate ± t_{df, 0.975} × SE_jackknife,     SE² = (G − 1)/G × Σ_g (θ_(−g) − θ̄_(·))²

θ_(−g) is the statistic without dialogue g (the delete-one-cluster jackknife, "CR3" in the
cluster-robust literature) and G the number of dialogues that carry values. df is G − 1 when the
dialogues are equally long; unequal lengths give fewer effective clusters (Satterthwaite /
Bell–McCaffrey, ``effective_df``). For a difference of two systems' means on dialogues with
equally many units per system this is exactly the paired t-test on per-dialogue means; with
unequal dialogue lengths the jackknife is its ratio-estimator generalisation, slightly
conservative where the sandwich ("CR1") variance is liberal.
`manage.py bench_calibration` measures the coverage and test sizes these functions give.

Many comparisons: a leaderboard makes S(S − 1)/2 pairwise tests, so "significantly better" is
decided by Holm's step-down procedure over all pairs on the page (family-wise error ≤ 5% under
any dependence between the tests); a rank is 1 + the number of systems significantly better.
Pure numpy/scipy: nothing here imports Django.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence

import numpy as np
from scipy import special, stats

from evaluation.lib.stats.results import Estimate, RankedSystem

DEFAULT_CONFIDENCE = 0.95
MEAN_METHOD = "cluster_t_mean"
# The mean of a metric bounded on both sides (e.g. a share in [0, 1]): the same jackknife-t
# interval built on the logit scale of the range, so it never leaves the range (issue 30).
BOUNDED_MEAN_METHOD = "cluster_t_logit_mean"
DIFFERENCE_METHOD = "cluster_t_difference"
RANK_METHOD = "holm_tie_aware_rank"
MULTIPLICITY = "holm"


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


def t_quantile(df: np.ndarray | float, confidence: float = DEFAULT_CONFIDENCE) -> np.ndarray:
    """The two-sided ``confidence`` quantile of Student's t with ``df`` degrees of freedom."""
    return stats.t.ppf(0.5 + confidence / 2.0, df)


# --- leave-one-dialogue-out means ------------------------------------------------------------


def leave_one_out_deviations(sums: np.ndarray, counts: np.ndarray):
    """Means and the jackknife deviations of a unit-weighted mean per row (system).

    ``sums``/``counts`` are (S, G): each system's sum and number of unit values per dialogue.
    Returns ``(means, deviations, present)``: ``deviations[s, g]`` is θ_(−g) − θ for system s
    (0 where the system has no unit in g, since leaving g out changes nothing), ``present`` marks
    the dialogues a system has units in. A system with a single dialogue gets NaN deviations.
    """
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    totals, sizes = sums.sum(axis=1), counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = totals / sizes
        # Centred on the system's mean first: θ_(−g) − θ = (n_g θ − s_g) / (N − n_g).
        deviations = (counts * means[:, None] - sums) / (sizes[:, None] - counts)
    present = counts > 0
    deviations = np.where(present, deviations, 0.0)
    return means, deviations, present


def variance_shares(counts: np.ndarray) -> np.ndarray:
    """Each dialogue's expected share of a unit-weighted mean's variance, per system (row).

    A dialogue with n_g of the system's N units weighs w_g = n_g / N in the mean, and its own
    mean varies like σ_b² + σ_w² / n_g; with between- and within-dialogue variance taken equal
    (intra-dialogue correlation 0.5) its share is q_g ∝ w_g² (1 + 1/n_g). Used for the degrees of
    freedom only (``effective_df``): the variance itself is the jackknife's, from the data.
    """
    counts = np.asarray(counts, dtype=float)
    sizes = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        weights = np.where(counts > 0, counts / sizes, 0.0)
        return np.where(counts > 0, weights**2 * (1.0 + 1.0 / counts), 0.0)


def effective_df(share_sum, share_square_sum):
    """Satterthwaite / Bell–McCaffrey degrees of freedom (Σq)² / Σq² − 1.

    With equally long dialogues q is constant and this is G − 1, the paired t-test's df; very
    unequal dialogues carry fewer effective clusters, and the t quantile widens accordingly
    (without this the test rejects ~6–7% of true nulls at 10 dialogues of 2–8 turns).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.maximum(share_sum**2 / share_square_sum - 1.0, 1.0)


def _jackknife_variance(deviation_sum, deviation_square_sum, g, scale=None):
    """(G − 1)/G × Σ (d_g − d̄)² from Σ d and Σ d², vectorised; NaN for G < 2.

    ``scale`` (default Σ d²) is the size of the terms the sums were built from: a centred sum
    below 1e-10 of it is rounding noise and counts as exactly 0 (no variation at all).
    """
    scale = deviation_square_sum if scale is None else scale
    with np.errstate(invalid="ignore", divide="ignore"):
        centred = deviation_square_sum - deviation_sum**2 / g
        centred = np.where(centred <= 1e-10 * scale, 0.0, centred)
        variance = (g - 1) / g * centred
    return np.where(g >= 2, variance, np.nan)


def is_bounded(bounds) -> bool:
    """Whether a metric range (low, high) is finite on both sides."""
    return (bounds is not None and bounds[0] is not None and bounds[1] is not None
            and np.isfinite(bounds[0]) and np.isfinite(bounds[1]) and bounds[1] > bounds[0])


def mean_method(bounds) -> str:
    """The method of a mean's interval for a metric of range BOUNDS."""
    return BOUNDED_MEAN_METHOD if is_bounded(bounds) else MEAN_METHOD


def mean_intervals(sums, counts, *, confidence: float = DEFAULT_CONFIDENCE, bounds=None):
    """Per system: mean, CI low, CI high and the number of dialogues (vectorised over rows).

    ``bounds`` = (low, high) of the metric's range (None for unbounded sides). Bounded on both
    sides: the logit-scale interval (``logit_intervals``), inside the range by construction.
    One side only: the interval is cut to it.
    """
    means, deviations, present = leave_one_out_deviations(sums, counts)
    g = present.sum(axis=1).astype(float)
    variance = _jackknife_variance(deviations.sum(axis=1), (deviations**2).sum(axis=1), g)
    shares = variance_shares(counts)
    df = effective_df(shares.sum(axis=1), (shares**2).sum(axis=1))
    with np.errstate(invalid="ignore"):
        quantile = t_quantile(df, confidence)
        half = quantile * np.sqrt(variance)
    if is_bounded(bounds):
        low, high = logit_intervals(means, variance, quantile, g, bounds, confidence)
        return means, low, high, g.astype(int)
    low, high = means - half, means + half
    if bounds is not None:
        floor, ceiling = bounds
        if floor is not None:
            low = np.maximum(low, floor)
        if ceiling is not None:
            high = np.minimum(high, ceiling)
    return means, low, high, g.astype(int)


def logit_intervals(means, variance, quantile, g, bounds, confidence=DEFAULT_CONFIDENCE):
    """The jackknife-t interval on the logit scale of the range [a, b] (delta method).

    x = (mean − a)/(b − a); SE_logit = SE / ((b − a) x (1 − x)); the interval is
    a + (b − a) · expit(logit(x) ± t × SE_logit). A mean on a bound (every unit there) has no
    logit: its interval is the Clopper–Pearson interval of G successes in G dialogues,
    [a + (b − a)((1 − confidence)/2)^(1/G), b] (and its mirror at a). NaN for G < 2.
    """
    floor, ceiling = float(bounds[0]), float(bounds[1])
    width = ceiling - floor
    x = (np.asarray(means, dtype=float) - floor) / width
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        centre = special.logit(x)
        spread = quantile * np.sqrt(variance) / (width * x * (1.0 - x))
        low = floor + width * special.expit(centre - spread)
        high = floor + width * special.expit(centre + spread)
        edge = ((1.0 - confidence) / 2.0) ** (1.0 / g)
    at_ceiling, at_floor = x >= 1.0, x <= 0.0
    low = np.where(at_ceiling, floor + width * edge, np.where(at_floor, floor, low))
    high = np.where(at_floor, ceiling - width * edge, np.where(at_ceiling, ceiling, high))
    undefined = (g < 2) | ~np.isfinite(variance)
    return np.where(undefined, np.nan, low), np.where(undefined, np.nan, high)


def pairwise_tests(sums, counts, *, with_df: bool = False):
    """All pairwise differences of unit-weighted means with their jackknife SE and p-values.

    Returns ``(difference, standard_error, dialogues, p_value)``, each (S, S) (and the degrees
    of freedom as a fifth matrix when ``with_df``): ``difference[i, j]`` = mean_j − mean_i,
    computed with the leave-one-out deviations over the dialogues where i or j has units
    (``dialogues[i, j]`` of them, the test's G); df from :func:`effective_df` with the two
    systems' variance shares averaged (G − 1 for equally long dialogues).
    The p-value is two-sided; a difference whose jackknife SE is 0 has p = 0 when it is not 0
    (every dialogue tells the same story) and p = 1 when it is. Vectorised with matrix products.
    """
    means, deviations, present = leave_one_out_deviations(sums, counts)
    # A system with one dialogue has no leave-one-out mean there: no test (p is NaN below).
    single = present.sum(axis=1) < 2
    deviations = np.nan_to_num(deviations, nan=0.0, posinf=0.0, neginf=0.0)
    absent = (~present).astype(float)
    n_clusters = present.shape[1]
    # Over the union of two systems' dialogues U_ij = all − (absent_i ∧ absent_j); deviations
    # are already 0 where a system is absent, so only the cluster count needs the correction.
    union = n_clusters - absent @ absent.T
    squares = (deviations**2).sum(axis=1)
    sum_d = deviations.sum(axis=1)
    # d_ij(g) = dev_j(g) − dev_i(g)
    difference_sum = sum_d[None, :] - sum_d[:, None]
    difference_square_sum = squares[None, :] + squares[:, None] - 2.0 * deviations @ deviations.T
    variance = _jackknife_variance(
        difference_sum, difference_square_sum, union, scale=squares[None, :] + squares[:, None]
    )
    standard_error = np.sqrt(variance)
    difference = means[None, :] - means[:, None]
    shares = variance_shares(counts)
    share_sum = shares.sum(axis=1)
    share_squares = (shares**2).sum(axis=1)
    df = effective_df(
        (share_sum[None, :] + share_sum[:, None]) / 2.0,
        (share_squares[None, :] + share_squares[:, None] + 2.0 * shares @ shares.T) / 4.0,
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(difference) / standard_error
        p_value = 2.0 * stats.t.sf(t, df)
    scale = np.maximum(np.abs(means)[None, :], np.abs(means)[:, None])
    scale = np.where(np.isfinite(scale), np.maximum(scale, 1.0), 1.0)
    degenerate = standard_error == 0
    exact_zero = np.abs(difference) <= 1e-12 * scale
    p_value = np.where(degenerate & exact_zero, 1.0, np.where(degenerate, 0.0, p_value))
    p_value = np.where(union >= 2, p_value, np.nan)
    p_value[single, :] = np.nan
    p_value[:, single] = np.nan
    np.fill_diagonal(p_value, np.nan)
    if with_df:
        return difference, standard_error, union.astype(int), p_value, df
    return difference, standard_error, union.astype(int), p_value


# --- many comparisons ----------------------------------------------------------------------------


def holm_reject(p_values: Sequence[float] | np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """Holm's step-down procedure: which hypotheses are rejected (NaN p-values never are).

    Sorted ascending, p_(k) is rejected while p_(k) ≤ alpha / (m − k + 1) for every k' ≤ k; m
    counts the defined p-values. Controls the family-wise error at ``alpha`` (Holm 1979).
    """
    p = np.asarray(p_values, dtype=float).ravel()
    rejected = np.zeros(p.shape, dtype=bool)
    defined = np.flatnonzero(np.isfinite(p))
    m = len(defined)
    if m == 0:
        return rejected
    order = defined[np.argsort(p[defined], kind="stable")]
    thresholds = alpha / (m - np.arange(m))
    passes = p[order] <= thresholds
    k = m if passes.all() else int(np.argmin(passes))
    rejected[order[:k]] = True
    return rejected


def holm_adjusted(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values (NaN stays NaN): rejected at alpha exactly when ≤ alpha."""
    p = np.asarray(p_values, dtype=float).ravel()
    adjusted = np.full(p.shape, np.nan)
    defined = np.flatnonzero(np.isfinite(p))
    m = len(defined)
    if m:
        order = defined[np.argsort(p[defined], kind="stable")]
        scaled = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
        adjusted[order] = scaled
    return adjusted


def better_from_tests(
    difference: np.ndarray,
    p_value: np.ndarray,
    *,
    higher_is_better: bool = True,
    alpha: float = 0.05,
    correction: str = MULTIPLICITY,
) -> np.ndarray:
    """``better[i, j]`` is True when j is significantly better than i over the whole family.

    The family is every unordered pair of the matrix (its upper triangle); ``correction`` is
    "holm" (family-wise error ≤ alpha) or "none" (each pair at alpha, for two systems).
    """
    p_value = np.asarray(p_value, dtype=float)
    size = p_value.shape[0]
    upper = np.triu_indices(size, k=1)
    pair_p = p_value[upper]
    if correction == "holm":
        rejected_pairs = holm_reject(pair_p, alpha)
    elif correction == "none":
        rejected_pairs = np.isfinite(pair_p) & (pair_p <= alpha)
    else:
        raise ValueError(f"unknown correction {correction!r}")
    rejected = np.zeros((size, size), dtype=bool)
    rejected[upper] = rejected_pairs
    rejected |= rejected.T
    j_higher = np.asarray(difference) > 0
    return rejected & (j_higher if higher_is_better else ~j_higher)


def tie_aware_ranks(better: np.ndarray) -> np.ndarray:
    """Rank = 1 + number of systems significantly better (ties share a rank)."""
    return 1 + np.asarray(better, dtype=bool).sum(axis=1)


def ranked_by_pairwise_tests(estimates: Mapping[str, Estimate],
                             test: Callable[[str, str], Estimate], *, method: str,
                             higher_is_better: bool = True,
                             confidence: float = DEFAULT_CONFIDENCE) -> list[RankedSystem]:
    """Tie-aware ranks of the systems of ESTIMATES: TEST(a, b) estimates a − b with its
    params["p_value"]; a system's rank is 1 + the systems significantly better, Holm over all
    pairs at 1 − CONFIDENCE; its estimate is shown under METHOD. Systems without an estimate
    have no rank. Sorted by rank, then name."""
    names = [name for name, estimate in estimates.items() if estimate.value is not None]
    size = len(names)
    difference = np.zeros((size, size))
    p_value = np.full((size, size), np.nan)
    for i in range(size):
        for j in range(i + 1, size):
            pair = test(names[j], names[i])
            difference[i, j], difference[j, i] = pair.value, -pair.value
            p_value[i, j] = p_value[j, i] = pair.params["p_value"]
    better = better_from_tests(difference, p_value, higher_is_better=higher_is_better,
                               alpha=1.0 - confidence)
    rank = tie_aware_ranks(better)

    def shown(estimate: Estimate) -> Estimate:
        return Estimate(estimate.value, estimate.ci_low, estimate.ci_high, n=estimate.n,
                        method=method, undefined_reason=estimate.undefined_reason,
                        params=estimate.params)
    rows = [RankedSystem(name, shown(estimates[name]), int(rank[i]),
                         tuple(names[j] for j in np.flatnonzero(better[i])))
            for i, name in enumerate(names)]
    rows += [RankedSystem(name, shown(estimate), None)
             for name, estimate in estimates.items() if name not in names]
    return sorted(rows, key=lambda row: (row.rank is None, row.rank or 0, row.system))


# --- records for one mean, one difference, a leaderboard ---------------------------------------


def _finite_rows(values: Sequence[float], clusters: Sequence[Hashable]):
    array = np.asarray(values, dtype=float)
    if len(array) != len(clusters):
        raise ValueError("values and clusters must have the same length")
    keep = np.isfinite(array)
    kept_clusters = [cluster for cluster, ok in zip(clusters, keep, strict=True) if ok]
    return array[keep], kept_clusters


def _tables(rows, distinct):
    """(len(rows), len(distinct)) sums and counts from [(values, clusters), ...]."""
    index = {cluster: position for position, cluster in enumerate(distinct)}
    sums = np.zeros((len(rows), len(distinct)))
    counts = np.zeros((len(rows), len(distinct)))
    for r, (array, kept) in enumerate(rows):
        codes = np.fromiter((index[c] for c in kept), np.int64, len(kept))
        sums[r] = np.bincount(codes, weights=array, minlength=len(distinct))
        counts[r] = np.bincount(codes, minlength=len(distinct))
    return sums, counts


def _params(confidence, **extra):
    return {"confidence": confidence, "interval": "jackknife_t", **extra}


def cluster_mean(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    bounds: tuple[float | None, float | None] | None = None,
) -> Estimate:
    """Mean of unit values with a studentized cluster (jackknife-t) CI over dialogues.

    Missing values (None/NaN) are left out. n counts units and clusters (dialogues); with one
    dialogue the mean has no interval. ``bounds``: the metric's range, to cut the interval to.
    """
    method = mean_method(bounds)
    params = _params(confidence, **({"interval": "jackknife_t_logit"}
                                    if method == BOUNDED_MEAN_METHOD else {}))
    array, kept = _finite_rows(values, clusters)
    if array.size == 0:
        return Estimate.undefined("no unit has a value", method=method, params=params)
    _, distinct = encode_labels(kept)
    sums, counts = _tables([(array, kept)], distinct)
    means, low, high, g = mean_intervals(sums, counts, confidence=confidence, bounds=bounds)
    n = {"units": int(array.size), "clusters": len(distinct)}
    if g[0] < 2:
        params["ci_note"] = "one dialogue: no interval"
    return Estimate(float(means[0]), low[0], high[0], n=n, method=method, params=params)


def paired_cluster_difference(
    values_a: Sequence[float],
    clusters_a: Sequence[Hashable],
    values_b: Sequence[float],
    clusters_b: Sequence[Hashable],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Estimate:
    """mean(A) − mean(B) over the dialogues both systems have values on, with a jackknife-t CI.

    Significant when ``estimate.ci_excludes(0)``, which is the same as ``params["p_value"] <
    1 − confidence``. With the same number of units per dialogue for both systems this is the
    per-dialogue paired t-test.
    """
    return paired_cluster_difference_from_sums(
        *cluster_sums(values_a, clusters_a), *cluster_sums(values_b, clusters_b),
        confidence=confidence)


def cluster_sums(values: Sequence[float], clusters: Sequence[Hashable]
                 ) -> tuple[list, np.ndarray, np.ndarray]:
    """(distinct clusters, per-cluster sum, per-cluster count) of the finite unit values."""
    array, kept = _finite_rows(values, clusters)
    if not kept:
        return [], np.zeros(0), np.zeros(0)
    _, distinct = encode_labels(kept)
    sums, counts = _tables([(array, kept)], distinct)
    return distinct, sums[0], counts[0]


def shared_cluster_sums(
    clusters_a: Sequence[Hashable],
    sums_a: Sequence[float],
    counts_a: Sequence[float],
    clusters_b: Sequence[Hashable],
    sums_b: Sequence[float],
    counts_b: Sequence[float],
) -> tuple[list, np.ndarray, np.ndarray, dict]:
    """The dialogues both systems have values on (sorted), their (2, k) sums and counts (A's
    row, then B's), and the counts `n` of a paired difference. Each system's CLUSTERS must be
    distinct; clusters with a count of 0 are ignored."""
    sides = []
    for clusters, sums, counts in ((clusters_a, sums_a, counts_a), (clusters_b, sums_b, counts_b)):
        counts = np.asarray(counts, dtype=float)
        labels = np.asarray(clusters) if len(clusters) else np.array([], dtype=str)
        sides.append((labels, np.asarray(sums, dtype=float), counts))
    if _same_ascending_labels(sides[0][0], sides[1][0]):
        return _shared_in_place(*sides[0], *sides[1])
    (labels_a, s_a, n_a), (labels_b, s_b, n_b) = [
        (labels[counts > 0], sums[counts > 0], counts[counts > 0])
        for labels, sums, counts in sides]
    if labels_a.dtype.kind in "US" and labels_b.dtype.kind in "US":
        shared, ia, ib = np.intersect1d(labels_a, labels_b, assume_unique=True,
                                        return_indices=True)
        shared = shared.tolist()
    else:  # mixed or object labels: the order encode_labels gives
        position_a = {c: i for i, c in enumerate(labels_a.tolist())}
        position_b = {c: i for i, c in enumerate(labels_b.tolist())}
        _, shared = encode_labels(list(position_a.keys() & position_b.keys())) \
            if position_a.keys() & position_b.keys() else (None, [])
        ia = np.array([position_a[c] for c in shared], dtype=np.int64)
        ib = np.array([position_b[c] for c in shared], dtype=np.int64)
    n = {
        "shared_clusters": len(shared),
        "clusters_only_a": len(labels_a) - len(shared),
        "clusters_only_b": len(labels_b) - len(shared),
        "units_a": int(n_a.sum()),
        "units_b": int(n_b.sum()),
    }
    return shared, np.vstack([s_a[ia], s_b[ib]]), np.vstack([n_a[ia], n_b[ib]]), n


def ascending_string_labels(labels: np.ndarray) -> bool:
    """LABELS are strings in strictly ascending order, as a leaderboard's stored per-dialogue
    table lists its dialogues: then no sort is needed to put them in cluster order."""
    return labels.dtype.kind in "US" and bool(np.all(labels[:-1] < labels[1:]))


def _same_ascending_labels(labels_a: np.ndarray, labels_b: np.ndarray) -> bool:
    """Both systems list the same ascending string labels: then the shared dialogues are found
    in place."""
    return (ascending_string_labels(labels_a) and labels_b.dtype.kind in "US"
            and np.array_equal(labels_a, labels_b))


def _shared_in_place(labels, s_a, n_a, _labels_b, s_b, n_b):
    """`shared_cluster_sums` for the same ascending labels on both sides: the same result as
    intersecting them (sorted shared labels, rows in that order) without sorting per metric
    (a compare page does it for every metric over 10,000 dialogues)."""
    keep_a, keep_b = n_a > 0, n_b > 0
    both = np.flatnonzero(keep_a & keep_b)
    n = {
        "shared_clusters": len(both),
        "clusters_only_a": int(keep_a.sum()) - len(both),
        "clusters_only_b": int(keep_b.sum()) - len(both),
        "units_a": int(n_a[keep_a].sum()),
        "units_b": int(n_b[keep_b].sum()),
    }
    return (labels[both].tolist(), np.vstack([s_a[both], s_b[both]]),
            np.vstack([n_a[both], n_b[both]]), n)


def paired_cluster_difference_from_sums(
    clusters_a: Sequence[Hashable] = (),
    sums_a: Sequence[float] = (),
    counts_a: Sequence[float] = (),
    clusters_b: Sequence[Hashable] = (),
    sums_b: Sequence[float] = (),
    counts_b: Sequence[float] = (),
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    shared: tuple | None = None,
) -> Estimate:
    """`paired_cluster_difference` from each system's per-dialogue sums and counts of its
    finite unit values (all it uses: the delete-one-dialogue jackknife needs nothing else), as
    a run's stored per-dialogue sums hold them. Dialogues with a count of 0 are ignored.
    SHARED: what `shared_cluster_sums` returned for them, when the caller has it already."""
    params = _params(confidence)
    if shared is None:
        shared = shared_cluster_sums(clusters_a, sums_a, counts_a, clusters_b, sums_b, counts_b)
    distinct, sums, counts, n = shared
    if not distinct:
        return Estimate.undefined(
            "the two systems share no dialogue with values",
            method=DIFFERENCE_METHOD,
            n=n,
            params=params,
        )
    difference, se, _, p_value, df = pairwise_tests(sums, counts, with_df=True)
    means = sums.sum(axis=1) / counts.sum(axis=1)
    value = float(means[0] - means[1])
    params.update(mean_a=float(means[0]), mean_b=float(means[1]))
    if len(distinct) < 2:
        params["ci_note"] = "one shared dialogue: no interval"
        return Estimate(value, None, None, n=n, method=DIFFERENCE_METHOD, params=params)
    half = float(t_quantile(df[1, 0], confidence) * se[1, 0])
    params.update(p_value=float(p_value[1, 0]), df=float(df[1, 0]))
    return Estimate(
        value, value - half, value + half, n=n, method=DIFFERENCE_METHOD, params=params
    )


def rank_tables(
    names: Sequence[str],
    sums: np.ndarray,
    counts: np.ndarray,
    *,
    higher_is_better: bool = True,
    confidence: float = DEFAULT_CONFIDENCE,
    correction: str = MULTIPLICITY,
) -> list[RankedSystem]:
    """One metric's leaderboard from (S, G) per-dialogue sums and counts, best first."""
    present = counts.sum(axis=1) > 0
    names = [name for name, ok in zip(names, present, strict=True) if ok]
    sums, counts = sums[present], counts[present]
    means, low, high, g = mean_intervals(sums, counts, confidence=confidence)
    difference, _, _, p_value = pairwise_tests(sums, counts)
    better = better_from_tests(
        difference,
        p_value,
        higher_is_better=higher_is_better,
        alpha=1.0 - confidence,
        correction=correction,
    )
    ranks = tie_aware_ranks(better)
    params = _params(
        confidence,
        higher_is_better=higher_is_better,
        correction=correction,
        pairs=len(names) * (len(names) - 1) // 2,
    )
    rows = []
    for i, name in enumerate(names):
        estimate = Estimate(
            float(means[i]),
            low[i],
            high[i],
            n={"units": int(counts[i].sum()), "clusters": int(g[i])},
            method=MEAN_METHOD,
            params=params,
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


def rank_systems_by_metric(
    values: Mapping[str, Sequence[float]],
    systems: Sequence[Hashable],
    clusters: Sequence[Hashable],
    *,
    higher_is_better: Mapping[str, bool] | bool = True,
    confidence: float = DEFAULT_CONFIDENCE,
    correction: str = MULTIPLICITY,
) -> dict[str, list[RankedSystem]]:
    """Leaderboard means, jackknife-t CIs and Holm tie-aware ranks for many metrics at once.

    ``values[metric][row]``, ``systems[row]`` and ``clusters[row]`` describe one unit (e.g. a system
    turn) in long format; None/NaN means the metric has no value for that unit.
    """
    if len(systems) != len(clusters):
        raise ValueError("systems and clusters must have the same length")
    system_codes, system_names = encode_labels(systems)
    cluster_codes, cluster_names = encode_labels(clusters)
    n_systems, n_clusters = len(system_names), len(cluster_names)
    cell = system_codes * n_clusters + cluster_codes
    size = n_systems * n_clusters
    boards = {}
    for metric, column in values.items():
        column = np.asarray(column, dtype=float)
        if len(column) != len(cell):
            raise ValueError(f"metric {metric!r}: values and systems differ in length")
        finite = np.isfinite(column)
        sums = np.bincount(cell[finite], weights=column[finite], minlength=size)
        counts = np.bincount(cell[finite], minlength=size).astype(float)
        direction = (
            higher_is_better if isinstance(higher_is_better, bool) else higher_is_better[metric]
        )
        boards[metric] = rank_tables(
            system_names,
            sums.reshape(n_systems, n_clusters),
            counts.reshape(n_systems, n_clusters),
            higher_is_better=direction,
            confidence=confidence,
            correction=correction,
        )
    return boards


def rank_systems(
    values: Sequence[float],
    systems: Sequence[Hashable],
    clusters: Sequence[Hashable],
    *,
    higher_is_better: bool = True,
    confidence: float = DEFAULT_CONFIDENCE,
    correction: str = MULTIPLICITY,
) -> list[RankedSystem]:
    """One metric's leaderboard: mean, CI and tie-aware rank per system, best first."""
    return rank_systems_by_metric(
        {"metric": values},
        systems,
        clusters,
        higher_is_better=higher_is_better,
        confidence=confidence,
        correction=correction,
    )["metric"]


# --- any statistic: the delete-one-cluster jackknife -----------------------------------------


def cluster_groups(clusters: Sequence[Hashable] | None, n_units: int) -> list[np.ndarray]:
    """Unit indices per cluster (each unit its own cluster when ``clusters`` is None)."""
    if clusters is None:
        return [np.array([i]) for i in range(n_units)]
    if len(clusters) != n_units:
        raise ValueError("one cluster label per unit is needed")
    codes, distinct = encode_labels(clusters)
    order = np.argsort(codes, kind="stable")
    return np.split(order, np.cumsum(np.bincount(codes, minlength=len(distinct)))[:-1])


def jackknife_leave_outs(statistic, groups: Sequence[np.ndarray], n_units: int) -> np.ndarray:
    """``statistic(indices)`` without each cluster in turn (NaN where it is undefined).

    ``statistic`` may return a number or an array (several statistics on the same leave-outs).
    """
    everything = np.arange(n_units)
    values = []
    for group in groups:
        keep = np.ones(n_units, dtype=bool)
        keep[group] = False
        result = statistic(everything[keep])
        values.append(np.nan if result is None else np.asarray(result, dtype=float))
    return np.array(values, dtype=float)


def jackknife_standard_error(leave_outs: np.ndarray) -> np.ndarray:
    """sqrt((G − 1)/G × Σ (θ_(−g) − θ̄)²) along axis 0, over the defined leave-outs."""
    leave_outs = np.asarray(leave_outs, dtype=float)
    finite = np.isfinite(leave_outs)
    g = finite.sum(axis=0).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = np.where(finite, leave_outs, 0.0).sum(axis=0) / g
        squares = np.where(finite, (leave_outs - centre) ** 2, 0.0).sum(axis=0)
        variance = (g - 1) / g * squares
    return np.where(g >= 2, np.sqrt(variance), np.nan)
