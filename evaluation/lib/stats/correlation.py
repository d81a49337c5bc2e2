"""Metric–human correlation, i.e. evaluating the evaluators (spec: statistics.md "Metric–human
correlation (meta-evaluation)"; metrics.md §F; FACE §5 Tables 1–2 and Figure 4; CoRE §7.1.1–7.1.4;
Trace appendix K.3).

Scores are mappings unit id → number; two mappings are joined on the ids they share, dropping
missing values. Correlations report their p-value (scipy) and n; a correlation is undefined, with
the reason, when fewer than three units are shared or either side is constant.

- ``correlate``: Pearson r, Spearman ρ and Kendall τ_b of two score mappings.
- ``item_level_correlations``: per aspect, pooled over aspects, optionally per subset.
- ``system_level_correlation``: mean per system on both sides, then correlate the systems.
- ``quadratic_weighted_kappa``: QWK between same-scale ratings (CoRE's judge selection).
- ``inter_factor_kendall`` / ``coupling_by_rater``: CoRE's factor-coupling matrices.
- ``sample_efficiency_curve``: system-ranking correlation vs dialogues per system (FACE Fig. 4).
- ``correlation_with_ci`` / ``rank_evaluators``: dialogue-jackknife CIs (Fisher z, t quantile) and
  a metric leaderboard with Holm-corrected tie-aware ranks.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from evaluation.lib.stats.annotators import cohen_kappa
from evaluation.lib.stats.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_SEED, percentile_interval
from evaluation.lib.stats.clustered import (
    MULTIPLICITY,
    better_from_tests,
    cluster_groups,
    jackknife_leave_outs,
    jackknife_standard_error,
    t_quantile,
    tie_aware_ranks,
)
from evaluation.lib.stats.results import Correlation, Estimate, RankedSystem, finite_or_none

METHODS = ("pearson", "spearman", "kendall")
MIN_UNITS = 3
POOLED = "pooled"
# FACE Table 1's "All" column: "the correlations averaged over all aspects", i.e. the mean of the
# per-aspect coefficients. The pooled row (all (aspect, unit) pairs in one correlation) is a
# different number and must not be called FACE's.
ASPECT_MEAN = "mean_over_aspects"
ALL_UNITS = "all"

Scores = Mapping[Hashable, float | None]


def join_on_units(x: Scores, y: Scores) -> tuple[list, np.ndarray, np.ndarray]:
    """The ids both mappings score (finite values only), in ``x``'s order, and both value arrays."""
    keys, xs, ys = [], [], []
    for key, value in x.items():
        other = y.get(key)
        if other is None or value is None:  # the common case (x scores far more units than y)
            continue
        first, second = finite_or_none(value), finite_or_none(other)
        if first is not None and second is not None:
            keys.append(key)
            xs.append(first)
            ys.append(second)
    return keys, np.array(xs, dtype=float), np.array(ys, dtype=float)


def unit_means(ratings_by_unit: Mapping[Hashable, Sequence[float | None]]) -> dict:
    """The human aggregate per unit: mean of its annotators' (non-missing) ratings."""
    means = {}
    for unit, ratings in ratings_by_unit.items():
        values = [v for v in (finite_or_none(r) for r in ratings) if v is not None]
        if values:
            means[unit] = float(np.mean(values))
    return means


def _undefined_reason(x: np.ndarray, y: np.ndarray) -> str | None:
    if len(x) < MIN_UNITS:
        return f"fewer than {MIN_UNITS} shared units"
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return "one side gives every unit the same score (no variance)"
    return None


def correlation_from_arrays(x: np.ndarray, y: np.ndarray, method: str) -> Correlation:
    """One coefficient with its two-sided p-value; ``kendall`` is τ_b."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}")
    reason = _undefined_reason(x, y)
    if reason is not None:
        return Correlation(None, None, len(x), method, undefined_reason=reason)
    if method == "pearson":
        result = stats.pearsonr(x, y)
    elif method == "spearman":
        result = stats.spearmanr(x, y)
    else:
        result = stats.kendalltau(x, y, variant="b")
    return Correlation(result.statistic, result.pvalue, len(x), method)


def correlate(x: Scores, y: Scores, *, methods: Sequence[str] = METHODS) -> dict[str, Correlation]:
    """Pearson, Spearman and Kendall τ_b between two unit → score mappings on shared units."""
    _, xs, ys = join_on_units(x, y)
    return {method: correlation_from_arrays(xs, ys, method) for method in methods}


# --- item level ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CorrelationRow:
    """The correlations of one (aspect, subset) cell; aspect "pooled" joins all aspects."""

    aspect: str
    subset: Hashable
    correlations: dict[str, Correlation] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "aspect": self.aspect,
            "subset": self.subset,
            "correlations": {name: c.to_dict() for name, c in self.correlations.items()},
        }


def item_level_correlations(
    metric: Mapping[str, Scores],
    human: Mapping[str, Scores],
    *,
    subsets: Mapping[Hashable, Hashable] | None = None,
    methods: Sequence[str] = METHODS,
) -> list[CorrelationRow]:
    """Correlation per aspect, pooled over aspects, and the mean over aspects, for all units
    and per subset.

    ``metric[aspect][unit]`` and ``human[aspect][unit]`` (the human side is usually the mean of
    annotators); ``subsets`` maps unit → group (e.g. "ReDial" / "OpenDialKG"). ``POOLED`` joins
    the (aspect, unit) pairs of every aspect both sides have into one correlation;
    ``ASPECT_MEAN`` is FACE's "All" (Table 1): the mean of the defined per-aspect coefficients,
    with n = the number of aspects averaged and no p-value.
    """
    aspects = [aspect for aspect in metric if aspect in human]
    groups: list[Hashable] = [ALL_UNITS]
    if subsets is not None:
        groups += sorted(set(subsets.values()), key=str)
    rows = []
    for group in groups:
        pooled_x: list[float] = []
        pooled_y: list[float] = []
        per_aspect = []
        for aspect in aspects:
            keys, xs, ys = join_on_units(metric[aspect], human[aspect])
            if group != ALL_UNITS:
                keep = np.array([subsets.get(key) == group for key in keys], dtype=bool)
                xs, ys = xs[keep] if len(xs) else xs, ys[keep] if len(ys) else ys
            pooled_x += xs.tolist()
            pooled_y += ys.tolist()
            per_aspect.append(_all_methods(xs, ys, methods))
            rows.append(CorrelationRow(aspect, group, per_aspect[-1]))
        if len(aspects) > 1:
            pooled = _all_methods(np.array(pooled_x), np.array(pooled_y), methods)
            rows.append(CorrelationRow(POOLED, group, pooled))
            rows.append(CorrelationRow(ASPECT_MEAN, group, _mean_over_aspects(per_aspect, methods)))
    return rows


def _mean_over_aspects(per_aspect: Sequence[Mapping[str, Correlation]], methods) -> dict:
    out = {}
    for method in methods:
        values = [row[method].statistic for row in per_aspect if row[method].statistic is not None]
        if not values:
            out[method] = Correlation(None, None, 0, method,
                                      undefined_reason="no aspect has a defined correlation")
            continue
        out[method] = Correlation(
            float(np.mean(values)), None, len(values), method,
            params={"averaged": "per-aspect coefficients (FACE Table 1, 'All')",
                    "aspects": len(values), "aspects_undefined": len(per_aspect) - len(values)},
        )
    return out


def _all_methods(xs, ys, methods) -> dict[str, Correlation]:
    return {method: correlation_from_arrays(xs, ys, method) for method in methods}


# --- system level ---------------------------------------------------------------------------


def system_means(scores: Scores, systems: Mapping[Hashable, Hashable], units=None) -> dict:
    """Mean score per system over ``units`` (default: every scored unit)."""
    totals: dict[Hashable, list[float]] = {}
    for unit in scores if units is None else units:
        value = finite_or_none(scores.get(unit))
        if value is not None:
            totals.setdefault(systems[unit], []).append(value)
    return {system: float(np.mean(values)) for system, values in totals.items()}


def system_level_correlation(
    metric: Scores,
    human: Scores,
    systems: Mapping[Hashable, Hashable],
    *,
    methods: Sequence[str] = ("spearman", "kendall"),
) -> dict[str, Correlation]:
    """Correlation of system means (FACE Table 2, CoRE Fig. 8): n is the number of systems.

    Both means use only the units both sides scored, so neither side averages over units the
    other never saw.
    """
    shared, _, _ = join_on_units(metric, human)
    metric_means = system_means(metric, systems, shared)
    human_means = system_means(human, systems, shared)
    results = correlate(metric_means, human_means, methods=methods)
    return {
        name: Correlation(
            c.statistic,
            c.p_value,
            c.n,
            c.method,
            undefined_reason=c.undefined_reason,
            params={"level": "system", "units": len(shared)},
        )
        for name, c in results.items()
    }


# --- QWK ------------------------------------------------------------------------------------


def quadratic_weighted_kappa(
    rater_a: Sequence | Mapping, rater_b: Sequence | Mapping, *, labels: Sequence
) -> Estimate:
    """Cohen's kappa with quadratic weights (scikit-learn ``cohen_kappa_score``) between two
    raters on one declared scale: the project's only QWK.

    LABELS is every point of the scale, in order (``range(0, 5)`` for CoRE's 0–4 factors),
    whether the raters used it or not. It is required because the weights are squared distances
    between positions in that list: inferred from the data, a 1–5 scale on which nobody said 1
    would weigh a 2-vs-5 disagreement as 1-vs-4, and two studies would not be comparable.
    Sequences are aligned by position, mappings joined on their keys; missing ratings (None)
    are dropped; undefined (value None) with fewer than two pairs or a single label used.
    """
    return cohen_kappa(rater_a, rater_b, weights="quadratic", labels=labels)


# --- inter-factor coupling (CoRE §7.1.1) ----------------------------------------------------


@dataclass(frozen=True)
class FactorMatrix:
    """Kendall τ_b between every pair of factors of one rater type, for a heatmap."""

    factors: list[str]
    values: list[list[float | None]]
    n: list[list[int]]
    mean_abs_off_diagonal: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "factors": list(self.factors),
            "values": [list(row) for row in self.values],
            "n": [list(row) for row in self.n],
            "mean_abs_off_diagonal": self.mean_abs_off_diagonal,
        }


def inter_factor_kendall(scores: Mapping[str, Scores]) -> FactorMatrix:
    """τ_b of factor pairs over the units both factors scored; the diagonal is 1 when defined."""
    factors = list(scores)
    size = len(factors)
    values: list[list[float | None]] = [[None] * size for _ in range(size)]
    counts = [[0] * size for _ in range(size)]
    off_diagonal = []
    for i in range(size):
        for j in range(i, size):
            _, xs, ys = join_on_units(scores[factors[i]], scores[factors[j]])
            result = correlation_from_arrays(xs, ys, "kendall")
            values[i][j] = values[j][i] = result.statistic
            counts[i][j] = counts[j][i] = result.n
            if i != j and result.statistic is not None:
                off_diagonal.append(abs(result.statistic))
    mean = float(np.mean(off_diagonal)) if off_diagonal else None
    return FactorMatrix(factors, values, counts, mean)


def coupling_by_rater(
    scores_by_rater: Mapping[str, Mapping[str, Scores]],
) -> dict[str, FactorMatrix]:
    """``inter_factor_kendall`` for each rater type (humans, each LLM judge)."""
    return {rater: inter_factor_kendall(scores) for rater, scores in scores_by_rater.items()}


# --- sample efficiency (FACE Figure 4) ------------------------------------------------------


@dataclass(frozen=True)
class CurvePoint:
    """Mean system-ranking correlation when each system is scored on ``dialogues_per_system``."""

    dialogues_per_system: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    valid_repeats: int
    n_repeats: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def sample_efficiency_curve(
    metric: Scores,
    human: Scores,
    systems: Mapping[Hashable, Hashable],
    *,
    sizes: Sequence[int] = (1, 2, 3, 5, 10, 20),
    method: str = "spearman",
    n_repeats: int = 200,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[CurvePoint]:
    """System-ranking correlation as a function of dialogues per system.

    Units are dialogues. The reference ranking is the human mean per system over all human-rated
    dialogues; for each size k and repeat, k dialogues per system are drawn without replacement
    (all of them if a system has fewer) and the metric's system means on that draw are correlated
    with the reference. The point is the mean over repeats, with a percentile interval.
    """
    reference = system_means(human, systems)
    by_system: dict[Hashable, list[float]] = {}
    for unit, value in metric.items():
        value = finite_or_none(value)
        if value is not None and systems.get(unit) in reference:
            by_system.setdefault(systems[unit], []).append(value)
    names = sorted(by_system, key=str)
    pools = [np.array(by_system[name]) for name in names]
    target = np.array([reference[name] for name in names])
    rng = np.random.default_rng(seed)
    points = []
    for size in sizes:
        means = np.column_stack([_draw_means(rng, pool, size, n_repeats) for pool in pools]
                                ) if pools else np.empty((n_repeats, 0))
        statistics = rowwise_correlation(means, target, method)
        samples = [float(value) for value in statistics if np.isfinite(value)]
        low, high = percentile_interval(samples, confidence)
        mean = float(np.mean(samples)) if samples else None
        points.append(CurvePoint(int(size), mean, low, high, len(samples), n_repeats))
    return points


def _draw_means(rng: np.random.Generator, pool: np.ndarray, size: int, repeats: int
                ) -> np.ndarray:
    """REPEATS means of SIZE values drawn from POOL without replacement (all if it is smaller)."""
    if size >= len(pool):
        return np.full(repeats, pool.mean())
    drawn = np.argsort(rng.random((repeats, len(pool))), axis=1)[:, :size]
    return pool[drawn].mean(axis=1)


def rowwise_correlation(matrix: np.ndarray, target: np.ndarray, method: str) -> np.ndarray:
    """The coefficient of every row of MATRIX with TARGET (NaN where undefined: fewer than
    MIN_UNITS columns, or a constant row or target); what `correlation_from_arrays` gives row by
    row, without a Python loop for Pearson and Spearman."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}")
    rows, columns = matrix.shape
    if columns < MIN_UNITS:
        return np.full(rows, np.nan)
    if method == "kendall":
        return np.array([value if (value := correlation_from_arrays(row, target, method)
                                   .statistic) is not None else np.nan for row in matrix])
    constant = (np.ptp(matrix, axis=1) == 0) | (np.ptp(target) == 0)
    if method == "spearman":
        matrix, target = stats.rankdata(matrix, axis=1), stats.rankdata(target)
    x = matrix - matrix.mean(axis=1, keepdims=True)
    y = target - target.mean()
    with np.errstate(invalid="ignore", divide="ignore"):  # einsum: no BLAS threads
        values = np.einsum("ru,u->r", x, y) / np.sqrt((x * x).sum(axis=1) * (y * y).sum())
    values[constant] = np.nan
    return np.clip(values, -1.0, 1.0)


def rowwise_leave_outs(matrix: np.ndarray, target: np.ndarray, group_of: np.ndarray,
                       n_groups: int, method: str, *, chunk: int = 2_000_000) -> np.ndarray:
    """`rowwise_correlation(matrix[:, kept], target[kept])` with each group of columns left out
    in turn (GROUP_OF: each column's group, 0 … N_GROUPS − 1; a group may have no column here),
    for Pearson and Spearman: one row per group, one column per row of MATRIX. No loop over the
    groups: a leave-out's sums are over the kept columns of whole arrays, and its ranks are the
    whole's minus, per value, the left-out values below it and half of those equal to it
    (average ranks). Spearman's sums are of half-integers, hence exact; Pearson's differ from
    the loop's in the last bits. CHUNK bounds the size of each groups × columns array."""
    if method not in ("pearson", "spearman"):
        raise ValueError("rowwise_leave_outs: pearson or spearman")
    rows, columns = matrix.shape
    out = np.full((n_groups, rows), np.nan)
    if rows == 0 or columns == 0:
        return out
    group_of = np.asarray(group_of, dtype=np.intp)
    kept = columns - np.bincount(group_of, minlength=n_groups)
    step = max(1, chunk // columns)
    for start in range(0, n_groups, step):
        part = slice(start, min(start + step, n_groups))
        left = group_of[None, :] == np.arange(part.start, part.stop)[:, None]  # chunk x columns
        keep = (~left).astype(float)
        n = kept[part]
        y = _centred_kept(target, left, keep, n, method)
        yy = np.einsum("gi,gi->g", y, y)
        undefined = (n < MIN_UNITS) | _constant_when_left_out(target, group_of, part, kept)
        for r in range(rows):
            x = _centred_kept(matrix[r], left, keep, n, method)
            with np.errstate(invalid="ignore", divide="ignore"):
                values = np.einsum("gi,gi->g", x, y) / np.sqrt(np.einsum("gi,gi->g", x, x) * yy)
            blank = undefined | _constant_when_left_out(matrix[r], group_of, part, kept)
            out[part, r] = np.where(blank, np.nan, np.clip(values, -1.0, 1.0))
    return out


def _centred_kept(values: np.ndarray, left: np.ndarray, keep: np.ndarray, n: np.ndarray,
                  method: str) -> np.ndarray:
    """Per leave-out (rows of LEFT, True where a column is left out): the kept values (Pearson)
    or their average ranks among the kept columns (Spearman), minus their mean; 0 where left
    out."""
    if method == "pearson":
        centred = values - values.mean()
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.einsum("gi,i->g", keep, centred) / n  # einsum: no BLAS threads
        return (centred[None, :] - means[:, None]) * keep
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    below = np.searchsorted(sorted_values, values, side="left")
    upto = np.searchsorted(sorted_values, values, side="right")
    # the left-out values up to each sorted position; a kept value's rank drops by those below
    # it and by half of those equal to it: rank − (below + upto) / 2 in these counts
    counts = np.zeros((left.shape[0], len(values) + 1), dtype=np.int32)
    np.cumsum(left[:, order], axis=1, out=counts[:, 1:])
    ranks = (below + upto + 1) / 2.0  # average ranks of the whole
    shifted = ranks[None, :] - (counts[:, below] + counts[:, upto]) / 2.0
    shifted -= ((n + 1) / 2.0)[:, None]  # the mean of the ranks 1 … n
    shifted *= keep
    return shifted


def _constant_when_left_out(values: np.ndarray, group_of: np.ndarray, part: slice,
                            kept: np.ndarray) -> np.ndarray:
    """Per group of PART: whether the values kept without it are all equal (ptp 0), exactly:
    some value must then fill every kept column."""
    _, codes, counts = np.unique(values, return_inverse=True, return_counts=True)
    constant = np.zeros(part.stop - part.start, dtype=bool)
    for code in np.flatnonzero(counts >= MIN_UNITS):
        mine = np.bincount(group_of[codes == code], minlength=len(kept))
        constant |= (counts[code] - mine[part]) == kept[part]
    return constant


# --- bootstrap CIs and the metric leaderboard ----------------------------------------------


def _fast_statistic(method: str):
    """A cheap coefficient for bootstrap resamples (None where undefined)."""

    def pearson(x: np.ndarray, y: np.ndarray) -> float | None:
        if len(x) < MIN_UNITS or np.ptp(x) == 0 or np.ptp(y) == 0:
            return None
        return float(np.corrcoef(x, y)[0, 1])

    def spearman(x: np.ndarray, y: np.ndarray) -> float | None:
        return pearson(stats.rankdata(x), stats.rankdata(y))

    def kendall(x: np.ndarray, y: np.ndarray) -> float | None:
        if len(x) < MIN_UNITS or np.ptp(x) == 0 or np.ptp(y) == 0:
            return None
        return float(stats.kendalltau(x, y, variant="b").statistic)

    return {"pearson": pearson, "spearman": spearman, "kendall": kendall}[method]


def fisher_z(r: np.ndarray | float) -> np.ndarray:
    """atanh(r), with |r| kept just below 1 so a perfect correlation stays finite."""
    return np.arctanh(np.clip(np.asarray(r, dtype=float), -0.999999, 0.999999))


def _clusters_for(keys: Sequence[Hashable], clusters: Mapping[Hashable, Hashable] | None):
    return [clusters[key] for key in keys] if clusters is not None else None


def correlation_with_ci(
    x: Scores,
    y: Scores,
    method: str = "spearman",
    *,
    clusters: Mapping[Hashable, Hashable] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Correlation:
    """A correlation with a studentized cluster CI over the shared units' dialogues.

    The coefficient is recomputed without each cluster (dialogue; each unit is its own cluster
    when ``clusters`` is None) in turn; the jackknife standard error of Fisher's z = atanh(r) and
    Student's t with G − 1 df give the interval on the z scale, mapped back with tanh. Turns of one
    dialogue are never treated as independent. Leave-outs where r is undefined are skipped.
    """
    keys, xs, ys = join_on_units(x, y)
    point = correlation_from_arrays(xs, ys, method)
    if point.statistic is None:
        return point
    statistic = _fast_statistic(method)
    groups = cluster_groups(_clusters_for(keys, clusters), len(keys))
    leave_outs = jackknife_leave_outs(lambda idx: statistic(xs[idx], ys[idx]), groups, len(keys))
    se = float(jackknife_standard_error(fisher_z(leave_outs)))
    valid = int(np.isfinite(leave_outs).sum())
    low = high = None
    if np.isfinite(se) and valid >= 2:
        half = float(t_quantile(len(groups) - 1, confidence)) * se
        z = float(fisher_z(point.statistic))
        low, high = float(np.tanh(z - half)), float(np.tanh(z + half))
    return Correlation(
        point.statistic,
        point.p_value,
        point.n,
        method,
        low,
        high,
        params={
            "interval": "jackknife_fisher_z_t",
            "clusters": len(groups),
            "confidence": confidence,
            "valid_leave_outs": valid,
        },
    )


def rank_evaluators(
    evaluators: Mapping[str, Scores],
    human: Scores,
    *,
    method: str = "spearman",
    clusters: Mapping[Hashable, Hashable] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    correction: str = MULTIPLICITY,
) -> list[RankedSystem]:
    """Metric leaderboard: evaluators ranked by correlation with ``human``, with CIs.

    ``clusters`` maps each human-scored unit to its dialogue (each unit is its own cluster when
    None). Every evaluator is recomputed without each dialogue in turn (on the units it scored),
    which gives jackknife standard errors of Fisher's z for each correlation (its interval) and
    of every pairwise difference r_e − r_f; two-sided t-tests (G − 1 df) with Holm's correction
    over all pairs decide "significantly higher", and an evaluator's rank is 1 + the number of
    evaluators significantly higher. An evaluator whose correlation is undefined gets no rank
    (None) and no interval, and is listed last.
    """
    units = [unit for unit, value in human.items() if finite_or_none(value) is not None]
    target = np.array([float(human[unit]) for unit in units])
    names = list(evaluators)
    columns = np.array(
        [[_as_float(evaluators[name].get(unit)) for unit in units] for name in names]
    ).reshape(len(names), len(units))
    statistic = _fast_statistic(method)
    # Each evaluator on the units it scored. Evaluators that scored the same units go together:
    # Pearson and Spearman all at once (rowwise_leave_outs), Kendall one by one.
    scored = np.isfinite(columns)
    blocks: dict[bytes, list[int]] = {}
    for e in range(len(names)):
        blocks.setdefault(scored[e].tobytes(), []).append(e)
    together = [(scored[members[0]], np.array(members)) for members in blocks.values()]

    def correlations(indices: np.ndarray) -> np.ndarray:  # Kendall's, one leave-out
        row = np.full(len(names), np.nan)
        for mask, members in together:
            kept = indices[mask[indices]]
            for e in members:
                value = statistic(columns[e, kept], target[kept])
                row[e] = np.nan if value is None else value
        return row

    groups = cluster_groups(_clusters_for(units, clusters), len(units))
    if method == "kendall":
        leave_outs = jackknife_leave_outs(correlations, groups, len(units)).reshape(
            len(groups), len(names))
    else:  # every leave-one-dialogue-out at once, block by block (rowwise_leave_outs)
        group_of = np.empty(len(units), dtype=np.intp)
        for g, members in enumerate(groups):
            group_of[members] = g
        leave_outs = np.full((len(groups), len(names)), np.nan)
        for mask, members in together:
            leave_outs[:, members] = rowwise_leave_outs(
                columns[members][:, mask], target[mask], group_of[mask], len(groups), method)
    points = [correlate(evaluators[name], human, methods=(method,))[method] for name in names]
    defined = [e for e, point in enumerate(points) if point.statistic is not None]
    # Differences are tested on r itself: it is bounded, while atanh(r) jumps to ±infinity
    # when a leave-out happens to be perfectly correlated (small studies, ties).
    r_points = np.array([points[e].statistic for e in defined], dtype=float)
    r_leave = leave_outs[:, defined]
    size = len(defined)
    difference = r_points[None, :] - r_points[:, None]  # [i, j] = r_j − r_i
    p_value = np.full((size, size), np.nan)
    df = max(len(groups) - 1, 1)
    for i in range(size):
        for j in range(i + 1, size):
            se = float(jackknife_standard_error(r_leave[:, j] - r_leave[:, i]))
            if np.isfinite(se) and se > 0:
                p = 2.0 * stats.t.sf(abs(difference[i, j]) / se, df)
            elif np.isfinite(se):
                p = 1.0 if difference[i, j] == 0 else 0.0
            else:
                p = np.nan
            p_value[i, j] = p_value[j, i] = p
    better = better_from_tests(
        difference, p_value, alpha=1.0 - confidence, correction=correction
    )
    ranks = dict(zip(defined, tie_aware_ranks(better).tolist(), strict=True))
    quantile = float(t_quantile(df, confidence))
    rows = []
    for e, (name, point) in enumerate(zip(names, points, strict=True)):
        low = high = None
        if e in ranks:
            se = float(jackknife_standard_error(fisher_z(leave_outs[:, e])))
            if np.isfinite(se):
                z = float(fisher_z(point.statistic))
                low, high = np.tanh(z - quantile * se), np.tanh(z + quantile * se)
        estimate = Estimate(
            point.statistic,
            low,
            high,
            n={"units": point.n, "clusters": len(groups)},
            method="evaluator_correlation",
            undefined_reason=point.undefined_reason,
            params={
                "correlation": method,
                "p_value": point.p_value,
                "interval": "jackknife_fisher_z_t",
                "correction": correction,
                "pairs": size * (size - 1) // 2,
                "confidence": confidence,
            },
        )
        winners = ()
        if e in ranks:
            position = defined.index(e)
            winners = tuple(names[defined[j]] for j in np.flatnonzero(better[position]))
        rows.append(RankedSystem(name, estimate, ranks.get(e), winners))
    rows.sort(key=lambda row: (row.rank is None, row.rank or 0,
                               _descending(row.estimate.value), row.system))
    return rows


def _descending(value: float | None) -> float:
    return np.inf if value is None else -value


def _as_float(value: Any) -> float:
    number = finite_or_none(value)
    return np.nan if number is None else number
